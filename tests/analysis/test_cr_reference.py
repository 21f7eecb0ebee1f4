"""CR of a retriever variant is measured against Full History under the same retriever (issue 32.5).

Fixture records of Qwen3 copied as BM25 runs (``full_bm25``, ``reconmem_bm25``: the method names and
manifests ``retriever=bm25`` runs get), with ``full_bm25``'s counted input tokens doubled so a CR against
dense Full (the old reference) and one against Full (BM25) differ."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from benchmarks.analysis import cells, tables
from benchmarks.analysis.records import load_runs
from benchmarks.locoeval import metrics
from benchmarks.locoeval.runner import LoCoEval

IDS = ["s1", "s2", "s3", "s4"]


def _variant(root: Path, method: str, retriever: str, token_scale: int = 1) -> Path:
    """A copy of the Qwen3 fixture run of ``method`` as ``<method>_<retriever>``."""
    src = root / "locoeval" / "qwen3_235b" / method / "fixture"
    name = f"{method}_{retriever}"
    dst = root / "locoeval" / "qwen3_235b" / name / "fixture"
    shutil.copytree(src, dst)
    m = json.loads((dst / "manifest.json").read_text())
    m.update(method=name, retriever={"name": retriever})
    (dst / "manifest.json").write_text(json.dumps(m))
    cfg = dst / "config.yaml"
    cfg.write_text(cfg.read_text().replace(f"  name: {method}\n", f"  name: {name}\n", 1))
    for ledger in dst.glob("samples/*/ledger.jsonl"):
        rows = [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]
        for r in rows:
            if r["purpose"] not in ("mock_user", "judge"):
                r["input_tokens"] *= token_scale
        ledger.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dst


@pytest.fixture()
def root(results_dir, tmp_path) -> Path:
    root = tmp_path / "runs"
    shutil.copytree(results_dir / "locoeval" / "qwen3_235b", root / "locoeval" / "qwen3_235b")
    return root


def _dir(root: Path, method: str) -> Path:
    return root / "locoeval" / "qwen3_235b" / method / "fixture"


def test_cr_reference_names_full_under_the_same_retriever():
    assert [metrics.cr_reference(r) for r in (None, "dense", "bm25", "hybrid")] == [
        "full", "full", "full_bm25", "full_hybrid"]
    assert [cells.reference_method(m) for m in ("reconmem", "full", "full_bm25", "reconmem_hybrid", "reconmem_wo_gae")] == [
        "full", "full", "full_bm25", "full_hybrid", "full"]


def test_the_runs_own_summary_measures_cr_against_its_retrievers_full(root):
    bench = LoCoEval()
    rm_bm25 = _variant(root, "reconmem", "bm25")
    assert "cr" not in bench.score(rm_bm25, IDS)  # no Full (BM25) run: no CR (before: against dense Full)
    full_bm25 = _variant(root, "full", "bm25", token_scale=2)
    assert bench.score(full_bm25, IDS)["cr"] == 1.0  # the reference itself (before: 2.0 against dense Full)
    summary = bench.score(rm_bm25, IDS)
    dense = bench.score(_dir(root, "reconmem"), IDS)
    assert summary["cr_reference"] == str(full_bm25)
    assert summary["cr"] == pytest.approx(2 * dense["cr"])  # ReConMem's tokens over twice dense Full's


def test_tables_show_cr_against_full_under_the_same_retriever(root):
    _variant(root, "reconmem", "bm25")
    methods = ["full", "full_bm25", "reconmem_bm25", "reconmem"]

    def table(**kw):
        runs = load_runs([root])
        return tables.table1(runs.tasks_frame("locoeval"), runs.samples_frame("locoeval"), methods=methods,
                             n_resamples=50, **kw)

    t = table()
    d = t.data.set_index(["subset", "backbone", "method"])
    assert math.isnan(d.loc[("single-hop", "qwen3_235b", "reconmem_bm25"), "cr"])  # Full (BM25) absent: —
    assert d.loc[("single-hop", "qwen3_235b", "reconmem"), "cr"] > 1
    _variant(root, "full", "bm25", token_scale=2)
    d = table().data.set_index(["subset", "backbone", "method"])
    for s in ("single-hop", "multi-hop"):
        assert d.loc[(s, "qwen3_235b", "full_bm25"), "cr"] == pytest.approx(1.0)  # before: 0.5 (dense Full / 2x)
        assert d.loc[(s, "qwen3_235b", "full"), "cr"] == pytest.approx(1.0)
        assert d.loc[(s, "qwen3_235b", "reconmem_bm25"), "cr"] == pytest.approx(2 * d.loc[(s, "qwen3_235b", "reconmem"), "cr"])
    md = table().to_markdown()
    assert "Full History under the method's code retriever" in md
