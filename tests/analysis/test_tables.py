"""Tables 1, 3, 4, 6 on the fixture records, against numbers recomputed by hand from the fixture
design (tests/fixtures/runs/_generate.py): token formulas and pass patterns."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from benchmarks.analysis import tables
from benchmarks.analysis.render import MISSING

N = {"s1": 32, "s2": 45, "s3": 55, "s4": 61}
T = {"s1": 2, "s2": 1, "s3": 3, "s4": 2}
SCALE = {"qwen3_235b": 1, "gpt5_mini": 2}


def full_in(s, bb):
    return SCALE[bb] * (100 * N[s] * (N[s] + 1) / 2 + T[s] * (100 * N[s] + 200))


def rm_in(s, bb, turn_input=300):
    return SCALE[bb] * ((turn_input + 200 + 150) * N[s] + 500 * T[s])


def cr(samples, bb, ref=full_in, mine=rm_in):
    return sum(ref(s, bb) for s in samples) / sum(mine(s, bb) for s in samples)


@pytest.fixture(scope="module")
def frames(runset):
    return runset.tasks_frame("locoeval"), runset.samples_frame("locoeval")


def cell(data, subset, backbone, method, col):
    row = data[(data.subset == subset) & (data.backbone == backbone) & (data.method == method)]
    assert len(row) == 1, (subset, backbone, method)
    return row.iloc[0][col]


def test_table1_pass_at_1_and_cr(frames):
    tasks, samples = frames
    t = tables.table1(tasks, samples, n_resamples=500)
    d = t.data
    assert cell(d, "single-hop", "qwen3_235b", "full", "pass1") == pytest.approx(100 / 3)
    assert cell(d, "single-hop", "qwen3_235b", "reconmem", "pass1") == pytest.approx(100)
    assert cell(d, "single-hop", "qwen3_235b", "vanilla_rag", "pass1") == 0
    assert cell(d, "multi-hop", "qwen3_235b", "reconmem", "pass1") == pytest.approx(50)  # s3 errored: s4 only
    assert cell(d, "multi-hop", "qwen3_235b", "reconmem", "n_samples") == 1
    assert cell(d, "multi-hop", "gpt5_mini", "full", "pass1") == pytest.approx(60)
    # CR: Full / method over the samples both completed (s3 excluded for qwen reconmem).
    assert cell(d, "single-hop", "qwen3_235b", "reconmem", "cr") == pytest.approx(cr(["s1", "s2"], "qwen3_235b"))
    assert cell(d, "multi-hop", "qwen3_235b", "reconmem", "cr") == pytest.approx(cr(["s4"], "qwen3_235b"))
    assert cell(d, "multi-hop", "qwen3_235b", "full", "cr") == 1.0
    # Overall: pooled over backbones; CR pooled as cumulative tokens.
    assert cell(d, "single-hop", "overall", "full", "pass1") == pytest.approx(400 / 6)
    assert cell(d, "multi-hop", "overall", "reconmem", "pass1") == pytest.approx(500 / 7)
    pooled = ((full_in("s4", "qwen3_235b") + full_in("s3", "gpt5_mini") + full_in("s4", "gpt5_mini")) /
              (rm_in("s4", "qwen3_235b") + rm_in("s3", "gpt5_mini") + rm_in("s4", "gpt5_mini")))
    assert cell(d, "multi-hop", "overall", "reconmem", "cr") == pytest.approx(pooled)


def test_table1_missing_cells_are_missing(frames):
    tasks, samples = frames
    t = tables.table1(tasks, samples, n_resamples=200)
    d = t.data
    assert math.isnan(cell(d, "single-hop", "gpt5_mini", "vanilla_rag", "pass1"))
    assert math.isnan(cell(d, "single-hop", "overall", "vanilla_rag", "pass1"))  # one backbone missing
    assert math.isnan(cell(d, "single-hop", "qwen3_235b", "memgpt", "cr"))
    md = t.to_markdown()
    gpt_row = next(line for line in md.splitlines() if line.startswith("| GPT-5 mini"))
    assert gpt_row.split(" | ")[3] == MISSING  # Vanilla RAG Pass@1
    header = next(line for line in md.splitlines() if line.startswith("| Model"))
    memgpt = header.split(" | ").index("MemGPT Pass@1")
    body = [line.split(" | ") for line in md.splitlines() if line.startswith(("| GPT", "| Qwen", "| Overall"))]
    assert body and all(cells[memgpt] == MISSING for cells in body)  # a method with no runs at all
    assert "50.000†" in md  # reconmem multi-hop qwen: fewer samples than the other methods
    csv = t.to_csv().splitlines()
    row = next(line for line in csv if line.startswith("single-hop,gpt5_mini,vanilla_rag,"))
    assert row.split(",")[3:5] == ["", ""]
    tex = t.to_latex()
    assert "Mem0$^{R}$" in tex and r"$^\dagger$" in tex and " -- " in tex


def test_table1_delta_against_strongest_baseline_and_paired_bootstrap(frames):
    tasks, samples = frames
    d = tables.table1(tasks, samples, n_resamples=1000).data
    rm = d[d.method == "reconmem"].set_index(["subset", "backbone"])
    # Strongest baseline by overall Pass@1: Full (66.7 single, 40 multi) over Mem0^R (50, 20).
    assert set(rm["baseline"]) == {"full"}
    assert rm.loc[("single-hop", "overall"), "delta_pp"] == pytest.approx(500 / 6 - 400 / 6)
    assert rm.loc[("single-hop", "gpt5_mini"), "delta_pp"] == pytest.approx(200 / 3 - 100)
    assert rm.loc[("multi-hop", "qwen3_235b"), "delta_pp"] == pytest.approx(30)
    # Paired over task-runs both completed: qwen multi-hop s4 only -> [T,F] vs [F,F] = +50 pp.
    assert rm.loc[("multi-hop", "qwen3_235b"), "paired_diff_pp"] == pytest.approx(50)
    assert rm.loc[("multi-hop", "qwen3_235b"), "n_paired"] == 2
    # Overall multi-hop: 7 common task-runs, 5 vs 3 passed.
    assert rm.loc[("multi-hop", "overall"), "paired_diff_pp"] == pytest.approx(200 / 7)
    lo, hi = rm.loc[("multi-hop", "overall"), ["ci_low_pp", "ci_high_pp"]]
    assert lo <= 200 / 7 <= hi
    # Qwen single-hop: 3 task-runs, reconmem passes all, full passes 1 -> +66.7 pp, all resamples > 0
    assert rm.loc[("single-hop", "qwen3_235b"), "paired_diff_pp"] == pytest.approx(200 / 3)
    assert rm.loc[("single-hop", "qwen3_235b"), "ci_low_pp"] > 0


def test_table3_end_to_end_tokens(frames):
    _, samples = frames
    t = tables.table3(samples)
    d = t.data
    e2e_full = lambda s, bb: full_in(s, bb) + 50 * N[s] + 80 * T[s]  # noqa: E731
    e2e_rm = lambda s, bb: rm_in(s, bb) + 120 * N[s] + 80 * T[s]  # noqa: E731
    col = "e2e_tokens_per_conversation"
    assert cell(d, "single-hop", "qwen3_235b", "full", col) == pytest.approx((e2e_full("s1", "qwen3_235b") + e2e_full("s2", "qwen3_235b")) / 2)
    assert cell(d, "multi-hop", "qwen3_235b", "reconmem", col) == pytest.approx(e2e_rm("s4", "qwen3_235b"))
    avg = (cell(d, "multi-hop", "qwen3_235b", "full", col) + cell(d, "multi-hop", "gpt5_mini", "full", col)) / 2
    assert cell(d, "multi-hop", "average", "full", col) == pytest.approx(avg)
    assert math.isnan(cell(d, "multi-hop", "average", "vanilla_rag", col))
    assert "Average" in t.to_markdown()


def test_table4_stage_breakdown(frames):
    _, samples = frames
    d = tables.table4(samples).data
    sel = d[(d.subset == "single-hop") & (d.backbone == "qwen3_235b")].set_index("stage")
    n1, n2 = N["s1"], N["s2"]
    turn = (350 * n1 + 350 * n2) / 2
    task = (580 * 2 + 580 * 1) / 2
    sketch = (240 * n1 + 240 * n2) / 2
    update = (180 * n1 + 180 * n2) / 2
    total = turn + task + sketch + update
    assert sel.loc["turn_generation", "tokens_per_conversation"] == pytest.approx(turn)
    assert sel.loc["memory_update", "tokens_per_conversation"] == pytest.approx(update)
    assert sel.loc["total", "tokens_per_conversation"] == pytest.approx(total)
    assert sel.loc["memory_sketching", "share_pct"] == pytest.approx(100 * sketch / total)
    assert sel.drop("total")["share_pct"].sum() == pytest.approx(100)
    assert "other" not in sel.index  # reconmem uses only the four stages
    avg = d[(d.subset == "single-hop") & (d.backbone == "average")].set_index("stage")
    assert avg.loc["turn_generation", "share_pct"] == pytest.approx(
        100 * avg.loc["turn_generation", "tokens_per_conversation"] / avg.loc["total", "tokens_per_conversation"])


def test_table6_ablations(frames):
    tasks, samples = frames
    t = tables.table6(tasks, samples)
    d = t.data.set_index(["subset", "method"])
    assert set(t.data.backbone) == {"qwen3_235b"}  # the only backbone with an ablation run
    assert d.loc[("single-hop", "reconmem_wo_gae"), "pass1"] == pytest.approx(200 / 3)
    assert d.loc[("single-hop", "reconmem_wo_gae"), "delta_pp"] == pytest.approx(200 / 3 - 100)
    assert d.loc[("multi-hop", "reconmem_wo_gae"), "pass1"] == pytest.approx(40)  # s3 [T,T,F], s4 [F,F]
    assert d.loc[("multi-hop", "reconmem_wo_gae"), "delta_pp"] == pytest.approx(40 - 50)
    wo_in = lambda s, bb: rm_in(s, bb, turn_input=250)  # noqa: E731
    assert d.loc[("multi-hop", "reconmem_wo_gae"), "cr"] == pytest.approx(cr(["s3", "s4"], "qwen3_235b", mine=wo_in))
    assert math.isnan(d.loc[("multi-hop", "reconmem_wo_smg"), "pass1"])
    md = t.to_markdown()
    assert "66.667 ↓ 33.333" in md and "40.000 ↓ 10.000" in md


def test_tables_write_three_formats(frames, tmp_path):
    tasks, samples = frames
    paths = tables.table1(tasks, samples, n_resamples=100).write(tmp_path)
    assert [p.name for p in paths] == ["table1.md", "table1.tex", "table1.csv"]
    back = pd.read_csv(tmp_path / "table1.csv")
    assert len(back) == 2 * 3 * 7  # subsets x (2 backbones + overall) x methods
    assert (tmp_path / "table1.tex").read_text().count(r"\begin{tabular}") == 2


def test_empty_inputs_give_empty_tables():
    empty = pd.DataFrame(columns=["subset", "backbone", "method", "sample_id", "passed", "repo_cluster", "req_id"])
    s = pd.DataFrame(columns=["subset", "backbone", "method", "sample_id", "status", "input_tokens", "e2e_tokens"])
    assert tables.table1(empty, s).blocks == []
    assert tables.table6(empty, s).blocks == []
    assert "No ok records" in tables.table4(s).to_markdown()


def test_agrees_with_the_locoeval_runner_metrics(frames, results_dir):
    """Table 1 cells equal benchmarks.locoeval.metrics on the same run directories."""
    from benchmarks.locoeval import metrics

    d = tables.table1(*frames, n_resamples=50).data
    for bb in ("qwen3_235b", "gpt5_mini"):
        base = results_dir / "locoeval" / bb
        run = metrics.read_run(base / "reconmem" / "fixture")
        for subset in ("single-hop", "multi-hop"):
            assert cell(d, subset, bb, "reconmem", "pass1") == pytest.approx(100 * metrics.pass_at_1(run["results"], subset=subset))
            ids = [r["sample_id"] for r in run["results"] if r.get("subset") == subset]
            assert cell(d, subset, bb, "reconmem", "cr") == pytest.approx(
                metrics.compression_ratio_between(base / "reconmem" / "fixture", base / "full" / "fixture", sample_ids=ids))
