"""The record loader on the fixture runs: discovery, statuses, frames, token accounting."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmarks.analysis import labels
from benchmarks.analysis.records import load_runs
from benchmarks.analysis.run_records import CAB, LOCOEVAL, load_run
from benchmarks.records import RecordError
from benchmarks.accounting import summarise_events


def test_discovers_every_run(runset):
    keys = {(r.benchmark, r.backbone, r.method) for r in runset.runs}
    assert len(runset.runs) == 12
    assert ("locoeval", "gpt5_mini", "vanilla_rag") not in keys  # the missing cell
    assert {r.family for r in runset.runs if r.benchmark == "cab"} == {CAB}
    assert {r.family for r in runset.runs if r.benchmark == "locoeval"} == {LOCOEVAL}
    assert any("1 unfinished sample folder(s) (no result.json) outside the manifest's selection" in w
               for w in runset.warnings)


def test_labels_come_from_records_then_conf(runset, results_dir, tmp_path):
    names = runset.labels
    assert names.method_label("mem0r") == "Mem0^R"
    assert names.backbone_config_label("qwen3_235b") == "Qwen3-235B"
    assert names.backbone_label("qwen3_235b") == "openrouter/qwen/qwen3-235b-a22b-2507 (Qwen3-235B)"
    assert names.method_label("memgpt") == "MemGPT"  # no run: conf/method/memgpt.yaml
    assert names.method_label("no_such_method") == "no_such_method"
    assert labels.Labels().backbone_label("qwen3_235b") == "Qwen3-235B"  # no runs: the config label alone
    # a label recorded by one set of runs does not leak into another set (no registry between loads)
    run = _copy_run(results_dir, tmp_path, "qwen3_235b", "mem0r")
    m = json.loads((run / "manifest.json").read_text())
    m["method_label"] = "Mem0R (renamed)"
    (run / "manifest.json").write_text(json.dumps(m))
    assert load_runs(tmp_path).labels.method_label("mem0r") == "Mem0R (renamed)"
    assert runset.labels.method_label("mem0r") == load_runs(results_dir).labels.method_label("mem0r") == "Mem0^R"


def test_samples_frame_keeps_errored_samples_with_their_status(runset):
    samples = runset.samples_frame("locoeval")
    rm = samples[(samples.method == "reconmem") & (samples.backbone == "qwen3_235b")].set_index("sample_id")
    assert rm.loc["s3", "status"] == "error"
    assert rm.loc["s3", "error"].startswith("RuntimeError")
    assert bool(rm.loc["s3", "errored"]) and bool(rm.loc["s3", "scored"])
    assert "s5" not in set(samples.sample_id)  # unfinished: no result.json


def test_tasks_frame_counts_errored_samples_as_failed(runset):
    tasks = runset.tasks_frame("locoeval")
    rm = tasks[(tasks.method == "reconmem") & (tasks.backbone == "qwen3_235b")]
    assert sorted(rm.sample_id.unique()) == ["s1", "s2", "s3", "s4"]
    s3 = rm[rm.sample_id == "s3"]
    assert list(s3.req_id) == ["r1", "r2", "r3"] and not s3.passed.any() and s3.errored.all()
    assert set(s3.outcome) == {"not_run"}
    assert len(tasks) == 8 * 8  # 8 runs x 8 tasks, the errored sample's 3 included
    assert set(tasks.columns) >= {"repo_cluster", "n_turns", "n_tasks", "passed", "errored"}


def _copy_run(results_dir, tmp_path, backbone, method, bench="locoeval"):
    src = results_dir / bench / backbone / method / "fixture"
    dst = tmp_path / bench / backbone / method / "fixture"
    shutil.copytree(src, dst)
    return dst


def test_old_errored_record_borrows_the_task_list(results_dir, tmp_path):
    """Records of old runners: an errored result with ``tasks: []`` counts n_tasks failures, named
    after another run's record of the same sample (so paired statistics line up)."""
    rm = _copy_run(results_dir, tmp_path, "qwen3_235b", "reconmem")
    _copy_run(results_dir, tmp_path, "qwen3_235b", "full")
    p = rm / "samples" / "s3" / "result.json"
    data = json.loads(p.read_text())
    data.update(tasks=[], errored=None)
    p.write_text(json.dumps(data))
    tasks = load_runs(tmp_path).tasks_frame("locoeval")
    s3 = tasks[(tasks.method == "reconmem") & (tasks.sample_id == "s3")]
    assert list(s3.req_id) == ["r1", "r2", "r3"] and not s3.passed.any()
    shutil.rmtree(tmp_path / "locoeval" / "qwen3_235b" / "full")
    tasks = load_runs(tmp_path).tasks_frame("locoeval")
    assert list(tasks[tasks.sample_id == "s3"].req_id) == ["#1", "#2", "#3"]  # n_tasks placeholders


def test_family_and_models_from_old_records(results_dir, tmp_path):
    """No manifest benchmark/family/models: the config.yaml names them (legacy runner path)."""
    run = _copy_run(results_dir, tmp_path, "qwen3_235b", "mem0", bench="cab")
    (run / "manifest.json").write_text(json.dumps({"git_rev": "x", "started": "2026-01-01"}))
    cfg = (run / "config.yaml").read_text().replace("name: cab", "name: cab_v3").replace(
        "_target_: benchmarks.cab.task.Benchmark", "runner: benchmarks.cab.runner.run_benchmark")
    (run / "config.yaml").write_text(cfg)
    r = load_run(run)
    assert (r.benchmark, r.family) == ("cab_v3", CAB)
    assert r.models == {"backbone": "openrouter/qwen/qwen3-235b-a22b-2507", "user": "gemini/gemini-2.5-flash",
                        "judge": "gemini/gemini-2.5-flash"}
    assert not r.scripted


