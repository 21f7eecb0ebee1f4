"""MemGPT: memory pressure at 75%, overflow summarisation keeping the last 3 messages, the agent
loop with function calling and with the JSON protocol. Replies are scripted (ScriptedLLM)."""

from __future__ import annotations

import json

from baselines.memgpt import MemGPT
from reconmem.platform.context import Turn

ALERT = "[System alert] Memory pressure"


def _big_function(index, low=1400, high=2000):
    return next(p for p, e in index.entities.items()
                if e.kind == "function" and e.file == "boltons/cacheutils.py" and low < len(index.source(p)) < high)


def _base_tokens(make_session, fc=True):
    probe = make_session(fc=fc)
    cm = MemGPT()
    cm.start(probe)
    return probe.llm.count_tokens(cm._clean(cm._step_messages()))


def test_memgpt_pressure_warning_then_overflow_summary_keeps_last_three(make_session, boltons_index):
    summaries = []

    def reply(messages, purpose):
        assert purpose == "memory_summarisation"
        summaries.append(messages[-1]["content"])
        return "We discussed boltons cacheutils and strutils helpers."

    window = _base_tokens(make_session) + 800
    session = make_session(reply, context_window=window, max_output_tokens=100)
    cm = MemGPT(pressure_fraction=0.75, keep_last_messages=3)
    cm.start(session)
    count = session.llm.count_tokens

    small = ["boltons/strutils.py/slugify", "boltons/strutils.py/camel2under", "boltons/iterutils.py/chunked",
             "boltons/fileutils.py/mkdir_p", "boltons/strutils.py/under2camel", "boltons/iterutils.py/pairwise",
             "boltons/iterutils.py/first", "boltons/iterutils.py/one", "boltons/strutils.py/a10n"]
    i = 0
    while cm.pressure_warnings == 0:
        before = count(cm._clean(cm._step_messages()))
        assert before <= 0.75 * window  # no alert while under the threshold
        name = small[i].rsplit("/", 1)[-1]
        cm.observe(Turn(i, f"What does {name} do?", f"`{name}` is short: {boltons_index.source(small[i])[:200]}"))
        i += 1
    alert = cm.buffer[-1]
    assert alert["content"].startswith(ALERT)
    assert count(cm._clean(cm._step_messages()[:-1])) > 0.75 * window  # crossed 75% with the last turn
    assert not summaries

    big = _big_function(boltons_index)
    before = [dict(m) for m in cm.buffer]
    cm.observe(Turn(i, "Show me the whole function, please.", boltons_index.source(big)))
    assert len(summaries) == 1  # overflow -> one summarisation call
    assert f"user: What does slugify do?" in summaries[0]  # the oldest messages were summarised
    assert cm.buffer[0].get("_summary") and "We discussed boltons" in cm.buffer[0]["content"]
    expected_kept = [before[-1]["content"], "Show me the whole function, please.", boltons_index.source(big)]
    assert [m["content"] for m in cm.buffer[1:4]] == expected_kept  # exactly the last 3 messages survived
    assert cm.summaries[0]["kept_messages"] == 3
    assert count(cm._clean(cm._step_messages())) <= window - 100
    assert len(cm.log) == 2 * (i + 1)  # recall memory still has every message
    assert session.llm.ledger.totals()["memory_summarisation"]["calls"] == 1
    json.dumps(cm.state())


def test_memgpt_function_calling_loop_with_pressure_alert_and_heartbeat(make_session, boltons_index):
    window = _base_tokens(make_session) + 800
    replies = [
        {"text": "The user prefers type hints.", "tool_calls": [
            {"name": "core_memory_append", "arguments": {"label": "human", "content": "Prefers type hints.", "request_heartbeat": True}}]},
        {"text": "", "tool_calls": [{"name": "send_message", "arguments": {"message": "Use LRI(max_size=128)."}}]},
    ]

    def reply_for(messages, purpose):
        return "Summary of the LRI.get questions." if purpose == "memory_summarisation" else replies.pop(0)

    session = make_session(reply_for, context_window=window, max_output_tokens=100)
    cm = MemGPT()
    cm.start(session)
    src = boltons_index.source("boltons/cacheutils.py/LRI/get")
    for i in range(40):
        if cm.pressure_warnings:
            break
        cm.observe(Turn(i, f"Question {i} about LRI.get?", src))
    assert cm.pressure_warnings == 1
    reply = cm.respond("How big should the cache be? I like type hints.", purpose="turn_generation")
    assert reply.text == "Use LRI(max_size=128)."
    assert [s["calls"] for s in reply.meta["steps"]] == [["core_memory_append"], ["send_message"]]
    first, second = [c for c in session.llm.calls if c["purpose"] == "turn_generation"]
    assert any(str(m["content"]).startswith(ALERT) for m in first["messages"])  # the warning reached the agent
    assert {t["function"]["name"] for t in first["params"]["tools"]} >= {"send_message", "conversation_search",
                                                                       "archival_memory_search"}
    assert second["messages"][-1]["role"] == "tool"  # the function result came back with the heartbeat
    assert "Prefers type hints." in cm.core["human"]
    assert "Prefers type hints." in second["messages"][0]["content"]  # core memory is in the main context
    totals = session.llm.ledger.totals()
    assert totals["turn_generation"]["calls"] == 2 and set(totals) <= {"turn_generation", "memory_summarisation"}
    n_log = len(cm.log)
    cm.observe(Turn(99, "How big should the cache be? I like type hints.", reply.text))
    assert len(cm.log) == n_log  # the exchange was already in memory


