"""Every method fits its context window: through the LoCoEval runner with a tiny
window and scripted replies (not a model's), no sample errors, and every recorded context says how
it was trimmed (``trimmed_items``, ``tokens_before``, ``tokens_after``) and fits its budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import benchmarks

CONF = Path(benchmarks.__file__).resolve().parents[1] / "conf"
METHODS = ["full", "vanilla_rag", "mem0", "mem0r", "memgpt", "ld_agent", "reconmem", "memory_tool"]
WINDOW = 1200  # tokens; the scripted backbone keeps min(1024, window/2) for the answer -> 600-token prompts


@pytest.mark.parametrize("method", METHODS)
def test_tiny_window_no_sample_errors(method, tmp_path):
    from benchmarks import runloop

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[
            "benchmark=demo", f"method={method}", "backbone=local", f"backbone.context_window={WINDOW}",
            "backbone.model=scripted/scripted_methods:reply", "benchmark.evaluator=canary_kit.fake_evaluate",
            f"run.results_dir={tmp_path}", "cache.llm=false", "benchmark.progress=false",
            "run.ids=[boltons-mathutils-single]", "run.run_id=tiny",
        ])
    runloop.run(cfg)
    sample = tmp_path / "demo" / "local" / method / "tiny" / "samples" / "boltons-mathutils-single"
    result = json.loads((sample / "result.json").read_text())
    assert result["status"] == "ok", result.get("error")
    rows = [json.loads(line) for line in (sample / "contexts.jsonl").read_text().splitlines()]
    assert rows
    trimmed = 0
    for row in rows:
        meta = row["context"]["meta"]
        assert {"trimmed_items", "tokens_before", "tokens_after", "prompt_budget"} <= set(meta), row["turn"]
        assert meta["tokens_after"] <= meta["prompt_budget"] <= WINDOW, row["turn"]
        trimmed += meta["tokens_before"] > meta["tokens_after"]
    assert trimmed > 0, "the tiny window made the guard trim at least one request"
