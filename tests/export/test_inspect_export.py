"""Round trip: run records -> inspect_ai eval logs (benchmarks.analysis.inspect_export) -> read back
with ``inspect_ai.log.read_eval_log``: samples, per-task scores, tokens and cost equal the records,
and the eval results equal the tables ``scripts.report`` writes.

Two sets of records: a scripted run of the demo (Full and ReConMem on the three demo samples,
SCRIPTED replies, fake evaluator) and the fixture records (priced ledgers, an errored and a missing
sample, CAB issues with every status)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log  # noqa: E402

from benchmarks import records as rec  # noqa: E402
from benchmarks.analysis.inspect_export import export_runs  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "results"


@pytest.fixture(scope="module")
def demo(demo_results, tmp_path_factory):
    """The scripted demo's records, their export and the report built from the same records."""
    from benchmarks.analysis.report import build_report

    tmp = tmp_path_factory.mktemp("inspect_demo")
    written = export_runs([demo_results], tmp / "logs", n_resamples=200)
    report = build_report([demo_results], tmp / "report", n_resamples=200, tsne=False, allow_scripted=True)
    return {"root": tmp, "written": written, "report": report}


def _record_numbers(run_dir: Path) -> dict:
    """What the records say, read through benchmarks.records: selected ids, task outcomes, usage, cost."""
    manifest = rec.RunDir(run_dir).manifest_file()
    ids = [e["sample_id"] for e in manifest["selected"]]
    tasks, tokens, cost, calls = {}, [0, 0], 0.0, 0
    for sid in ids:
        result = rec.RunDir(run_dir).sample(sid).result()
        if result is None:
            entry = rec.manifest_selection(manifest)[sid]
            result = rec.missing_result(entry)
        for t in result.get("tasks") or []:
            tasks[(sid, t["req_id"])] = bool(t["passed"]) and result["status"] == "ok"
        events = rec.RunDir(run_dir).sample(sid).ledger()
        usage, c = rec.usage_of(events)
        if result.get("usage"):
            assert usage["input_tokens"] == result["usage"]["input_tokens"]  # the records agree with themselves
        tokens[0] += usage["input_tokens"]
        tokens[1] += usage["output_tokens"]
        cost += c
        calls += usage["calls"]
    return {"ids": ids, "tasks": tasks, "tokens": tokens, "cost": cost, "calls": calls}


def _log_numbers(log) -> dict:
    tasks, tokens, cost, calls = {}, [0, 0], 0.0, 0
    for s in log.samples:
        for key, score in (s.scores or {}).items():
            tasks[(s.id, key)] = score.value == "C"
        for usage in s.model_usage.values():
            tokens[0] += usage.input_tokens
            tokens[1] += usage.output_tokens
            cost += usage.total_cost or 0.0
        calls += sum(1 for e in s.events if e.event == "model")
    return {"ids": [s.id for s in log.samples], "tasks": tasks, "tokens": tokens, "cost": cost, "calls": calls}


def test_demo_round_trip_equals_the_records(demo, capsys):
    assert len(demo["written"]) == 2
    lines = []
    for exported in demo["written"]:
        log = read_eval_log(str(exported.path))
        mine, theirs = _log_numbers(log), _record_numbers(exported.run_dir)
        assert mine["ids"] == theirs["ids"] and len(mine["ids"]) == 3
        assert mine["tasks"] == theirs["tasks"] and len(mine["tasks"]) == 6
        assert mine["tokens"] == theirs["tokens"] and mine["calls"] == theirs["calls"]
        assert math.isclose(mine["cost"], theirs["cost"], abs_tol=1e-9)
        total = next(iter(log.stats.model_usage.values()))
        assert [total.input_tokens, total.output_tokens] == theirs["tokens"]
        assert log.eval.task == "demo" and log.eval.solver == exported.run_dir.parent.name
        assert log.eval.model == "scripted/scripted_demo:reply" and "scripted" in log.eval.tags
        embedder = log.eval.metadata["manifest"]["embedder"]  # embedder.device: auto, resolved and recorded
        assert embedder["device_setting"] == "auto" and embedder["device"] in ("cpu", "cuda")
        lines.append(f"{log.eval.solver}: samples {len(mine['ids'])}, tasks {len(mine['tasks'])} "
                     f"({sum(mine['tasks'].values())} passed), tokens in/out {mine['tokens'][0]}/{mine['tokens'][1]}, "
                     f"cost ${mine['cost']:.6f} (records: {theirs['tokens'][0]}/{theirs['tokens'][1]}, "
                     f"${theirs['cost']:.6f})")
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def test_demo_results_equal_the_report(demo):
    """Pass@1 and CR (Table 1) and tokens per conversation (Table 3) of each log equal report's CSVs."""
    import pandas as pd

    t1 = pd.read_csv(demo["root"] / "report" / "demo" / "table1.csv", comment="#")
    t3 = pd.read_csv(demo["root"] / "report" / "demo" / "table3.csv", comment="#")
    for exported in demo["written"]:
        log = read_eval_log(str(exported.path), header_only=True)
        scores = {s.name: {k: m.value for k, m in s.metrics.items()} for s in log.results.scores}
        method = log.eval.solver
        for subset in ("single-hop", "multi-hop"):
            row = t1[(t1["method"] == method) & (t1["subset"] == subset) & (t1["backbone"] == "local")].iloc[0]
            assert scores["pass_at_1"][subset] == pytest.approx(row["pass1"])
            assert scores["cr"][subset] == pytest.approx(row["cr"])
            assert scores["n_tasks"][subset] == row["n_tasks"]
            row3 = t3[(t3["method"] == method) & (t3["subset"] == subset) & (t3["backbone"] == "local")].iloc[0]
            assert scores["e2e_tokens_per_conversation"][subset] == pytest.approx(row3["e2e_tokens_per_conversation"])
    assert log.results.scores[0].name == "pass_at_1"


