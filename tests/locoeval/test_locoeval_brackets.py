"""Both bracket methods through the one run loop on the shipped demo set, with SCRIPTED backbone
replies (``scripted_backbone.fast_reply``, not a model's): the records, one call per task, the
privileged channel reaching oracle_context only, and the config checks that guard it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import benchmarks
from benchmarks.locoeval.loader import load_samples

CONF = Path(benchmarks.__file__).resolve().parents[1] / "conf"
BRACKETS = ("no_memory", "oracle_context")


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def _norm(text: str) -> str:
    return " ".join(text.split())


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def bracket_runs(tmp_path_factory):
    from benchmarks.runloop import run

    tmp = tmp_path_factory.mktemp("brackets")
    runs = {}
    for method in BRACKETS:
        cfg = _cfg(f"method={method}", "benchmark=demo", "backbone=local",
                   "backbone.model=scripted/scripted_backbone:fast_reply",
                   "benchmark.evaluator=scripted_backbone.fake_evaluate", f"run.results_dir={tmp}",
                   "cache.llm=false", "benchmark.progress=false", "run.run_id=brackets")
        summary = run(cfg)
        runs[method] = (cfg, Path(summary["run_dir"]), summary)
    samples = load_samples(str(runs["no_memory"][0].benchmark.samples))
    return samples, runs


def test_both_brackets_run_through_the_loop_and_write_records(bracket_runs):
    samples, runs = bracket_runs
    for method, (_, run_dir, summary) in runs.items():
        assert summary["n_errored"] == 0 and summary["n_finished"] == len(samples)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["skip_prep_replies"] is True and manifest["scripted"] is True
        assert manifest["privileged_inputs"] == (["task_oracle"] if method == "oracle_context" else [])
        for s in samples:
            d = run_dir / "samples" / s.id
            result = json.loads((d / "result.json").read_text())
            assert result["status"] == "ok" and result["prep_replies"] == "skipped"
            assert [t["req_id"] for t in result["tasks"]] == [t.req_id for t in s.tasks]
            assert (d / "tests.json").is_file() and (d / "memory.json").is_file()


def test_prep_replies_are_skipped_and_each_task_costs_one_call(bracket_runs):
    samples, runs = bracket_runs
    for _, run_dir, _ in runs.values():
        for s in samples:
            d = run_dir / "samples" / s.id
            conv = _rows(d / "conversation.jsonl")
            prep = [r for r in conv if r["phase"] == "prep" and r["role"] == "user"]
            replies = [r for r in conv if r["phase"] == "prep" and r["role"] == "assistant"]
            assert [r["turn"] for r in prep] == [r["turn"] for r in replies] == [st.turn for st in s.outline]
            assert all(r["skipped"] is True and r["content"] == "" for r in replies)
            assert [r["content"] for r in prep] == [st.text for st in s.outline]  # the user turns are still recorded
            ledger = _rows(d / "ledger.jsonl")
            assert len(ledger) == len(s.tasks)
            assert {(e["purpose"], e["phase"]) for e in ledger} == {("task_generation", "task")}
            assert [r["phase"] for r in _rows(d / "contexts.jsonl")] == ["task"] * len(s.tasks)
            result = json.loads((d / "result.json").read_text())
            assert result["usage"]["calls"] == len(s.tasks)


def test_oracle_prompt_holds_the_tasks_statements_and_no_memory_no_earlier_turn(bracket_runs):
    samples, runs = bracket_runs
    for s in samples:
        floor = _rows(runs["no_memory"][1] / "samples" / s.id / "contexts.jsonl")
        ceiling = _rows(runs["oracle_context"][1] / "samples" / s.id / "contexts.jsonl")
        conv = {r["req_id"]: r for r in _rows(runs["oracle_context"][1] / "samples" / s.id / "conversation.jsonl")
                if r["phase"] == "task" and r["role"] == "assistant"}
        for f_row, c_row in zip(floor, ceiling):
            req = s.requirement(c_row["req_id"])
            gt = {i.id for i in req.gt_items}
            floor_prompt = _norm("\n".join(m["content"] for m in f_row["context"]["messages"]))
            ceiling_prompt = _norm("\n".join(m["content"] for m in c_row["context"]["messages"]))
            assert not [st.turn for st in s.outline if _norm(st.text) in floor_prompt]  # no earlier turn
            stating = [st for st in s.outline if (st.kind == "requirement" and st.req_id == req.req_id)
                       or (st.kind in ("info", "revision") and gt & set(st.item_ids))]
            assert any(st.kind == "requirement" for st in stating) and gt <= {i for st in stating for i in st.item_ids}
            for st in stating:
                assert _norm(st.text) in ceiling_prompt, (s.id, st.turn)
            assert conv[req.req_id]["oracle_turns"] == [st.turn for st in stating]
            for st in s.outline:
                if st not in stating:  # distractors, other tasks' turns, noise, recaps: not handed over
                    assert _norm(st.text) not in ceiling_prompt, (s.id, st.turn, st.kind)


def test_a_second_run_resumes_without_a_call(bracket_runs):
    from benchmarks.runloop import run

    _, runs = bracket_runs
    cfg, run_dir, _ = runs["oracle_context"]
    attempts = sorted(json.loads(p.read_text())["attempt"] for p in run_dir.glob("samples/*/result.json"))
    run(cfg)
    assert sorted(json.loads(p.read_text())["attempt"] for p in run_dir.glob("samples/*/result.json")) == attempts


@pytest.mark.parametrize("overrides, message", [
    (["method=full", "+method.privileged_inputs=[task_oracle]"], "only bracket methods may take privileged inputs"),
    (["method=oracle_context", "method.privileged_inputs=[]"], "only bracket methods may take privileged inputs"),
    (["method=oracle_context", "method.privileged_inputs=[grader_tests]"], "unknown"),
    (["method=full", "+method.skip_prep_replies=true"], "only bracket methods may skip"),
    (["method=oracle_context", "benchmark=cab"], "cannot supply the privileged input"),
    (["method=no_memory", "benchmark=cab"], "cannot skip the preparation replies"),
])
def test_the_privileged_channel_and_skipping_are_refused_where_undeclared(overrides, message):
    from benchmarks.errors import ConfigError
    from benchmarks.harness import build_method
    from benchmarks.runloop import build_benchmark, check_method_inputs

    cfg = _cfg(*overrides)
    with pytest.raises(ConfigError, match=message):
        check_method_inputs(cfg, build_benchmark(cfg), build_method(cfg))


def test_ordinary_methods_declare_no_privileged_input():
    from benchmarks.harness import build_method
    from benchmarks.runloop import build_benchmark, check_method_inputs, method_inputs

    for path in sorted((CONF / "method").glob("*.yaml")):
        cfg = _cfg(f"method={path.stem}", "benchmark=locoeval_verified")
        declared, skip = method_inputs(cfg)
        if path.stem in BRACKETS:
            assert skip is True
            continue
        assert not declared and not skip, path.stem
        if path.stem != "native_strands":  # a CAB-only host
            check_method_inputs(cfg, build_benchmark(cfg), build_method(cfg))


def test_dry_run_estimates_one_call_per_task_from_a_bracket_run(bracket_runs):
    from benchmarks.runloop import run

    samples, runs = bracket_runs
    cfg, run_dir, _ = runs["no_memory"]
    fresh = _cfg("method=no_memory", "benchmark=demo", "backbone=gpt5_mini", f"run.results_dir={cfg.run.results_dir}",
                 "run.run_id=cold", "run.dry_run=true")
    est = run(fresh)["estimate"]
    n_tasks = sum(len(s.tasks) for s in samples)
    assert est["skip_prep_replies"] is True and est["units"] == n_tasks
    assert est["calibrated_from"] == str(run_dir)
    assert est["calls"] == pytest.approx(n_tasks) and set(est["purposes"]) == {"task_generation"}
    assert est["cost_usd"] > 0  # priced with GPT-5 mini's rates over the calibration run's tokens


def test_scripts_brackets_prints_floor_ceiling_and_headroom(bracket_runs, capsys):
    from scripts.brackets import main

    _, runs = bracket_runs
    cfg = runs["no_memory"][0]
    args = ["benchmark=demo", "backbone=local", "backbone.model=scripted/scripted_backbone:fast_reply",
            "benchmark.evaluator=scripted_backbone.fake_evaluate", f"run.results_dir={cfg.run.results_dir}",
            "cache.llm=false", "benchmark.progress=false"]
    assert main(args) == 0  # resumes the fixture's run id "brackets": every sample finished, no call
    out = capsys.readouterr().out
    assert "Memory headroom" in out and "scripted replies" in out
    assert "| Single-hop" not in out and "**Single-hop" in out and "**All tasks" in out
    assert main([*args, "backbone=gpt5_mini", "run.dry_run=true"]) == 0
    assert "both brackets: 12.0 calls" in capsys.readouterr().out  # 6 demo tasks per bracket


def test_scripts_brackets_with_repeats_runs_both_and_pairs_repeat_with_repeat(tmp_path, capsys):
    """``python -m scripts.brackets benchmark=demo run.repeat=2`` (SCRIPTED replies): both brackets twice, then the
    table over repeat directories (it stopped with KeyError 'run_dir' before); 6 demo tasks x 2 repeats paired."""
    from scripts.brackets import main

    args = ["benchmark=demo", "run.repeat=2", "backbone=local", "backbone.model=scripted/scripted_backbone:fast_reply",
            "benchmark.evaluator=scripted_backbone.fake_evaluate", f"run.results_dir={tmp_path}", "cache.llm=false",
            "benchmark.progress=false"]
    assert main(args) == 0
    out = capsys.readouterr().out
    for method in BRACKETS:
        for i in (1, 2):
            run_dir = tmp_path / "demo" / "local" / method / f"brackets-r{i}"
            assert f"{method}: {run_dir} (0 errored sample(s))" in out
            assert json.loads((run_dir / "manifest.json").read_text())["repeat"] == {"index": i, "of": 2,
                                                                                     "run_id": "brackets"}
    all_tasks = out.split("**All tasks")[1].splitlines()
    row = next(line for line in all_tasks if line.startswith("| scripted/")).split(" | ")
    assert row[1] == "100.0 (12/12)" and row[-1].rstrip(" |") == "12"  # one pair per task and repeat (not 24)
    assert main([*args, "backbone=gpt5_mini", "run.dry_run=true"]) == 0
    assert "both brackets: 24.0 calls" in capsys.readouterr().out  # 6 tasks x 2 brackets x 2 repeats