def test_scripted_runs_are_detected(results_dir, tmp_path):
    run = _copy_run(results_dir, tmp_path, "gpt5_mini", "full")
    m = json.loads((run / "manifest.json").read_text())
    m.pop("scripted")
    m["models"]["backbone"] = "scripted/tests.fake:reply"
    (run / "manifest.json").write_text(json.dumps(m))
    runs = load_runs(tmp_path)
    assert [r.method for r in runs.scripted_runs] == ["full"]


def test_backbones_with_different_models_are_kept_apart(results_dir, tmp_path):
    run = _copy_run(results_dir, tmp_path, "gpt5_mini", "full")
    other = tmp_path / "locoeval" / "gpt5_mini" / "full" / "other"
    shutil.copytree(run, other)
    m = json.loads((other / "manifest.json").read_text())
    m["models"]["backbone"], m["run_id"] = "openai/gpt-5-nano", "other"
    (other / "manifest.json").write_text(json.dumps(m))
    runs = load_runs(tmp_path)
    assert sorted(r.backbone for r in runs.runs) == ["gpt5_mini@openai/gpt-5-mini", "gpt5_mini@openai/gpt-5-nano"]
    assert any("different models" in w for w in runs.warnings)
    assert runs.labels.backbone_label("gpt5_mini@openai/gpt-5-nano") == "openai/gpt-5-nano (GPT-5 mini)"


def test_validity_block(runset):
    v = runset.validity("locoeval").set_index(["backbone", "method"])
    row = v.loc[("qwen3_235b", "reconmem")]
    assert (row["scored"], row["tasks"], row["errored"], row["excluded"], row["missing"]) == (4, 8, 1, 0, 0)
    assert row["model"] == "openrouter/qwen/qwen3-235b-a22b-2507" and row["user_model"] == "gemini/gemini-2.5-flash"
    assert v.loc[("qwen3_235b", "full"), "unfinished"] == 1  # s5 has no result.json
    cab = runset.validity("cab").set_index("method")
    assert set(cab["excluded"]) == {2}  # i4 and i6, for every method alike
    assert "i6: docker_unavailable in qwen3_235b/native_strands" in cab.loc["full", "excluded_why"]
    assert cab.loc["native_strands", "errored"] == 1 and cab.loc["mem0", "errored"] == 1
    assert cab.loc["full", "judge_model"] == "gemini/gemini-2.5-flash"


def test_validity_counts_missing_samples(results_dir, tmp_path):
    """A selected sample whose folder is gone is still scored (as failed) and counted as missing."""
    _copy_run(results_dir, tmp_path, "gpt5_mini", "full")
    rm = _copy_run(results_dir, tmp_path, "gpt5_mini", "reconmem")
    shutil.rmtree(rm / "samples" / "s2")
    v = load_runs(tmp_path).validity("locoeval").set_index("method")
    assert (v.loc["reconmem", "scored"], v.loc["reconmem", "missing"], v.loc["full", "missing"]) == (4, 1, 0)
    assert (v.loc["reconmem", "records"], v.loc["reconmem", "tasks"]) == (3, 8)


def test_shards_are_merged(tmp_path):
    from analysis_helpers import FIXTURES

    runs = load_runs(FIXTURES / "sharded")
    full = next(r for r in runs.runs if r.method == "full")
    assert full.manifest["n_shards"] == 2 and full.manifest["shards_present"] == ["0/2", "1/2"]
    assert len(full.shards) == 2 and len(full.samples) == 4 and not runs.warnings
    # Shard manifests gathered without the merged view (e.g. copied from the jobs' machines).
    shutil.copytree(FIXTURES / "sharded", tmp_path / "s")
    run = tmp_path / "s" / "locoeval" / "gpt5_mini" / "full" / "fixture"
    (run / "manifest.json").unlink()
    (run / "summary.json").unlink()
    merged = load_run(run)
    assert merged.manifest["started"] == "2026-01-06T01:00:00+00:00"  # the first shard's start
    assert merged.manifest["n_selected"] == 4 and merged.models["backbone"] == "openai/gpt-5-mini"
    assert merged.manifest["command"].endswith("run.shard=0/2; python -m scripts.run method=full backbone=gpt5_mini run.shard=1/2")
    (run / "shards" / "manifest-1-of-2.json").unlink()
    runs = load_runs(tmp_path / "s")
    assert any("shard(s) 1/2 have no manifest" in w for w in runs.warnings)
    # Shards that called different models are reported.
    shutil.copytree(FIXTURES / "sharded", tmp_path / "t")
    p = tmp_path / "t" / "locoeval" / "gpt5_mini" / "full" / "fixture" / "shards" / "manifest-1-of-2.json"
    m = json.loads(p.read_text())
    m["models"]["backbone"] = "openai/gpt-5-nano"
    p.write_text(json.dumps(m))
    assert any("shards disagree on manifest 'models'" in w for w in load_runs(tmp_path / "t").warnings)
