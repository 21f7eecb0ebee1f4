"""The one tool-calling protocol (``reconmem.platform.tools``) and the four loops on it, with SCRIPTED
replies (ScriptedLLM, never a model's).

The pure parts are checked directly. The loops (MemGPT, Memory Tool, the built-in CAB maintainer and the
Strands host, each with function calling and with the text / JSON protocol) run a scripted agent that
exercises their tool calls (heartbeats, a failed call, a call not offered, compressions, a refused
compression, repeated calls, the calls-per-step cap, a malformed JSON call, an answer that is a tool
call); every request's purpose and LLM cache key, the reply and the loop's outputs are hashed and
compared with ``data/tool_protocol_fingerprints.json``, so a change of the protocol that changes what
reaches the backbone or what the loop records does not go unnoticed.

A deliberate output change re-records the file:
``RECONMEM_RECORD_FINGERPRINTS=1 python -m pytest tests/core/test_tool_protocol.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from reconmem.platform.context import Session, Turn
from reconmem.platform.llm import UsageLedger
from reconmem.platform.llm.cache import request_key
from reconmem.platform.testing import ScriptedLLM
from reconmem.platform.tools import (REPEATED_CALL_NOTE, ToolCall, ToolDispatch, function_tool, json_protocol_error,
                                     json_tool_result, looks_like_tool_call, parse_json_tool_call, reask_messages,
                                     reply_tool_calls, tool_call_message, tool_result_message)

TESTS = Path(__file__).resolve().parents[1]
FINGERPRINTS = Path(__file__).with_name("data") / "tool_protocol_fingerprints.json"
RECORD = os.environ.get("RECONMEM_RECORD_FINGERPRINTS") == "1"
FIXTURE_REPO = TESTS / "fixtures" / "cab_repo"
FIXTURE_ISSUES = TESTS / "cab" / "fixture_issues.jsonl"


# ---- the protocol's pure parts -----------------------------------------------------------------------------

class _Reply:
    def __init__(self, tool_calls: list[dict[str, Any]] | None) -> None:
        self.tool_calls = tool_calls


class _Result:
    def __init__(self, text: str) -> None:
        self.text = text


def test_reply_calls_get_ids_by_their_place_among_the_calls_kept():
    resp = _Reply([{"name": "other", "arguments": {}}, {"id": "x", "name": "a", "arguments": {"k": 1}},
                   {"name": "a", "arguments": None}])
    assert reply_tool_calls(resp) == [ToolCall("call_0", "other", {}), ToolCall("x", "a", {"k": 1}),
                                      ToolCall("call_2", "a", None)]
    assert reply_tool_calls(resp, names=["a"], id_prefix="call_7_") == [ToolCall("x", "a", {"k": 1}),
                                                                         ToolCall("call_7_1", "a", None)]
    assert reply_tool_calls(_Reply(None)) == []


def test_call_and_result_messages():
    calls = [ToolCall("c1", "note", {"text": "é"})]
    assert tool_call_message(None, calls) == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "note", "arguments": '{"text": "\\u00e9"}'}}]}
    assert tool_call_message("", calls, ensure_ascii=False)["tool_calls"][0]["function"]["arguments"] == '{"text": "é"}'
    assert tool_result_message("c1", "note", "ok") == {"role": "tool", "tool_call_id": "c1", "name": "note", "content": "ok"}
    assert function_tool("note", "Take a note.", {"type": "object"}) == {
        "type": "function", "function": {"name": "note", "description": "Take a note.", "parameters": {"type": "object"}}}
    assert json_tool_result("note", "ok") == "TOOL RESULT (note):\nok"
    assert json_protocol_error("bad").startswith("ERROR: bad. To call a tool reply with exactly one JSON object")


def test_json_protocol_and_an_answer_that_is_a_call():
    names = ["note", "look"]
    assert parse_json_tool_call('{"tool": "note", "arguments": {"text": "x"}}', names) == ("note", {"text": "x"})
    assert "unknown tool 'read'" in parse_json_tool_call('{"tool": "read"}', names)
    assert parse_json_tool_call("plain answer", names) is None
    assert looks_like_tool_call('{"name": "look", "arguments": {}}', names)
    assert not looks_like_tool_call('{"name": "read", "arguments": {}}', names)
    asked = [{"role": "user", "content": "q"}]
    again = reask_messages(asked, '{"tool": "note"}', "Answer in plain text.")
    assert again[1:] == [{"role": "assistant", "content": '{"tool": "note"}'}, {"role": "user", "content": "Answer in plain text."}]
    assert again[0] == asked[0] and again[0] is not asked[0]


def test_dispatch_caps_repeats_and_clips():
    ran: list[tuple[str, Any]] = []

    def handler(name: str, args: Any) -> _Result:
        ran.append((name, args))
        return _Result(f"{name}:{json.dumps(args)}" * 3)

    dispatch = ToolDispatch(handler, max_calls_per_step=2, max_result_chars=20)
    first, did_run = dispatch.execute("look", {"p": 1})
    assert did_run and first == ('look:{"p": 1}' * 3)[:20] + "\n[tool output clipped]"
    assert dispatch.execute("look", {"p": 1}, position=1) == (first + "\n\n" + REPEATED_CALL_NOTE, False)
    over, did_run = dispatch.execute("look", {"p": 2}, position=2)
    assert not did_run and over.startswith("ERROR: at most 2 tool calls per step")
    assert (len(ran), len(dispatch.results), dispatch.repeated, dispatch.over_cap) == (1, 1, 1, 1)
    dispatch.new_response()
    assert dispatch.execute("look", {"p": 1})[1] and len(ran) == 2 and dispatch.repeated == 0


# ---- the four loops, fingerprinted --------------------------------------------------------------------------

def _digest(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:20]


def _calls(llm: ScriptedLLM) -> list[str]:
    return [_digest({"purpose": c["purpose"], "key": request_key({"messages": c["messages"], **c["params"]})})
            for c in llm.calls]


def _memgpt_agent(messages: list[dict[str, Any]], purpose: str) -> Any:
    """SCRIPTED MemGPT agent: append with a heartbeat, a failing replace, a search, then the message; on the
    last allowed step (send_message only) it first calls a function that is not offered."""
    if purpose == "memory_summarisation":
        return "Summary: the user asked about the cache."
    system = str(messages[0].get("content") or "")
    json_protocol = "Answer with exactly one JSON object" in system
    results = [m for m in messages if m.get("role") == "tool" or str(m.get("content") or "").startswith("[Function return]")]
    n = len(results) % 5
    if n == 0:
        name, args = "core_memory_append", {"label": "human", "content": "Likes caches é.", "request_heartbeat": True}
    elif n == 1:
        name, args = "core_memory_replace", {"label": "human", "old_content": "absent", "new_content": "x"}
    elif n == 2:
        name, args = "conversation_search", {"query": "cache", "request_heartbeat": True}
    elif n == 3:
        name, args = "archival_memory_search", {"query": "cache", "request_heartbeat": True}
    else:
        name, args = "send_message", {"message": "Use a 128-entry cache ü."}
    if json_protocol:
        return json.dumps({"inner_thoughts": "thinking ö", "function": name, "arguments": args})
    return {"text": "thinking ö", "tool_calls": [{"id": f"m{len(results)}", "name": name, "arguments": args}]}


def _memgpt(fc: bool) -> dict[str, Any]:
    from baselines.memgpt import MemGPT

    llm = ScriptedLLM(_memgpt_agent, ledger=UsageLedger(), supports_function_calling=fc)
    cm = MemGPT(heartbeat_cap=4)
    cm.start(Session(sample_id="protocol", llm=llm, embedder=None, repo=None, system_prompt="You help with code.",
                     context_window=llm.context_window))
    cm.observe(Turn(0, "We use LRI caches.", "Noted."))
    replies = [cm.respond("How big should the cache be?"), cm.respond("And now?", purpose="task_generation", read_only=True),
               cm.respond("Once more?")]
    return {"calls": _calls(llm), "replies": [_digest([r.text, r.meta, r.context.to_dict()]) for r in replies],
            "state": _digest(cm.state())}


def _memory_tool_agent(text_protocol: bool):
    """SCRIPTED Memory Tool agent: with 4+ turns in its history it compresses turns 0-3 (a second request
    in the same response asks for a malformed span, which is refused); otherwise it answers."""

    def reply(messages: list[dict[str, Any]], purpose: str) -> Any:
        system = str(messages[0].get("content") or "")
        offered = "compress_history" in system and "compress_history is not available" not in system
        answered = any(m.get("role") == "tool" or "[compress_history result]" in str(m.get("content") or "")
                       for m in messages)
        history = json.dumps(messages)
        if not offered or "[turn 3]" not in history:
            return "Answer: use a cache ü."
        if answered:
            call = {"span": "9-2", "summary": "backwards"}
        else:
            call = {"span": "0-3", "summary": "cache talk é"}
        if text_protocol:
            return "```compress_history\n" + json.dumps(call) + "\n```"
        return {"text": "", "tool_calls": [{"id": "k1", "name": "compress_history", "arguments": call},
                                           {"name": "compress_history", "arguments": {"span": "1", "summary": ""}}]}

    return reply


def _memory_tool(fc: bool) -> dict[str, Any]:
    from baselines.memory_tool import MemoryTool

    llm = ScriptedLLM(_memory_tool_agent(not fc), ledger=UsageLedger(), supports_function_calling=fc)
    cm = MemoryTool(max_steps=3)
    cm.start(Session(sample_id="protocol", llm=llm, embedder=None, repo=None, system_prompt="You help with code.",
                     context_window=llm.context_window))
    replies = []
    for i in range(6):
        query = f"Question {i} about the LRI cache and its size, with some words to summarise later."
        reply = cm.respond(query)
        replies.append(reply)
        cm.observe(Turn(i, query, reply.text))
    return {"calls": _calls(llm), "replies": [_digest([r.text, r.meta, r.context.to_dict()]) for r in replies],
            "state": _digest(cm.state())}


def _call(cid: str, name: str = "read_file", **args: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": args or {"path": "tinykv/config.py"}}


TOOL_JSON = '{"tool": "read_file", "arguments": {"path": "tinykv/config.py"}}'


def _cab(host: str, fc: bool) -> dict[str, Any]:
    from benchmarks.cab.maintainer import MaintainerAgent, maintainer_system_prompt
    from benchmarks.cab.loader import load_issues
    from benchmarks.cab.tools import RepoTools

    if host == "strands":
        pytest.importorskip("strands")
    from benchmarks.cab.strands_host import StrandsMaintainer

    if fc:  # repeated calls, the calls-per-step cap, then an answer that is a tool call (re-asked)
        script = [{"tool_calls": [_call("a1"), _call("a2"), _call("a3", path="README.md"), _call("a4", "list_dir", path="."),
                                  _call("a5", path="pyproject.toml")]},
                  {"tool_calls": [_call("b1"), _call("b2", "search", pattern="TIMEOUT")]},
                  TOOL_JSON, "DEFAULT_TIMEOUT is 5.0 ü.",
                  {"tool_calls": [_call("c1", "list_dir", path="tinykv")]}, "Second answer."]
    else:  # a call, a malformed call, a call-shaped answer after the cap (re-asked);
        # then two calls and an answer that is still a call after the re-ask
        script = [TOOL_JSON, '{"tool": "read_file", "arguments": {"path": "a"', TOOL_JSON, "DEFAULT_TIMEOUT is 5.0 ü.",
                  '{"tool": "list_dir", "arguments": {"path": "."}}', '{"tool": "list_dir", "arguments": {"path": "tinykv"}}',
                  '{"tool": "bash"}', '```json\n{"name": "read_file", "arguments": {"path": "x"}}\n```']
    issue = load_issues(FIXTURE_ISSUES, task_ids=["cab_fixture_1"])[0]
    llm = ScriptedLLM(script, ledger=UsageLedger(), name="maint", supports_function_calling=fc)
    from baselines.full import FullHistory

    manager = FullHistory()
    system = maintainer_system_prompt(issue, function_calling=fc, max_tool_steps=2)
    manager.start(Session(sample_id=issue.task_id, llm=llm, embedder=None, repo=None, system_prompt=system,
                          context_window=llm.context_window))
    cls = StrandsMaintainer if host == "strands" else MaintainerAgent
    maintainer = cls(llm, manager, RepoTools(FIXTURE_REPO), max_tool_steps=2, function_calling=fc, max_calls_per_step=4)
    turns = []
    for i, (query, first) in enumerate([("Where is the timeout?", True), ("And the default?", False)]):
        turn = maintainer.respond(query, first_turn=first)
        maintainer.observe(i, query, turn)
        turns.append(_digest({"text": turn.text, "results": [(r.name, r.args, r.ok, r.text) for r in turn.tool_results],
                              "counts": [turn.llm_calls, turn.tool_steps, turn.forced_final, turn.protocol_errors,
                                         turn.repeated_calls, turn.over_cap_calls, turn.window_trims,
                                         turn.final_is_tool_call, turn.reasked],
                              "context": turn.context.to_dict()}))
    assert llm.remaining == 0, "the scripted maintainer was not followed to its end"
    return {"calls": _calls(llm), "turns": turns}


SCENARIOS = {
    "memgpt/function_calling": lambda: _memgpt(True), "memgpt/json": lambda: _memgpt(False),
    "memory_tool/function_calling": lambda: _memory_tool(True), "memory_tool/text": lambda: _memory_tool(False),
    "cab_builtin/function_calling": lambda: _cab("builtin", True), "cab_builtin/json": lambda: _cab("builtin", False),
    "cab_strands/function_calling": lambda: _cab("strands", True), "cab_strands/json": lambda: _cab("strands", False),
}


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    return json.loads(FINGERPRINTS.read_text(encoding="utf-8")) if FINGERPRINTS.exists() else {}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_loop_requests_and_outputs_match_the_recorded_fingerprint(scenario, recorded):
    got = SCENARIOS[scenario]()
    if RECORD:
        recorded[scenario] = got
        FINGERPRINTS.parent.mkdir(parents=True, exist_ok=True)
        FINGERPRINTS.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    assert scenario in recorded, f"no fingerprint for {scenario}: record with RECONMEM_RECORD_FINGERPRINTS=1"
    want = recorded[scenario]
    for key in want:
        assert got[key] == want[key], f"{scenario}: {key} differs"
