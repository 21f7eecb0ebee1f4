"""CAB edges on both maintainer hosts, with scripted replies (ScriptedLLM, not a model's):
an identical tool call repeated in one response, the calls-per-step cap, a final answer that is itself a
tool call, and an empty user-agent message."""

from __future__ import annotations

import json

import pytest

from benchmarks.cab.maintainer import MaintainerAgent, maintainer_system_prompt
from benchmarks.cab.runner import CabSettings, EmptyUserTurn
from benchmarks.cab.tools import TOOL_NAMES, RepoTools
from reconmem.platform.context import Session
from reconmem.platform.llm import UsageLedger
from reconmem.platform.testing import ScriptedLLM
from reconmem.platform.tools import REPEATED_CALL_NOTE, looks_like_tool_call

from cab_testkit import FIXTURE_REPO, GOOD_JUDGMENT, USER_FULL, SpyManager, run_issue

HOSTS = ["builtin", "strands"]


def _maintainer(host, issue, script, *, fc=True, max_tool_steps=8, max_calls_per_step=4):
    llm = ScriptedLLM(script, ledger=UsageLedger(), name="maint", supports_function_calling=fc)
    manager = SpyManager(memory_calls=False)
    system = maintainer_system_prompt(issue, function_calling=fc, max_tool_steps=max_tool_steps)
    manager.start(Session(sample_id=issue.task_id, llm=llm, embedder=None, repo=None, system_prompt=system))
    kw = dict(max_tool_steps=max_tool_steps, function_calling=fc, max_calls_per_step=max_calls_per_step)
    if host == "strands":
        pytest.importorskip("strands")
        from benchmarks.cab.strands_host import StrandsMaintainer

        return StrandsMaintainer(llm, manager, RepoTools(FIXTURE_REPO), **kw), llm
    return MaintainerAgent(llm, manager, RepoTools(FIXTURE_REPO), **kw), llm


def _call(cid, name="read_file", **args):
    return {"id": cid, "name": name, "arguments": args or {"path": "tinykv/config.py"}}


