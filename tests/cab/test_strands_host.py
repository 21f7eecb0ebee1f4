"""The CAB maintainer on the real Strands Agents host (strands-agents 1.45.0), scripted replies.

Scripted replies (ScriptedLLM, not model output) drive the Strands event loop: tool calls are
executed by Strands through our read-only tools, and every model call goes through our client, so
it lands in the usage ledger with its purpose.
"""

from __future__ import annotations

import pytest

pytest.importorskip("strands")

from benchmarks.cab.maintainer import maintainer_system_prompt  # noqa: E402
from benchmarks.cab.strands_host import (  # noqa: E402
    NativeStrands, StrandsMaintainer, from_chat_messages, make_maintainer, to_chat_messages)
from benchmarks.cab.tools import RepoTools  # noqa: E402
from reconmem.platform.context import Session  # noqa: E402
from reconmem.platform.llm import UsageLedger  # noqa: E402
from reconmem.platform.testing import ScriptedLLM  # noqa: E402

from cab_testkit import FIXTURE_REPO, SpyManager  # noqa: E402


def _maintainer(issue, script, manager, *, fc=True, max_tool_steps=8):
    ledger = UsageLedger()
    llm = ScriptedLLM(script, ledger=ledger, name="maint", supports_function_calling=fc)
    system = maintainer_system_prompt(issue, function_calling=fc, max_tool_steps=max_tool_steps)
    manager.start(Session(sample_id=issue.task_id, llm=llm, embedder=None, repo=None, system_prompt=system))
    m = StrandsMaintainer(llm, manager, RepoTools(FIXTURE_REPO), max_tool_steps=max_tool_steps, function_calling=fc)
    return m, llm, ledger


def test_native_strands_runs_tools_and_keeps_its_own_history(fixture_issue):
    script = [
        {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "tinykv/config.py"}}]},
        "Pass Client(timeout=30); the default is DEFAULT_TIMEOUT in tinykv/config.py.",
        "It is 5.0 seconds, defined as DEFAULT_TIMEOUT.",
    ]
    manager = NativeStrands()
    m, llm, ledger = _maintainer(fixture_issue, script, manager)
    first = m.respond("How do I raise the timeout?", first_turn=True)
    m.observe(0, "How do I raise the timeout?", first)
    assert first.text.startswith("Pass Client(timeout=30)")
    assert [r.name for r in first.tool_results] == ["read_file"] and first.tool_results[0].ok
    assert "DEFAULT_TIMEOUT = 5.0" in first.tool_results[0].text  # the tool really ran on the fixture repo
    assert first.llm_calls == 2 and first.tool_steps == 1
    # the tool result reached the model as a tool message
    assert any(msg["role"] == "tool" and "DEFAULT_TIMEOUT = 5.0" in msg["content"] for msg in llm.calls[1]["messages"])
    assert llm.calls[0]["params"]["tools"] is not None

    second = m.respond("Where is the default defined?", first_turn=False)
    assert second.text.startswith("It is 5.0 seconds")
    sent = llm.calls[2]["messages"]
    # native context handling: the host's own history (first question, tool exchange, answer) is sent
    assert sent[0]["role"] == "system" and sent[1] == {"role": "user", "content": "How do I raise the timeout?"}
    assert any(msg["role"] == "tool" for msg in sent) and sent[-1]["content"] == "Where is the default defined?"
    purposes = [e["purpose"] for e in ledger.events]
    assert purposes == ["turn_generation", "maintainer_tool_step", "turn_generation"]
    assert all(e["input_tokens"] > 0 and e["output_tokens"] > 0 for e in ledger.events)
    assert manager.state()["turns"] == 1


