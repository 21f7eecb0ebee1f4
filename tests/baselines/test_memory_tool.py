"""Memory Tool (baselines/memory_tool.py) with scripted replies (not a model's): the agent's
compress_history calls are applied, refused with a reason, undone after read-only requests; the
budget line is visible; both call protocols; the window guard; the LoCoEval runner path."""

from __future__ import annotations

import dataclasses
import re

import pytest

from baselines.memory_tool import MemoryTool, parse_span
from reconmem.platform.context import Turn

LONG = "We need the cache to evict the least recently used entry once it holds more than max_size items. " * 3


def _turns(n: int) -> list[Turn]:
    return [Turn(index=i, user=f"Turn {i}: {LONG}", assistant=f"Understood, point {i} noted.") for i in range(n)]


def _method(make_session, replies, *, n_turns: int = 5, fc: bool = True, **kw) -> MemoryTool:
    method = MemoryTool(**kw)
    method.start(make_session(replies, fc=fc))
    for t in _turns(n_turns):
        method.observe(t)
    return method


def _call(span, summary="The user wants an LRU cache with max_size eviction.", cid="c1"):
    return {"text": "", "tool_calls": [{"id": cid, "name": "compress_history", "arguments": {"span": span, "summary": summary}}]}


def test_span_forms():
    assert parse_span("3-7") == parse_span("3..7") == parse_span([3, 7]) == parse_span({"start": 3, "end": 7}) == (3, 7)
    assert parse_span(5) == parse_span("5") == (5, 5)
    for bad in ("7-3", "turns three", True, None, [1]):
        with pytest.raises(ValueError):
            parse_span(bad)


def test_function_calling_compression_is_applied_and_answered(make_session):
    method = _method(make_session, [_call("0-2"), "Here is the answer."])
    reply = method.respond("Now add a ttl option.")
    assert reply.text == "Here is the answer."
    assert [(e.start, e.end, e.compressed) for e in method.entries] == [(0, 2, True), (3, 3, False), (4, 4, False)]
    (event,) = method.compressions
    assert event["span"] == [0, 2] and event["tokens_after"] < event["tokens_before"] and event["after_turn"] == 4
    assert reply.context.meta["compressions"][0]["span"] == [0, 2] and reply.meta["compressions"] == 1
    calls = method.session.llm.calls
    assert [c["purpose"] for c in calls] == ["turn_generation"] * 2
    assert calls[0]["params"]["tools"][0]["function"]["name"] == "compress_history"
    second = calls[1]["messages"]
    text = "\n".join(str(m.get("content")) for m in second)
    assert "Turn 0:" not in text and "Turn 3:" in text and "LRU cache with max_size" in text  # the span is the summary
    assert second[-1]["role"] == "tool" and "turns 0-2 are now your summary" in second[-1]["content"]
    assert method.state()["compressions"] == method.compressions


def test_text_protocol_block(make_session):
    block = '```compress_history\n{"span": "1-3", "summary": "LRU cache, max_size eviction."}\n```'
    method = _method(make_session, [block, "Done."], fc=False)
    reply = method.respond("Next?")
    assert reply.text == "Done." and [e.label() for e in method.entries] == ["0", "1-3", "4"]
    calls = method.session.llm.calls
    assert "tools" not in calls[0]["params"] or not calls[0]["params"]["tools"]
    assert "```compress_history" in calls[0]["messages"][0]["content"]  # the protocol is explained
    assert calls[1]["messages"][-1]["content"].startswith("[compress_history result] turns 1-3")


def test_budget_line_is_visible(make_session):
    method = _method(make_session, ["ok"])
    method.respond("What next?")
    last = method.session.llm.calls[0]["messages"][-1]["content"]
    m = re.search(r"\[context budget: ([\d,]+) of 32,768 tokens \((\d+)%\) in this request; oldest turns are dropped beyond [\d,]+; "
                  r"history: 5 turns, 0 compressed spans\]$", last)
    assert m and last.startswith("What next?")
    used = int(m.group(1).replace(",", ""))
    assert abs(used - method.session.llm.count_tokens(method.session.llm.calls[0]["messages"])) <= 3