def test_memgpt_json_protocol_archival_and_recall(make_session):
    replies = [
        json.dumps({"inner_thoughts": "save it", "function": "archival_memory_insert",
                    "arguments": {"content": "The project caps LRI caches at 128 entries."}, "request_heartbeat": True}),
        json.dumps({"inner_thoughts": "check", "function": "archival_memory_search",
                    "arguments": {"query": "cache size limit"}, "request_heartbeat": True}),
        json.dumps({"inner_thoughts": "look back", "function": "conversation_search",
                    "arguments": {"query": "slugify"}, "request_heartbeat": True}),
        json.dumps({"inner_thoughts": "answer", "function": "send_message", "arguments": {"message": "128 entries."}}),
    ]
    session = make_session(replies, fc=False)
    cm = MemGPT(archival_page_size=5)
    cm.start(session)
    cm.observe(Turn(0, "Use slugify with '-' for URLs.", "Noted."))
    reply = cm.respond("What cache size did we choose?", purpose="task_generation")
    assert reply.text == "128 entries."
    assert cm.archival[0]["text"].startswith("The project caps")
    results = [m["content"] for m in cm.buffer if str(m["content"]).startswith("[Function return]")]
    assert "128 entries" in results[1] and "Use slugify" in results[2]
    assert "tools" not in session.llm.calls[0]["params"] or session.llm.calls[0]["params"]["tools"] is None
    assert "Answer with exactly one JSON object" in session.llm.calls[0]["messages"][0]["content"]
    assert session.llm.ledger.totals()["task_generation"]["calls"] == 4
    assert [s["input_tokens"] > 0 for s in reply.meta["steps"]] == [True] * 4


def test_memgpt_heartbeat_cap_and_read_only(make_session):
    search = json.dumps({"function": "archival_memory_search", "arguments": {"query": "x"}, "request_heartbeat": True,
                         "inner_thoughts": "still searching"})
    session = make_session([search] * 3, fc=False)
    cm = MemGPT(heartbeat_cap=3)
    cm.start(session)
    before = cm.state()
    reply = cm.respond("Anything?", purpose="task_generation", read_only=True)
    assert len(reply.meta["steps"]) == 3  # the chain stopped at the cap
    last_system = session.llm.calls[-1]["messages"][0]["content"]
    assert "- send_message(" in last_system and "- archival_memory_search(" not in last_system  # last step: send_message only
    assert reply.text == "still searching"
    assert cm.state() == before  # read-only: memory untouched


def test_memgpt_chain_ends_without_heartbeat_even_after_a_memory_edit(make_session):
    """As in MemGPT: a step continues only on a heartbeat request (or a failed call)."""
    replies = [
        {"text": "", "tool_calls": [{"name": "core_memory_append",
                                     "arguments": {"label": "human", "content": "Likes tests."}}]},  # no heartbeat
        {"text": "", "tool_calls": [{"name": "send_message", "arguments": {"message": "never reached"}}]},
    ]
    session = make_session(replies)
    cm = MemGPT()
    cm.start(session)
    reply = cm.respond("Remember that I like tests.")
    assert [s["calls"] for s in reply.meta["steps"]] == [["core_memory_append"]]  # one step, then the chain ended
    assert "Likes tests." in cm.core["human"] and reply.text == ""
    assert session.llm.remaining == 1

    replies = [
        {"text": "", "tool_calls": [{"name": "core_memory_append", "arguments": {
            "label": "human", "content": "Likes docs.", "request_heartbeat": True}}]},
        {"text": "", "tool_calls": [{"name": "core_memory_replace", "arguments": {
            "label": "nope", "old_content": "x", "new_content": "y"}}]},  # fails -> forced heartbeat
        {"text": "", "tool_calls": [{"name": "send_message", "arguments": {"message": "Noted."}}]},
    ]
    session = make_session(replies)
    cm = MemGPT()
    cm.start(session)
    reply = cm.respond("And docs.")
    assert [s["calls"] for s in reply.meta["steps"]] == [["core_memory_append"], ["core_memory_replace"], ["send_message"]]
    assert reply.text == "Noted." and all("fit" in s for s in reply.meta["steps"])
