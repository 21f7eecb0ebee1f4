"""Issue 24.1: a missing or interrupted sample stays in its method's denominator (fixture records).

Every method is scored over the sample ids its run manifest selected (``selected``): a selected
sample without a finished record (no result.json, or ``interrupted``) counts its tasks as failed, is
shown in the ``Miss.`` column, marks the method incomplete (``‡``), and an incomplete method is never
the strongest baseline of a Δ. The run's own summary.json scores the same way.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.analysis import tables
from benchmarks.analysis.records import load_runs


def _copy(results_dir: Path, tmp_path: Path, backbones: tuple[str, ...] = ("qwen3_235b", "gpt5_mini")) -> Path:
    root = tmp_path / "runs"
    for bb in backbones:
        shutil.copytree(results_dir / "locoeval" / bb, root / "locoeval" / bb)
    return root


def _table1(root: Path):
    runs = load_runs([root])
    return tables.table1(runs.tasks_frame("locoeval"), runs.samples_frame("locoeval"), n_resamples=200, names=runs.labels)


def _cell(t, subset, backbone, method, col):
    d = t.data
    row = d[(d.subset == subset) & (d.backbone == backbone) & (d.method == method)]
    assert len(row) == 1
    return row.iloc[0][col]


def _md_cell(t, row_prefix, column, nth=0):
    md = t.to_markdown().splitlines()
    header = next(line for line in md if line.startswith("| Model")).split(" | ")
    rows = [line.split(" | ") for line in md if line.startswith(row_prefix)]
    return rows[nth][header.index(column)]


def test_a_deleted_result_counts_its_tasks_as_failed(results_dir, tmp_path):
    """Mem0^R / Qwen3 single-hop: s1 [T, F] + s2 [T] = 66.667 (2/3). Deleting s1's result.json gave
    100.000† (1/1) before; now s1's two tasks count as failed: 33.333‡ (1/3), Miss. = 1."""
    root = _copy(results_dir, tmp_path)
    assert _cell(_table1(root), "single-hop", "qwen3_235b", "mem0r", "pass1") == pytest.approx(200 / 3)
    (root / "locoeval" / "qwen3_235b" / "mem0r" / "fixture" / "samples" / "s1" / "result.json").unlink()
    t = _table1(root)
    assert _cell(t, "single-hop", "qwen3_235b", "mem0r", "pass1") == pytest.approx(100 / 3)
    assert _cell(t, "single-hop", "qwen3_235b", "mem0r", "n_tasks") == 3
    assert _cell(t, "single-hop", "qwen3_235b", "mem0r", "n_missing") == 1
    assert bool(_cell(t, "single-hop", "qwen3_235b", "mem0r", "incomplete"))
    assert _md_cell(t, "| openrouter", "Mem0^R Pass@1") == "33.333‡"
    assert _md_cell(t, "| openrouter", "Mem0^R Miss.") == "1"
    assert _cell(t, "single-hop", "overall", "mem0r", "pass1") == pytest.approx(200 / 6)  # 1/3 + 1/3
    assert _cell(t, "multi-hop", "qwen3_235b", "mem0r", "n_missing") == 0  # s1 is single-hop
    assert "Miss. = selected samples" in t.to_markdown()


def test_an_incomplete_method_is_never_the_strongest_baseline(results_dir, tmp_path):
    """Qwen3 only, multi-hop: Full, Vanilla RAG, Mem0^R and ReConMem all pass 1 of 5 tasks (20.000). Deleting
    Vanilla RAG's s3 result.json ([F, F, F]) made it 50.000† (1/2) and the baseline of Δ (−30.000) before;
    now it is 20.000‡ (Miss. 1) and the Δ is against Full History (= 0.000)."""
    root = _copy(results_dir, tmp_path, ("qwen3_235b",))
    (root / "locoeval" / "qwen3_235b" / "vanilla_rag" / "fixture" / "samples" / "s3" / "result.json").unlink()
    t = _table1(root)
    assert _cell(t, "multi-hop", "qwen3_235b", "vanilla_rag", "pass1") == pytest.approx(20)
    assert _cell(t, "multi-hop", "qwen3_235b", "vanilla_rag", "n_missing") == 1
    assert _cell(t, "multi-hop", "overall", "reconmem", "baseline") == "full"
    assert _cell(t, "multi-hop", "overall", "reconmem", "delta_pp") == pytest.approx(0)
    assert _md_cell(t, "| Overall", "Vanilla RAG Pass@1", nth=1) == "20.000‡"
    md = t.to_markdown()
    assert "Δ vs Full History" in md and "Multi-hop: incomplete (missing samples, not candidates" in md


