"""Figure data functions (numbers) and the PNG / PDF writers, on the fixture records."""

from __future__ import annotations

import pandas as pd
import pytest
from analysis_helpers import hash_embed

from benchmarks.analysis import coverage, figures, tsne


def _png_size(path):
    import matplotlib.image as mpimg

    img = mpimg.imread(path)
    return img.shape[1], img.shape[0]


def test_per_turn_tokens_figure5(runset, tmp_path):
    data = figures.per_turn_tokens(runset.ledger_frame("locoeval", methods=["reconmem", "full"]))
    d = data.set_index(["backbone", "method", "turn"])
    # Full: turn t costs 100 t input + 50 output; mock-user calls excluded; task phase excluded.
    assert d.loc[("qwen3_235b", "full", 10), "mean_tokens"] == 100 * 10 + 50
    assert d.loc[("gpt5_mini", "full", 10), "mean_tokens"] == 2 * 100 * 10 + 50
    # ReConMem: (300 + 200 + 150) input + 120 output per turn, flat; s3 errored so 3 samples at turn 1.
    assert d.loc[("qwen3_235b", "reconmem", 1), "mean_tokens"] == 650 + 120
    assert d.loc[("qwen3_235b", "reconmem", 1), "n_samples"] == 3
    assert d.loc[("qwen3_235b", "full", 61), "n_samples"] == 1  # only s4 is that long
    assert data["turn"].max() == 61
    paths = figures.figure5(data, tmp_path)
    assert [p.suffix for p in paths] == [".png", ".pdf"]
    w, h = _png_size(paths[0])
    assert w > 600 and h > 300
    assert paths[1].read_bytes()[:4] == b"%PDF"


def test_pass_by_k_and_l_figure8(runset, tmp_path):
    tasks = runset.tasks_frame("locoeval")
    by_k = figures.pass_by_group(tasks, "k").set_index(["method", "group"])
    by_l = figures.pass_by_group(tasks, "l").set_index(["method", "group"])
    # k = 1 is s2 only: full passes on gpt5_mini, fails on qwen3_235b.
    assert by_k.loc[("full", "1"), "pass1"] == pytest.approx(50)
    # k = 2 (s1, s4) for reconmem: qwen [T,T],[T,F]; gpt [T,T],[T,F] -> 6/8.
    assert by_k.loc[("reconmem", "2"), "pass1"] == pytest.approx(75)
    assert by_k.loc[("reconmem", "2"), "n_tasks"] == 8
    # l in [50, 60) is s3 (55 turns); reconmem/qwen errored there: its 3 tasks count as failed,
    # gpt passes 3/3 -> 3/6 (before the one-denominator rule: gpt only, 3/3).
    assert by_l.loc[("reconmem", "[50, 60)"), "pass1"] == pytest.approx(50)
    assert by_l.loc[("reconmem", "[50, 60)"), "n_tasks"] == 6
    assert "reconmem_wo_gae" not in by_k.index.get_level_values(0)  # Figure 8 shows the Table 1 methods
    assert figures.length_interval(30) == "[30, 40)" and figures.length_interval(None) is None
    with pytest.raises(ValueError, match="'k' or 'l'"):
        figures.pass_by_group(tasks, "x")
    paths = figures.figure8(figures.pass_by_group(tasks, "k"), figures.pass_by_group(tasks, "l"), tmp_path)
    assert all(p.stat().st_size > 5000 for p in paths)


def test_coverage_figure6(runset, tmp_path):
    summary = coverage.coverage_summary(coverage.coverage_frame(runset.merged_samples("locoeval")), n_resamples=200)
    paths = figures.figure6(summary, tmp_path)
    assert [p.name for p in paths] == ["fig6_coverage.png", "fig6_coverage.pdf"]
    assert _png_size(paths[0])[0] > 800


def test_tsne_figure7_with_a_stand_in_embedder(runset, tmp_path):
    items = tsne.retrieved_items(runset.merged_samples("locoeval"))
    # reconmem task contexts: 3 semantic-route memories (original) + 1 memory reached from code (dual)
    # per task-run; 3 code hits (dual) + 1 file reached from a memory (original); recent turns excluded.
    per_branch = items.groupby(["panel", "branch"]).size()
    task_runs = 5 + 8  # qwen: s1, s2, s4 (s3 errored); gpt: all four
    assert per_branch[("semantic", "original_query")] == 3 * task_runs
    assert per_branch[("semantic", "dual_query")] == task_runs
    assert per_branch[("structural", "dual_query")] == 3 * task_runs
    assert "history_turn" not in set(items["item_id"].str.slice(0, 1))
    points = tsne.tsne_points(items, embed=hash_embed, seed=0)
    assert len(points) == len(items) and points[["x", "y"]].notna().all().all()
    paths = tsne.figure7(points, tmp_path)
    assert paths[0].stat().st_size > 5000
    assert tsne.tsne_points(items.head(2), embed=hash_embed).empty  # too few points: nothing to draw


def test_empty_ledger_gives_empty_curve():
    assert figures.per_turn_tokens(pd.DataFrame()).empty
