"""The record loader on the fixture runs: discovery, statuses, frames, token accounting."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmarks.analysis import labels
from benchmarks.analysis.records import CAB, LOCOEVAL, RecordError, load_run, load_runs
from benchmarks.analysis.tokens import category, summarise_events


def test_discovers_every_run(runset):
    keys = {(r.benchmark, r.backbone, r.method) for r in runset.runs}
    assert len(runset.runs) == 11
    assert ("locoeval", "gpt5_mini", "vanilla_rag") not in keys  # the missing cell
    assert {r.family for r in runset.runs if r.benchmark == "cab"} == {CAB}
    assert {r.family for r in runset.runs if r.benchmark == "locoeval"} == {LOCOEVAL}
    assert any("1 unfinished sample" in w for w in runset.warnings)


def test_labels_come_from_records_then_conf(runset):
    assert labels.method_label("mem0r") == "Mem0^R"
    assert labels.backbone_label("qwen3_235b") == "Qwen3-235B"
    assert labels.method_label("memgpt") == "MemGPT"  # no run: conf/method/memgpt.yaml
    assert labels.method_label("no_such_method") == "no_such_method"


def test_samples_frame_keeps_errored_samples_with_their_status(runset):
    samples = runset.samples_frame("locoeval")
    rm = samples[(samples.method == "reconmem") & (samples.backbone == "qwen3_235b")].set_index("sample_id")
    assert rm.loc["s3", "status"] == "error"
    assert rm.loc["s3", "error"].startswith("RuntimeError")
    assert "s5" not in set(samples.sample_id)  # unfinished: no result.json


def test_tasks_frame_only_ok_samples(runset):
    tasks = runset.tasks_frame("locoeval")
    rm = tasks[(tasks.method == "reconmem") & (tasks.backbone == "qwen3_235b")]
    assert sorted(rm.sample_id.unique()) == ["s1", "s2", "s4"]
    assert len(tasks) == 8 * 8 - 3  # 8 runs x 8 tasks, minus the errored sample's 3 tasks
    assert set(tasks.columns) >= {"repo_cluster", "n_turns", "n_tasks", "passed"}


def test_token_sums_exclude_mock_user(runset):
    samples = runset.samples_frame("locoeval").set_index(["backbone", "method", "sample_id"])
    row = samples.loc[("qwen3_235b", "full", "s1")]
    n, tasks = 32, 2
    assert row["input_tokens"] == 100 * n * (n + 1) / 2 + tasks * (100 * n + 200)
    assert row["e2e_tokens"] == row["input_tokens"] + 50 * n + 80 * tasks
    assert row["tok_mock_user"] == n * 10_100
    assert row["excluded_tokens"] == n * 10_100
    gpt = samples.loc[("gpt5_mini", "reconmem", "s2")]
    assert gpt["input_tokens"] == 2 * (650 * 45 + 500)
    assert gpt["memory_tokens"] == 45 * (2 * 200 + 40 + 2 * 150 + 30)  # inputs doubled on gpt5_mini


def test_purpose_categories():
    assert category("mock_user") == category("judge") == category("coverage_judge") == "excluded"
    assert category("turn_generation") == category("maintainer_tool_step") == "response"
    assert category("memory_sketching") == category("persona") == category("something_new") == "memory"
    s = summarise_events([{"purpose": "judge", "input_tokens": 5, "output_tokens": 1},
                          {"purpose": "memory_update", "input_tokens": 3, "output_tokens": 2}])
    assert (s["input_tokens"], s["e2e_tokens"], s["memory_tokens"], s["excluded_tokens"]) == (3, 5, 5, 6)


def test_duplicate_run_ids_are_merged_with_a_warning(tmp_path, results_dir):
    src = results_dir / "locoeval" / "qwen3_235b" / "reconmem" / "fixture"
    dst = tmp_path / "locoeval" / "qwen3_235b" / "reconmem"
    shutil.copytree(src, dst / "fixture")
    shutil.copytree(src, dst / "rerun")
    fixed = dst / "rerun" / "samples" / "s3" / "result.json"
    data = json.loads(fixed.read_text())
    data.update(status="ok", error=None, tasks=[{"req_id": "r1", "passed": True}])
    fixed.write_text(json.dumps(data))
    (dst / "rerun" / "config.yaml").write_text((dst / "rerun" / "config.yaml").read_text().replace("fixture", "rerun"))
    runs = load_runs(tmp_path)
    tasks = runs.tasks_frame("locoeval")
    assert "s3" in set(tasks.sample_id)  # the ok record of the re-run wins
    assert any("appears in run ids" in w for w in runs.warnings)


def test_bad_records_name_the_file(tmp_path):
    run = tmp_path / "locoeval" / "local" / "full" / "x"
    (run / "samples" / "a").mkdir(parents=True)
    (run / "samples" / "a" / "result.json").write_text("{not json")
    with pytest.raises(RecordError, match="result.json"):
        load_run(run)
    with pytest.raises(RecordError, match="no such file"):
        load_runs(tmp_path / "nope")
    (run / "samples" / "a" / "result.json").write_text(json.dumps({"sample_id": "a", "status": "ok", "subset": "single-hop"}))
    with pytest.raises(RecordError, match="no 'tasks' list"):
        load_runs(tmp_path).tasks_frame()