def test_an_incomplete_proposed_method_marks_its_delta(results_dir, tmp_path):
    root = _copy(results_dir, tmp_path, ("qwen3_235b",))
    (root / "locoeval" / "qwen3_235b" / "reconmem" / "fixture" / "samples" / "s1" / "result.json").unlink()
    t = _table1(root)
    assert _cell(t, "single-hop", "qwen3_235b", "reconmem", "pass1") == pytest.approx(100 / 3)  # s2 [T] of 3 tasks
    delta = _md_cell(t, "| openrouter", "Δ vs Mem0^R pp")
    assert delta.endswith("‡")


def test_an_interrupted_sample_counts_as_failed(results_dir, tmp_path):
    root = _copy(results_dir, tmp_path, ("qwen3_235b",))
    p = root / "locoeval" / "qwen3_235b" / "mem0r" / "fixture" / "samples" / "s2" / "result.json"
    r = json.loads(p.read_text())
    r.update(status="interrupted", error="CostLimitReached: run.cost_limit_usd=1 reached",
             tasks=[{**t, "passed": False, "outcome": "not_run"} for t in r["tasks"]])
    p.write_text(json.dumps(r))
    t = _table1(root)
    assert _cell(t, "single-hop", "qwen3_235b", "mem0r", "pass1") == pytest.approx(100 / 3)  # s1 [T, F] + s2 failed
    assert _cell(t, "single-hop", "qwen3_235b", "mem0r", "n_missing") == 1
    v = load_runs([root]).validity("locoeval").set_index("method")
    assert (v.loc["mem0r", "scored"], v.loc["mem0r", "missing"], v.loc["mem0r", "unfinished"]) == (4, 1, 1)


def test_a_manifest_without_selected_still_counts_a_deleted_result(results_dir, tmp_path):
    """Manifests written before ``selected``: a folder without result.json and n_selected say what is missing;
    the tasks are borrowed from another method's record of the same sample."""
    root = _copy(results_dir, tmp_path, ("qwen3_235b",))
    run = root / "locoeval" / "qwen3_235b" / "mem0r" / "fixture"
    for d in (root / "locoeval" / "qwen3_235b").glob("*/fixture"):
        m = json.loads((d / "manifest.json").read_text())
        m.pop("selected")
        (d / "manifest.json").write_text(json.dumps(m))
    shutil.rmtree(run / "samples" / "s1")  # the folder too: only n_selected = 4 says a sample is missing
    runs = load_runs([root])
    t = tables.table1(runs.tasks_frame("locoeval"), runs.samples_frame("locoeval"), n_resamples=100)
    assert _cell(t, "single-hop", "qwen3_235b", "mem0r", "pass1") == pytest.approx(100 / 3)
    assert _cell(t, "single-hop", "qwen3_235b", "mem0r", "n_missing") == 1
    assert _cell(t, "single-hop", "qwen3_235b", "full", "n_missing") == 0  # s5: n_selected = 4 records, nothing missing
    assert any("manifest without 'selected'" in w for w in runs.warnings)


def test_the_runs_own_summary_counts_missing_samples(results_dir, tmp_path):
    """summary.json's Pass@1 (benchmarks.locoeval.metrics.summarize_run over the selected ids) had the same bias."""
    from benchmarks.locoeval import metrics

    root = _copy(results_dir, tmp_path, ("qwen3_235b",))
    run = root / "locoeval" / "qwen3_235b" / "mem0r" / "fixture"
    (run / "samples" / "s1" / "result.json").unlink()
    ids = ["s1", "s2", "s3", "s4"]
    summary = metrics.summarize_run(run, sample_ids=ids)
    assert summary["pass_at_1"]["single-hop"] == pytest.approx(1 / 3)  # before: 1.0 (s2 alone)
    assert (summary["n_missing"], summary["complete"], summary["n_tasks"]) == (1, False, 8)


def test_cab_missing_issue_counts_as_incorrect(results_dir, tmp_path):
    """CAB: ReConMem's i1 (CORRECT) result.json deleted: Correct falls from 2/4 (i1, i2) to 1/4, Missing 1, ‡
    (before: 1/3 = 33.33 over the three issues left)."""
    from benchmarks.analysis import cab_tables

    root = tmp_path / "runs"
    shutil.copytree(results_dir / "cab", root / "cab")
    (root / "cab" / "qwen3_235b" / "reconmem" / "fixture" / "samples" / "i1" / "result.json").unlink()
    runs = load_runs([root])
    summary = cab_tables.cab_summary(cab_tables.cab_records(runs, "cab")).set_index("method")
    assert summary.loc["reconmem", "correct_pct"] == pytest.approx(25)
    assert (summary.loc["reconmem", "missing"], summary.loc["reconmem", "scored"]) == (1, 4)
    assert "| Missing issues (counted incorrect) | 0 | 0 | 0 | 1 |" in cab_tables.table2(summary.reset_index()).to_markdown()