def _tool_messages(llm, call_index):
    return [m for m in llm.calls[call_index]["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("host", HOSTS)
def test_repeated_identical_call_gets_the_cached_result_and_a_note(host, fixture_issue):
    script = [{"tool_calls": [_call("a1"), _call("a2"), _call("a3")]},
              {"tool_calls": [_call("b1"), _call("b2", path="README.md")]},
              "DEFAULT_TIMEOUT is 5.0.",
              {"tool_calls": [_call("c1")]}, "Again 5.0."]
    m, llm = _maintainer(host, fixture_issue, script)
    turn = m.respond("Where is the timeout?", first_turn=True)
    assert turn.text == "DEFAULT_TIMEOUT is 5.0."
    assert [r.args["path"] for r in turn.tool_results] == ["tinykv/config.py", "README.md"]  # each file read once
    assert turn.repeated_calls == 3
    first_round = _tool_messages(llm, 1)
    assert "DEFAULT_TIMEOUT = 5.0" in first_round[0]["content"] and REPEATED_CALL_NOTE not in first_round[0]["content"]
    for repeat in first_round[1:]:
        assert repeat["content"] == first_round[0]["content"] + "\n\n" + REPEATED_CALL_NOTE
    later = _tool_messages(llm, 2)
    assert later[-2]["content"].endswith(REPEATED_CALL_NOTE) and "DEFAULT_TIMEOUT = 5.0" in later[-2]["content"]
    # a new response starts a new cache: the same call runs again
    again = m.respond("And the default?", first_turn=True)
    assert len(again.tool_results) == 1 and again.repeated_calls == 0


@pytest.mark.parametrize("host", HOSTS)
def test_calls_per_step_cap_on_both_hosts(host, fixture_issue):
    paths = ["tinykv/config.py", "README.md", "tinykv/client.py", "tinykv/retry.py", "pyproject.toml"]
    script = [{"tool_calls": [_call(f"p{i}", path=p) for i, p in enumerate(paths)]}, "Done."]
    m, llm = _maintainer(host, fixture_issue, script, max_calls_per_step=4)
    turn = m.respond("Read everything.", first_turn=True)
    assert [r.args["path"] for r in turn.tool_results] == paths[:4] and turn.over_cap_calls == 1
    assert _tool_messages(llm, 1)[-1]["content"] == "ERROR: at most 4 tool calls per step; this call was not executed"


TOOL_JSON = '{"tool": "read_file", "arguments": {"path": "tinykv/config.py"}}'


@pytest.mark.parametrize("host", HOSTS)
def test_final_answer_that_is_a_tool_call_is_reasked_once(host, fixture_issue):
    steps = [{"tool_calls": [_call("s1", name="list_dir", path=".")]}]
    m, llm = _maintainer(host, fixture_issue, steps + [TOOL_JSON, "It is DEFAULT_TIMEOUT = 5.0."], max_tool_steps=1)
    turn = m.respond("Explore.", first_turn=True)
    assert turn.forced_final and turn.reasked and not turn.final_is_tool_call
    assert turn.text == "It is DEFAULT_TIMEOUT = 5.0."
    reask = llm.calls[-1]
    assert reask["params"]["tools"] is None and "no tools are available" in reask["messages"][-1]["content"]
    assert reask["messages"][-2] == {"role": "assistant", "content": TOOL_JSON}


@pytest.mark.parametrize("host", HOSTS)
def test_final_tool_call_after_the_reask_is_recorded_and_counted(host, fixture_issue, tmp_path):
    pytest.importorskip("strands") if host == "strands" else None
    maint = [{"tool_calls": [_call("s1", name="list_dir", path=".")]}, TOOL_JSON, '```json\n{"name": "read_file", "arguments": {"path": "tinykv/config.py"}}\n```']
    ledger = UsageLedger()
    result = run_issue(fixture_issue, repo_root=FIXTURE_REPO, out_dir=tmp_path / "s",
                       maintainer_llm=ScriptedLLM(maint, ledger=ledger, name="maint"),
                       user_llm=ScriptedLLM([USER_FULL], ledger=ledger, name="user"),
                       judge_llm=ScriptedLLM([GOOD_JUDGMENT], ledger=ledger, name="judge"),
                       manager=SpyManager(memory_calls=False),
                       settings=CabSettings(repo_index=False, max_tool_steps=1, maintainer_host=host))
    assert result["status"] == "ok" and result["final_tool_call_answers"] == 1
    conv = [json.loads(x) for x in (tmp_path / "s" / "conversation.jsonl").read_text().splitlines()]
    assert conv[1]["final_is_tool_call"] is True and conv[1]["reasked"] is True
    assert conv[1]["content"].startswith("```json")  # recorded as the answer it was


def test_looks_like_tool_call():
    assert looks_like_tool_call(TOOL_JSON, TOOL_NAMES) and looks_like_tool_call('{"tool": "read_file", "arguments": {', TOOL_NAMES)
    assert looks_like_tool_call('<tool_call>{"name": "search", "arguments": {"pattern": "x"}}</tool_call>', TOOL_NAMES)
    assert not looks_like_tool_call("Set TINYKV_TIMEOUT=30.", TOOL_NAMES) and not looks_like_tool_call('{"timeout": 30}', TOOL_NAMES)


def _issue_run(issue, tmp_path, users, **settings):
    ledger = UsageLedger()
    u_llm = ScriptedLLM(users, ledger=ledger, name="user")
    result = run_issue(issue, repo_root=FIXTURE_REPO, out_dir=tmp_path / "s",
                       maintainer_llm=ScriptedLLM(["Answer one.", "Answer two."], ledger=ledger, name="maint"),
                       user_llm=u_llm, judge_llm=ScriptedLLM([GOOD_JUDGMENT], ledger=ledger, name="judge"),
                       manager=SpyManager(memory_calls=False), settings=CabSettings(repo_index=False, **settings))
    return result, u_llm


def test_empty_user_message_is_retried_at_the_retry_temperature(fixture_issue, tmp_path):
    result, u_llm = _issue_run(fixture_issue, tmp_path, ["", "Which file?\nSATISFACTION_STATUS: NOT_SATISFIED", USER_FULL])
    assert result["status"] == "ok" and result["turns"] == 2 and result["user_retries"] == 1
    assert [c["params"]["temperature"] for c in u_llm.calls] == [0.0, 0.7, 0.0]
    conv = [json.loads(x) for x in (tmp_path / "s" / "conversation.jsonl").read_text().splitlines()]
    assert conv[2]["retries"] == 1 and conv[2]["content"] == "Which file?"
    assert conv[3]["content"] == "Answer two."  # the maintainer never saw an empty turn


def test_empty_user_message_twice_errors_the_issue(fixture_issue, tmp_path):
    with pytest.raises(EmptyUserTurn, match=r"turn 1: the user agent returned an empty message 2 time.*user_max_tokens"):
        _issue_run(fixture_issue, tmp_path, ["", "SATISFACTION_STATUS: NOT_SATISFIED"])


def test_manifest_records_each_roles_backbone_settings(tmp_path, monkeypatch):
    """The pinned OpenRouter provider (and the other result-changing settings) land in manifest.json."""
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from omegaconf import open_dict

    from benchmarks import runloop
    from cab_testkit import HERE

    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[2] / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[
            "benchmark=cab", "method=full", "backbone=qwen3_235b", "backbone@user_backbone=gpt5_mini",
            "backbone.model=scripted/cab_testkit:scripted_maintainer",
            "user_backbone.model=scripted/cab_testkit:scripted_user",
            "judge_backbone.model=scripted/cab_testkit:scripted_judge",
            f"run.results_dir={tmp_path}", f"cache.dir={tmp_path / 'cache'}", "run.ids=[cab_fixture_1]",
            f"benchmark.data={HERE / 'fixture_issues.jsonl'}", "run.run_id=m"])
    with open_dict(cfg):
        cfg.benchmark.local_repos = {"example/tinykv": str(FIXTURE_REPO)}
    runloop.run(cfg)
    manifest = json.loads((tmp_path / "cab" / "qwen3_235b" / "full" / "m" / "manifest.json").read_text())
    settings = manifest["backbone_settings"]
    assert settings["backbone"]["provider"] == {"order": ["fireworks"], "allow_fallbacks": False}
    assert settings["user"]["reasoning_effort"] == "medium" and settings["user"]["reasoning_max_tokens"] == 8192
    assert set(settings) == {"backbone", "user", "judge"} and settings["backbone"]["context_window"] == 262144