def test_external_memory_method_on_the_strands_host(fixture_issue):
    """ReConMem/Full/Mem0 on the Strands host: the method's context is what the model sees."""
    script = ["First answer.", "memory call", "Second answer."]
    manager = SpyManager(memory_calls=True)
    m, llm, _ = _maintainer(fixture_issue, script, manager)
    first = m.respond("Q1", first_turn=True)
    m.observe(0, "Q1", first)
    second = m.respond("Q2", first_turn=False)
    assert manager.context_for_queries == ["Q2"]
    sent = llm.calls[2]["messages"]
    assert [x["role"] for x in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == "Q1" and sent[2]["content"] == "First answer." and sent[3]["content"] == "Q2"
    assert second.text == "Second answer." and second.recalled


def test_json_protocol_backbone_on_the_strands_host(fixture_issue):
    script = [
        '{"tool": "read_file", "arguments": {"path": "tinykv/config.py"}}',
        '{"tool": "read_file", "arguments": {"path": "README.md"',  # malformed
        "Set TINYKV_TIMEOUT=30.",
    ]
    m, llm, _ = _maintainer(fixture_issue, script, NativeStrands(), fc=False)
    turn = m.respond("How do I raise the timeout?", first_turn=True)
    assert turn.text == "Set TINYKV_TIMEOUT=30." and turn.protocol_errors == 1
    assert all(c["params"]["tools"] is None for c in llm.calls)
    second = llm.calls[1]["messages"]
    assert any(x["role"] == "user" and "TOOL RESULT (read_file)" in x["content"] and "DEFAULT_TIMEOUT = 5.0" in x["content"]
               for x in second)
    assert "not valid JSON" in llm.calls[2]["messages"][-1]["content"]


def test_tool_step_cap_forces_a_plain_answer(fixture_issue):
    def loop_call(i, path):
        return {"tool_calls": [{"id": f"x{i}", "name": "list_dir", "arguments": {"path": path}}]}
    m, llm, _ = _maintainer(fixture_issue, [loop_call(1, "."), loop_call(2, "tinykv"), "Final."], NativeStrands(),
                            max_tool_steps=2)
    turn = m.respond("Explore.", first_turn=True)
    assert turn.text == "Final." and turn.forced_final and len(turn.tool_results) == 2 and turn.tool_steps == 2
    assert llm.calls[-1]["params"]["tools"] is None


def test_message_conversion_round_trip():
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    system, history, query = from_chat_messages(msgs)
    assert system == "S" and query == "c" and [h["role"] for h in history] == ["user", "assistant"]
    assert to_chat_messages(history + [{"role": "user", "content": [{"text": query}]}], system,
                            function_calling=True) == msgs


def test_make_maintainer_picks_the_host(fixture_issue):
    llm = ScriptedLLM(["x"], name="maint")
    tools = RepoTools(FIXTURE_REPO)
    assert isinstance(make_maintainer("builtin", llm, NativeStrands(), tools), StrandsMaintainer)
    assert type(make_maintainer("builtin", llm, SpyManager(), tools)).__name__ == "MaintainerAgent"
    with pytest.raises(ValueError, match="maintainer_host"):
        make_maintainer("bogus", llm, SpyManager(), tools)


def test_native_strands_issue_through_run_issue(fixture_issue, tmp_path):
    """A scripted-reply CAB issue end to end on the Strands host: tools run, tokens in the ledger."""
    from benchmarks.cab.runner import CabSettings
    from cab_testkit import run_issue
    from cab_testkit import GOOD_JUDGMENT, USER_FULL, USER_PARTIAL

    ledger = UsageLedger()
    maint = [
        {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "tinykv/config.py"}}]},
        "Pass Client(timeout=30) or set TINYKV_TIMEOUT=30.",
        "The default is DEFAULT_TIMEOUT = 5.0 in tinykv/config.py.",
    ]
    m_llm = ScriptedLLM(maint, ledger=ledger, name="maint")
    result = run_issue(fixture_issue, repo_root=FIXTURE_REPO, out_dir=tmp_path / "s", maintainer_llm=m_llm,
                       user_llm=ScriptedLLM([USER_PARTIAL, USER_FULL], ledger=ledger, name="user"),
                       judge_llm=ScriptedLLM([GOOD_JUDGMENT], ledger=ledger, name="judge"),
                       manager=NativeStrands(), settings=CabSettings(repo_index=False))
    assert result["status"] == "ok" and result["turns"] == 2 and result["tool_calls"] == 1
    assert result["verdict"] == "CORRECT"
    maintainer_events = [e for e in ledger.events if e.get("role") == "maintainer"]
    assert {e["purpose"] for e in maintainer_events} == {"turn_generation", "maintainer_tool_step"}
    assert sum(e["input_tokens"] for e in maintainer_events) > 0
    assert not [e for e in ledger.events if e.get("role") == "memory"]  # no external memory calls
    # the second response carried the host's own history, tool exchange included
    assert any(msg["role"] == "tool" for msg in m_llm.calls[2]["messages"])
