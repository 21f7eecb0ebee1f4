"""run.shard=I/N through the LoCoEval benchmark (SCRIPTED backbone, fake evaluator): two shards
writing into one run directory leave the same records as one unsharded run."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import tiny_sample, write_samples

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TIMING = ("attempt", "shard", "wall_seconds", "seconds", "timing_ms", "original_seconds")


def _cfg(tmp: Path, samples: Path, results: Path, *extra: str):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=[
            "benchmark=locoeval", "method=full", f"benchmark.samples={samples}",
            "backbone.model=scripted/scripted_backbone:fast_reply", "benchmark.evaluator=scripted_backbone.fake_evaluate",
            "method.manager.repo_context_k=0", "benchmark.progress=false", f"run.results_dir={results}",
            f"cache.dir={tmp / 'cache'}", "run.run_id=t", *extra])


def _clean(obj):
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items() if k not in TIMING}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def _records(run: Path) -> dict[str, dict]:
    out = {}
    for d in sorted((run / "samples").iterdir()):
        out[d.name] = {f.name: _clean([json.loads(x) for x in f.read_text().splitlines()] if f.suffix == ".jsonl"
                                      else json.loads(f.read_text()))
                       for f in sorted(d.iterdir()) if f.suffix in (".json", ".jsonl")}
    return out


def test_two_shards_equal_one_run(tiny_repo, tmp_path, monkeypatch):
    from benchmarks.runloop import run

    monkeypatch.syspath_prepend(str(HERE))
    samples = write_samples(tmp_path / "samples.jsonl", [tiny_sample(tiny_repo, f"s{i}") for i in range(5)])
    whole = run(_cfg(tmp_path, samples, tmp_path / "whole"))
    parts = [run(_cfg(tmp_path, samples, tmp_path / "sharded", f"run.shard={i}/2")) for i in range(2)]
    a = tmp_path / "whole" / "locoeval" / "local" / "full" / "t"
    b = tmp_path / "sharded" / "locoeval" / "local" / "full" / "t"
    ra, rb = _records(a), _records(b)
    assert len(ra) == 5 and ra == rb
    assert {json.loads((b / "samples" / s / "result.json").read_text())["shard"] for s in rb} == {"0/2", "1/2"}
    merged = json.loads((b / "summary.json").read_text())
    for key in ("n_ok", "n_tasks", "pass_at_1", "status_counts", "json_failures", "cost_usd", "n_selected"):
        assert merged[key] == whole[key], key
    assert parts[1]["n_shards"] == 2 and merged["n_finished"] == 5