@pytest.mark.parametrize("span,summary,reason", [
    ("7-9", "x", "covers no turn"),
    ("2-3", "", "summary is empty"),
    ("0-1", LONG * 3, "not shorter"),
    ("soon", "x", "span must look like"),
])
def test_refused_calls_tell_the_agent_why(make_session, span, summary, reason):
    method = _method(make_session, [_call(span, summary), "Answer."])
    reply = method.respond("Go on.")
    assert reply.text == "Answer." and not method.compressions and len(method.entries) == 5
    assert reason in method.refused[0]["reason"]
    assert reason in method.session.llm.calls[1]["messages"][-1]["content"]
    assert reply.context.meta["steps"][0]["refused"]


def test_a_span_may_not_cut_a_summary(make_session):
    method = _method(make_session, [_call("0-2"), "a", _call("2-3"), "b", _call("0-3", "LRU cache."), "c"])
    method.respond("q1")
    method.respond("q2")
    assert "cuts the compressed span 0-2" in method.refused[0]["reason"]
    method.respond("q3")  # whole earlier summaries can be folded again
    assert [e.label() for e in method.entries] == ["0-3", "4"] and len(method.compressions) == 2


def test_read_only_request_leaves_memory_unchanged(make_session):
    method = _method(make_session, [_call("0-3"), "def f(): pass"])
    before = method.state()
    reply = method.respond("Implement it.", purpose="task_generation", read_only=True)
    assert reply.meta["compressions"] == 1 and reply.context.meta["compressions"]
    assert method.state() == before


def test_last_step_offers_no_tool(make_session):
    method = _method(make_session, [_call("0-1"), _call("2-3"), {"text": "final", "tool_calls": [
        {"id": "x", "name": "compress_history", "arguments": {"span": "0-4", "summary": "s"}}]}], max_steps=3)
    reply = method.respond("q")
    calls = method.session.llm.calls
    assert len(calls) == 3 and not calls[2]["params"].get("tools")
    assert "not available in this step" in calls[2]["messages"][0]["content"]
    assert reply.text == "final" and len(method.compressions) == 2


def test_window_guard_drops_oldest_turns(make_session):
    method = MemoryTool()
    method.start(make_session(["ok"], context_window=1200, max_output_tokens=200))
    for t in _turns(12):
        method.observe(t)
    ctx = method.respond("q").context
    assert ctx.meta["trimmed_history"] > 0 and ctx.meta["tokens_after"] <= ctx.meta["prompt_budget"]
    assert ctx.meta["budget_used"] > 1200  # the line shows the untrimmed size, so the agent can tell


def test_scripted_agent_through_the_runner(make_session, run_locoeval_sample, tmp_path):
    """The scripted agent (memory_tool_script) chooses compressions during the LoCoEval runner's turns."""
    import json

    import memory_tool_script
    from benchmarks.locoeval.loader import load_samples

    sample = next(s for s in load_samples("package:benchmarks.locoeval/demo/samples.jsonl") if s.id == "boltons-time-dict-single")
    sample = dataclasses.replace(sample, outline=sample.outline[:10])
    llm = make_session(memory_tool_script.reply).llm
    cm = MemoryTool()
    result, out = run_locoeval_sample(sample, cm, llm, tmp_path, turn_max_tokens=64, task_max_tokens=64)
    assert result["status"] == "ok"
    memory = json.loads(json.dumps(cm.state()))  # memory.json: the run loop writes this state
    assert memory["compressions"] and all(c["tokens_after"] < c["tokens_before"] for c in memory["compressions"])
    rows = [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]
    assert any(r["context"]["meta"]["compressions"] for r in rows if r["phase"] == "prep")
    assert {e["purpose"] for e in llm.ledger.events} <= {"turn_generation", "task_generation"}
