"""The full issue loop (user / maintainer / judge) on the fixture repository.

Fast tests use scripted replies (ScriptedLLM) for every agent; the slow test runs the REAL local
backbone as maintainer with scripted user and judge replies.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from benchmarks.cab.metrics import issue_tokens, summarize
from benchmarks.cab.runner import CabSettings
from reconmem.platform.llm import UsageLedger
from reconmem.platform.testing import ScriptedLLM

from cab_testkit import FIXTURE_REPO, GOOD_JUDGMENT, USER_FULL, USER_PARTIAL, SpyManager, run_issue


def _read_jsonl(p: Path) -> list[dict]:
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def _run(issue, tmp_path, maintainer_script, user_script, judge_script, *, fc=True, settings=None, manager=None,
         memory_script=None):
    ledger = UsageLedger()
    m_llm = ScriptedLLM(maintainer_script, ledger=ledger, name="maint", supports_function_calling=fc)
    u_llm = ScriptedLLM(user_script, ledger=ledger, name="user")
    j_llm = ScriptedLLM(judge_script, ledger=ledger, name="judge")
    manager = manager or SpyManager(memory_calls=False)
    out = tmp_path / "sample"
    result = run_issue(issue, repo_root=FIXTURE_REPO, out_dir=out, maintainer_llm=m_llm, user_llm=u_llm, judge_llm=j_llm,
                       manager=manager, settings=settings or CabSettings(repo_index=False))
    return result, out, m_llm, u_llm, j_llm, manager, ledger


def test_scripted_loop_function_calling(fixture_issue, tmp_path):
    """Scripted replies: two tool calls, an answer, a follow-up, a second answer, satisfied, judged."""
    maint = [
        {"tool_calls": [{"id": "c1", "name": "search", "arguments": {"pattern": "DEFAULT_TIMEOUT"}}]},
        {"tool_calls": [{"id": "c2", "name": "read_file", "arguments": {"path": "tinykv/config.py", "start_line": 1, "end_line": 20}},
                        {"id": "c3", "name": "read_file", "arguments": {"path": "../../etc/passwd"}}]},
        "Pass `Client(host, port, timeout=30)` or set TINYKV_TIMEOUT=30.",
        "memory summary 1",  # the manager's observe() after turn 0 (same backbone)
        "The default is DEFAULT_TIMEOUT = 5.0 in tinykv/config.py.",
        "memory summary 2",
    ]
    manager = SpyManager(memory_calls=True)
    result, out, m_llm, u_llm, j_llm, manager, ledger = _run(
        fixture_issue, tmp_path, maint, [USER_PARTIAL, USER_FULL], [GOOD_JUDGMENT], manager=manager)
    assert result["status"] == "ok" and result["verdict"] == "CORRECT" and result["verbosity"] == "APPROPRIATE"
    assert result["turns"] == 2 and result["final_user_status"] == "FULLY_SATISFIED"
    assert result["alignment"] == [2, 2] and result["tool_calls"] == 3 and result["tool_refusals"] == 1

    # no recall on the first response; recall before the second; observe after both
    assert manager.context_for_queries == ["Thanks! Where exactly does the 5 second default come from?"]
    assert len(manager.turns) == 2 and manager.turns[0].assistant.startswith("Pass `Client")
    assert manager.session.meta["no_recall_first_turn"] is True
    first_prompt = m_llm.calls[0]["messages"]
    assert [m["role"] for m in first_prompt] == ["system", "user"]
    assert first_prompt[1]["content"].startswith("Requests time out after 5 seconds")
    assert [c["purpose"] for c in m_llm.calls] == ["turn_generation", "maintainer_tool_step", "maintainer_tool_step",
                                                   "memory_update", "turn_generation", "memory_update"]
    assert m_llm.calls[0]["params"]["tools"]  # function calling: schemas passed
    # tool results went back as tool messages; the refusal is readable
    third = m_llm.calls[2]["messages"]
    tool_msgs = [m for m in third if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2", "c3"]
    assert "DEFAULT_TIMEOUT = 5.0" in tool_msgs[1]["content"] and tool_msgs[2]["content"].startswith("ERROR:")
    # the satisfaction status never reaches the maintainer
    for call in m_llm.calls:
        assert all("SATISFACTION_STATUS" not in str(m.get("content")) for m in call["messages"])
    # the judge saw the issue, the reference comments, the conditions and the final answer
    judge_prompt = j_llm.calls[0]["messages"][1]["content"]
    assert "TINYKV_TIMEOUT=30 works" in judge_prompt and "DEFAULT_TIMEOUT in tinykv/config.py" in judge_prompt
    assert "The default is DEFAULT_TIMEOUT = 5.0" in judge_prompt and "or set TINYKV_TIMEOUT=30." not in judge_prompt  # final answer only
    # the user agent saw the conditions but not the reference comments
    user_sys = u_llm.calls[0]["messages"][0]["content"]
    assert "Identifies where the 5-second default" in user_sys and "TINYKV_TIMEOUT=30 works" not in str(u_llm.calls)

    # records
    conv = _read_jsonl(out / "conversation.jsonl")
    assert [c["role"] for c in conv] == ["user", "assistant", "user", "assistant", "user"]  # the maintainer answers
    assert conv[2]["status"] == "PARTIALLY_SATISFIED" and "SATISFACTION_STATUS" not in conv[2]["content"]
    assert len(_read_jsonl(out / "tool_calls.jsonl")) == 3
    ctxs = _read_jsonl(out / "contexts.jsonl")
    assert [c["recalled"] for c in ctxs] == [False, True] and ctxs[0]["context"]["meta"] == {"no_recall": True}
    judgment = json.loads((out / "judgment.json").read_text())
    assert judgment["verdict"] == "CORRECT" and len(judgment["conditions"]) == 2
    events = ledger.events  # ledger.jsonl is the run loop's (tests/core/test_runloop.py)
    roles = [e["role"] for e in events]
    assert roles.count("maintainer") == 4 and roles.count("memory") == 2 and roles.count("user") == 2 and roles.count("judge") == 1
    assert all(e["sample"] == "cab_fixture_1" for e in events)
    maint_tokens = sum(e["input_tokens"] + e["output_tokens"] for e in events if e["role"] == "maintainer")
    mem_tokens = sum(e["input_tokens"] + e["output_tokens"] for e in events if e["purpose"] == "memory_update")
    assert result["tokens"] == {"maintainer": maint_tokens, "memory": mem_tokens, "combined": maint_tokens + mem_tokens}
    assert maint_tokens > 0 and mem_tokens > 0
    assert issue_tokens(events) == result["tokens"]
    assert not (out / "memory.json").exists()  # the run loop writes it (tests/core/test_runloop.py)
    s = summarize([{**result, "sample_id": "cab_fixture_1"}])
    assert s["correct_pct"] == 100.0 and s["avg_turns"] == 2


def test_scripted_loop_json_fallback(fixture_issue, tmp_path):
    """Without function calling: strict JSON tool calls; a malformed one gets an error message back."""
    maint = [
        '{"tool": "read_file", "arguments": {"path": "tinykv/config.py"}}',
        '```json\n{"tool": "search", "arguments": {"pattern": "timeout", "path": "tinykv"}}\n```',
        '{"tool": "read_file", "arguments": {"path": "README.md"',  # malformed
        "Set TINYKV_TIMEOUT=30; the default DEFAULT_TIMEOUT=5.0 lives in tinykv/config.py.",
    ]
    result, out, m_llm, *_ = _run(fixture_issue, tmp_path, maint, [USER_FULL], [GOOD_JUDGMENT], fc=False)
    assert result["status"] == "ok" and result["turns"] == 1 and result["tool_calls"] == 2
    sys_prompt = m_llm.calls[0]["messages"][0]["content"]
    assert '{"tool": "read_file"' in sys_prompt and "read_file(path: string" in sys_prompt
    assert m_llm.calls[0]["params"]["tools"] is None
    last = m_llm.calls[-1]["messages"]
    assert last[-1]["role"] == "user" and "not valid JSON" in last[-1]["content"]
    assert any("TOOL RESULT (read_file)" in m["content"] and "DEFAULT_TIMEOUT = 5.0" in m["content"] for m in last)
    conv = _read_jsonl(out / "conversation.jsonl")
    assert conv[1]["protocol_errors"] == 1 and conv[1]["tool_steps"] == 3


def test_tool_step_cap_forces_an_answer(fixture_issue, tmp_path):
    def loop_call(path):
        return {"tool_calls": [{"id": "x", "name": "list_dir", "arguments": {"path": path}}]}
    maint = [loop_call("."), loop_call("tinykv"), "Final answer from notes."]
    result, out, m_llm, *_ = _run(fixture_issue, tmp_path, maint, [USER_FULL], [GOOD_JUDGMENT],
                                  settings=CabSettings(repo_index=False, max_tool_steps=2))
    assert result["forced_finals"] == 1 and result["tool_calls"] == 2
    final = m_llm.calls[-1]
    assert final["params"]["tools"] is None and "cannot use tools any more" in final["messages"][-1]["content"]
    assert "tinykv/" in final["messages"][-1]["content"]  # exploration notes folded in
    assert _read_jsonl(out / "conversation.jsonl")[1]["content"] == "Final answer from notes."


def test_max_turns_and_judge_error(fixture_issue, tmp_path):
    """Never satisfied -> stops at max_turns (no user reply after the last); a garbled judge twice -> judge_error."""
    settings = CabSettings(repo_index=False, max_turns=3, judge_retries=0)
    maint = ["answer 1", "answer 2", "answer 3"]
    users = ["More please.\nSATISFACTION_STATUS: NOT_SATISFIED\nREASON: no", "Hmm.\nSATISFACTION_STATUS: PARTIALLY_SATISFIED"]
    judge = ["I think it is fine.", "VERDICT: CORRECT/PARTIALLY CORRECT/INCORRECT"]
    result, out, _, u_llm, j_llm, manager, _ = _run(fixture_issue, tmp_path, maint, users, judge, settings=settings)
    assert result["turns"] == 3 and len(u_llm.calls) == 2 and result["final_user_status"] == "PARTIALLY_SATISFIED"
    assert result["status"] == "judge_error" and result["verdict"] is None and len(j_llm.calls) == 2
    assert "Your evaluation could not be read" in j_llm.calls[1]["messages"][-1]["content"]
    payload = json.loads((out / "judgment.json").read_text())
    assert payload["raw_outputs"] == judge
    assert len(manager.context_for_queries) == 2
    assert result["errored"] is True and result["tasks"][0]["passed"] is False  # counted as incorrect


def test_judge_error_is_retried_with_the_same_judge(fixture_issue, tmp_path):
    """A malformed judgment pair is followed by a new judgment (same judge model, sampled); bounded."""
    bad = ["I think it is fine.", "still no verdict"]
    result, out, _, _, j_llm, _, _ = _run(fixture_issue, tmp_path, ["answer"], [USER_FULL], bad + [GOOD_JUDGMENT],
                                          settings=CabSettings(repo_index=False, judge_retries=2))
    assert result["status"] == "ok" and result["verdict"] == "CORRECT" and result["judge_attempts"] == 3
    assert [c["params"]["temperature"] for c in j_llm.calls] == [0.0, 0.0, 0.7]
    assert result["tasks"] == [{"req_id": "cab_fixture_1", "namespace": fixture_issue.repo, "outcome": "CORRECT",
                                "passed": True}]
    result, *_ = _run(fixture_issue, tmp_path / "b", ["answer"], [USER_FULL], ["x"] * 6,
                      settings=CabSettings(repo_index=False, judge_retries=2))
    assert result["status"] == "judge_error" and result["judge_attempts"] == 6 and result["errored"]


def test_judge_retry_succeeds(fixture_issue, tmp_path):
    result, *_ , j_llm, _, _ = _run(fixture_issue, tmp_path, ["answer"], [USER_FULL], ["garbage", GOOD_JUDGMENT])
    assert result["status"] == "ok" and result["judge_attempts"] == 2 and len(j_llm.calls) == 2


def test_dockerfile_issue_without_engine(fixture_issue, tmp_path):
    from dataclasses import replace

    from benchmarks.cab.docker_check import DockerUnavailableForIssue

    issue = replace(fixture_issue, dockerfile="FROM python:3.11-slim\n")

    def no_engine():
        raise DockerUnavailableForIssue("no Docker engine answered")

    ledger = UsageLedger()
    llms = [ScriptedLLM([], ledger=ledger, name=n) for n in ("m", "u", "j")]
    result = run_issue(issue, repo_root=FIXTURE_REPO, out_dir=tmp_path / "s", maintainer_llm=llms[0], user_llm=llms[1],
                       judge_llm=llms[2], manager=SpyManager(), settings=CabSettings(repo_index=False),
                       docker_client_factory=no_engine)
    assert result["status"] == "docker_unavailable" and "no Docker engine" in result["error"]
    assert result["excluded_reason"] == "docker_unavailable"  # an issue property: excluded for every method
    assert len(ledger) == 0  # nothing spent


@pytest.mark.slow
def test_real_local_backbone_maintainer(fixture_issue, tmp_path):
    """REAL local backbone (Qwen2.5-Coder-0.5B, JSON tool protocol) as maintainer; user and judge scripted."""
    from reconmem.platform.llm import BackboneSpec, LLMClient
    from omegaconf import OmegaConf

    conf = OmegaConf.load(Path(__file__).resolve().parents[2] / "conf" / "backbone" / "local.yaml")
    ledger = UsageLedger()
    m_llm = LLMClient(BackboneSpec.from_config(conf), ledger=ledger)
    u_llm = ScriptedLLM([USER_PARTIAL, USER_FULL], ledger=ledger, name="user")
    j_llm = ScriptedLLM([GOOD_JUDGMENT], ledger=ledger, name="judge")
    from baselines.full import FullHistory

    out = tmp_path / "sample"
    t0 = time.perf_counter()
    result = run_issue(fixture_issue, repo_root=FIXTURE_REPO, out_dir=out, maintainer_llm=m_llm, user_llm=u_llm,
                       judge_llm=j_llm, manager=FullHistory(),
                       settings=CabSettings(repo_index=False, max_tool_steps=3, maintainer_max_tokens=256))
    wall = time.perf_counter() - t0
    assert result["status"] == "ok" and result["turns"] == 2
    conv = _read_jsonl(out / "conversation.jsonl")
    answers = [c["content"] for c in conv if c["role"] == "assistant"]
    assert all(a.strip() for a in answers)
    assert result["tokens"]["maintainer"] > 0 and result["tokens"]["memory"] == 0
    events = ledger.events
    assert {e["role"] for e in events} == {"maintainer", "user", "judge"}
    report = {"wall_seconds": round(wall, 1), "tokens": result["tokens"], "tool_calls": result["tool_calls"],
              "turn_stats": result["turn_stats"], "llm_calls": result["llm_calls"]}
    print("CAB real-backbone loop:", json.dumps(report))
    for a in answers:
        print("ANSWER:", a[:400].replace("\n", " | "))
