"""The judging-hits count (and `python -m scripts.judging_hits`): task contexts that hold a judging test entity (synthetic records)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.analysis import judging_hits
from scripts.judging_hits import main as judging_hits_main

SAMPLES = "package:benchmarks.locoeval/demo/samples.jsonl"


def _row(req_id: str, paths: list[str], phase: str = "task") -> dict:
    items = [{"kind": "code", "id": p, "text": "...", "source": "repo_wide", "meta": {"path": p}} for p in paths]
    return {"turn": 13, "phase": phase, "req_id": req_id, "context": {"query": "q", "messages": [], "items": items}}


def test_counts_own_and_any_hits(tmp_path: Path, capsys):
    run = tmp_path / "demo" / "local" / "full" / "r"
    sample = run / "samples" / "boltons-mathutils-single"
    sample.mkdir(parents=True)
    (run / "config.yaml").write_text(f"benchmark:\n  samples: {SAMPLES}\n  hide_task_tests: false\nmethod:\n  name: full\n")
    rows = [
        _row("R1", ["tests/test_mathutils.py/test_clamp_examples"]),  # own test of clamp
        _row("R2", ["tests/test_mathutils.py"]),  # the whole file holds ceil's tests: own hit
        _row("R1", ["boltons/mathutils.py/floor"]),  # no test
        _row("R1", ["tests/test_mathutils.py/test_clamp_examples"], phase="prep"),  # not a task context
    ]
    (sample / "contexts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    samples = judging_hits.load_samples_by_id(SAMPLES)
    result = judging_hits.count_run(run, samples)
    assert (result["task_contexts"], result["contexts_hit_any"], result["contexts_hit_own"]) == (3, 2, 2)
    assert result["hide_task_tests"] is False and result["method"] == "full"
    assert judging_hits_main([str(run)]) == 0
    assert "full" in capsys.readouterr().out


def test_cross_task_hit_is_any_not_own():
    ctx = _row("R2", ["tests/test_mathutils.py/test_clamp_examples"])["context"]
    assert judging_hits.context_hits(ctx, {"tests/test_mathutils.py/test_ceil_basic"}) == []
    assert judging_hits.context_hits(ctx, {"tests/test_mathutils.py/test_clamp_examples"}) == [
        "tests/test_mathutils.py/test_clamp_examples"]
