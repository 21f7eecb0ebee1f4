"""Table 1 compares every method over the samples all of them were scored on (issue 32.3).

Fixture records of Qwen3 (tests/fixtures/runs), with Vanilla RAG re-run as ``run.limit=3``: its manifest
selects s1, s2, s3 (not s4) and it passes all three tasks of s3. Multi-hop per sample (passed tasks):
Full s3 [F, F, T] s4 [F, F]; Mem0^R s3 [T, F, F] s4 [F, F]; ReConMem s3 [F, F, F] s4 [T, F]; Vanilla RAG s3
[T, T, T]. Before, Vanilla RAG's 100.000† over s3 alone was the strongest baseline and the Δ subtracted
it from ReConMem's Pass@1 over s3 + s4 (20 − 100 = −80), while the paired bootstrap beside it used s3
alone (−100): two different numbers for one comparison.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.analysis import tables
from benchmarks.analysis.records import load_runs


def _limited_baseline(results_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    shutil.copytree(results_dir / "locoeval" / "qwen3_235b", root / "locoeval" / "qwen3_235b")
    run = root / "locoeval" / "qwen3_235b" / "vanilla_rag" / "fixture"
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["selected"] = [e for e in manifest["selected"] if e["sample_id"] in ("s1", "s2", "s3")]
    manifest["n_selected"] = 3
    (run / "manifest.json").write_text(json.dumps(manifest))
    cfg = run / "config.yaml"
    cfg.write_text(cfg.read_text().replace("run:\n", "run:\n  limit: 3\n", 1))
    shutil.rmtree(run / "samples" / "s4")
    result = run / "samples" / "s3" / "result.json"
    r = json.loads(result.read_text())
    r["tasks"] = [{**t, "passed": True, "outcome": "pass"} for t in r["tasks"]]
    result.write_text(json.dumps(r))
    return root


def _row(t, subset, method):
    d = t.data
    return d[(d.subset == subset) & (d.backbone == "overall") & (d.method == method)].iloc[0]


def test_a_run_limit_baseline_cuts_the_row_to_the_common_samples(results_dir, tmp_path):
    runs = load_runs([_limited_baseline(results_dir, tmp_path)])
    tasks, samples = runs.tasks_frame("locoeval"), runs.samples_frame("locoeval")
    assert set(tasks.loc[tasks.method == "vanilla_rag", "sample_id"]) == {"s1", "s2", "s3"}
    t = tables.table1(tasks, samples, n_resamples=300)
    rm = _row(t, "multi-hop", "reconmem")
    assert rm["baseline"] == "vanilla_rag"
    for m, expected in (("full", 100 / 3), ("mem0r", 100 / 3), ("vanilla_rag", 100.0), ("reconmem", 0.0)):
        row = _row(t, "multi-hop", m)
        assert row["pass1"] == pytest.approx(expected), m
        assert (row["n_samples"], row["n_tasks"], row["n_compared_samples"]) == (1, 3, 1), m
    # Δ and its paired bootstrap over the same three tasks of s3 (before: Δ −80 beside a paired −100).
    assert rm["delta_pp"] == pytest.approx(-100) and rm["paired_diff_pp"] == pytest.approx(-100)
    assert rm["n_paired"] == 3
    single = _row(t, "single-hop", "reconmem")  # s1, s2 were selected by every run: nothing cut
    assert single["n_compared_samples"] == 2 and single["n_samples"] == 2
    md = t.to_markdown()
    assert ("Multi-hop: compared over the samples every method of the row was scored on (the intersection of the "
            "runs' selections); runs cut to them: Qwen3-235B: Full History (2 → 1 samples), Mem0^R (2 → 1 samples), "
            "ReConMem (2 → 1 samples).") in md
    assert "Single-hop: compared over" not in md and "†" not in md


def test_errored_and_missing_samples_stay_in_the_common_set(results_dir, tmp_path):
    """A sample a run selected but never finished is scored (failed) for that run, so it stays in the common set:
    deleting ReConMem's s3 result keeps s3 compared for every method and ReConMem's s3 tasks count as failed."""
    root = _limited_baseline(results_dir, tmp_path)
    (root / "locoeval" / "qwen3_235b" / "reconmem" / "fixture" / "samples" / "s3" / "result.json").unlink()
    runs = load_runs([root])
    t = tables.table1(runs.tasks_frame("locoeval"), runs.samples_frame("locoeval"), n_resamples=100)
    rm = _row(t, "multi-hop", "reconmem")
    assert (rm["n_samples"], rm["n_missing"], rm["pass1"]) == (1, 1, 0.0)
    assert _row(t, "multi-hop", "full")["n_samples"] == 1


def test_table6_compares_over_the_common_samples(results_dir, tmp_path):
    """The ablation run with ``run.limit=1`` (s1 only): its single-hop Δ and paired test are over s1's two
    tasks, and ReConMem is cut to them there (before: ReConMem over s1 + s2)."""
    root = tmp_path / "runs"
    shutil.copytree(results_dir / "locoeval" / "qwen3_235b", root / "locoeval" / "qwen3_235b")
    run = root / "locoeval" / "qwen3_235b" / "reconmem_wo_gae" / "fixture"
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["selected"] = [e for e in manifest["selected"] if e["sample_id"] == "s1"]
    manifest["n_selected"] = 1
    (run / "manifest.json").write_text(json.dumps(manifest))
    for sid in ("s2", "s3", "s4"):
        shutil.rmtree(run / "samples" / sid)
    runs = load_runs([root])
    t = tables.table6(runs.tasks_frame("locoeval"), runs.samples_frame("locoeval"), budgets=runs.budgets("locoeval"),
                      n_resamples=100)
    d = t.data.set_index(["subset", "method"])
    assert d.loc[("single-hop", "reconmem"), "n_samples"] == 1 and d.loc[("single-hop", "reconmem"), "pass1"] == 100
    assert d.loc[("single-hop", "reconmem_wo_gae"), "delta_pp"] == pytest.approx(-50)  # s1 [T, F] vs [T, T]
    assert d.loc[("single-hop", "reconmem_wo_gae"), "n_paired"] == 2
    assert "Single-hop, Qwen3-235B: ReConMem (2 → 1 samples)" in t.to_markdown()