def test_model_events_carry_the_prompt_the_method_built(demo):
    exported = next(e for e in demo["written"] if e.run_dir.parent.name == "reconmem")
    log = read_eval_log(str(exported.path), resolve_attachments=True)  # inspect stores long texts once
    sample = log.samples[0]
    contexts = rec.RunDir(exported.run_dir).sample(str(sample.id)).contexts()
    responses = [e for e in sample.events if e.metadata.get("purpose") in ("turn_generation", "task_generation")]
    assert len(responses) == len(contexts)
    for event, row in zip(responses, contexts):
        built = row["context"]["messages"]
        assert [(m.role, m.text) for m in event.input] == [(m["role"], m["content"]) for m in built]
        assert [i["id"] for i in event.metadata["context_items"]] == [i["id"] for i in row["context"]["items"]]
        assert {"kind", "source", "meta"} <= set(event.metadata["context_items"][0])
    memory = [e for e in sample.events if e.metadata.get("purpose") == "memory_update"]
    assert memory and all(not e.input and "not recorded" in e.metadata["prompt"] for e in memory)
    users = [m for m in sample.messages if m.role == "user"]
    conversation = rec.RunDir(exported.run_dir).sample(str(sample.id)).conversation()
    assert [m.text for m in users] == [r["content"] for r in conversation if r["role"] == "user"]


def test_fixture_records_round_trip_with_cost_errors_missing_and_cab(tmp_path):
    import shutil

    root = Path(shutil.copytree(FIXTURES, tmp_path / "results"))
    (root / "locoeval" / "gpt5_mini" / "reconmem" / "fixture" / "samples" / "s2" / "result.json").unlink()  # never finished
    written = export_runs([root], tmp_path / "logs", n_resamples=50)
    assert len(written) == 12
    by_dir = {e.run_dir.resolve(): e for e in written}
    priced = 0.0
    for run_dir, exported in by_dir.items():
        log = read_eval_log(str(exported.path))
        manifest = rec.RunDir(run_dir).manifest_file()
        ids = [e["sample_id"] for e in manifest["selected"]]
        assert [s.id for s in log.samples] == ids
        if manifest["family"] == "locoeval":
            mine, theirs = _log_numbers(log), _record_numbers(run_dir)
            assert mine["tasks"] == theirs["tasks"] and mine["tokens"] == theirs["tokens"]
            assert math.isclose(mine["cost"], theirs["cost"], abs_tol=1e-9)
            priced += mine["cost"]
        for s in log.samples:
            result = rec.RunDir(run_dir).sample(str(s.id)).result()
            status = s.metadata["status"]
            if result is None:
                assert status == "missing" and s.error.message.startswith("missing:")
                assert all(v.value == "I" for v in s.scores.values())
            elif s.metadata["excluded_reason"]:
                assert status == "excluded" and s.scores is None
            elif result["status"] in ("error", "judge_error"):
                assert s.error is not None and result["status"] in s.error.message
            else:
                assert s.error is None
            if manifest["family"] == "cab" and s.scores:
                expected = result["verdict"] if result and result["status"] == "ok" else "INCORRECT"
                assert s.scores["judgment"].value == expected
    assert priced > 0
    statuses = {s.metadata["status"] for e in written for s in read_eval_log(str(e.path)).samples}
    assert {"ok", "error", "missing", "excluded", "judge_error"} <= statuses, statuses


def test_cli_writes_logs(tmp_path):
    from scripts.export_inspect import main

    assert main([str(FIXTURES / "cab"), "--out", str(tmp_path / "cab_logs"), "--resamples", "10"]) == 0
    logs = sorted((tmp_path / "cab_logs").glob("*.eval"))
    assert len(logs) == 4
    log = read_eval_log(str(logs[0]), header_only=True)
    assert log.eval.task == "cab" and {s.name for s in log.results.scores} >= {"correct_pct"}
    assert main([str(tmp_path / "nothing"), "--out", str(tmp_path / "x")]) == 2
    json.dumps(log.eval.metadata["data_checksums"])  # serialisable as written
