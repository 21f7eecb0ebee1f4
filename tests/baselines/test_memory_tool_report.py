"""Scripted demo runs (SCRIPTED replies, stand-in evaluator) of Full History, Memory Tool and Full
History with retriever=bm25 through the run loop: records, manifests and the report's tables
beyond the paper, by config label."""

from __future__ import annotations

import json
from pathlib import Path

import benchmarks

CONF = str(Path(benchmarks.__file__).resolve().parents[1] / "conf")


def _run(results: Path, *overrides: str) -> dict:
    from hydra import compose, initialize_config_dir

    from benchmarks.runloop import run

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose("config", overrides=[
            "experiment=demo", "backbone.model=scripted/memory_tool_script:reply",
            "benchmark.evaluator=memory_tool_script.fake_evaluate", f"run.results_dir={results}", "cache.llm=false",
            "benchmark.progress=false", "run.ids=[boltons-time-dict-single]", *overrides])
    return run(cfg)


def test_demo_runs_and_report_tables(tmp_path):
    from benchmarks.analysis.report import build_report

    results = tmp_path / "results"
    _run(results, "method=full")
    _run(results, "method=memory_tool")
    _run(results, "method=full", "retriever=bm25")
    base = results / "demo" / "local"
    assert sorted(p.name for p in base.iterdir()) == ["full", "full_bm25", "memory_tool"]
    manifest = json.loads((base / "full_bm25" / "demo" / "manifest.json").read_text())
    assert manifest["method"] == "full_bm25" and manifest["retriever"]["name"] == "bm25"
    assert json.loads((base / "full" / "demo" / "manifest.json").read_text())["retriever"] == {"name": "dense"}
    memory = json.loads((base / "memory_tool" / "demo" / "samples" / "boltons-time-dict-single" / "memory.json").read_text())
    assert memory["compressions"]  # the scripted agent chose at least one

    report = build_report([results], tmp_path / "report", n_resamples=50, tsne=False, allow_scripted=True)
    assert not report.failed, report.failures
    t1x = (tmp_path / "report" / "demo" / "table1x.md").read_text()
    t3x = (tmp_path / "report" / "demo" / "table3x.md").read_text()
    for table in (t1x, t3x):
        assert "Memory Tool" in table and "Full History (BM25)" in table and "Full History" in table
    assert "Memory Tool" not in (tmp_path / "report" / "demo" / "table1.md").read_text()  # the paper's table is unchanged
