"""The one run loop (benchmarks/runloop.py) on a toy benchmark (tests/core/toy_benchmark.py):
ledger slicing, per-sample cost / JSON-failure accounting, error and interrupted records, resume,
the cost limit, sharding, the manifest, the reproduction guard and a runner config's error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from benchmarks import records
from benchmarks.errors import ConfigError
from benchmarks.runloop import in_shard, parse_shard, run

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _toy_path(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    import toy_benchmark

    toy_benchmark.CALLS.clear()
    yield toy_benchmark


def _cfg(tmp: Path, items: list[dict], **run_kw) -> OmegaConf:
    backbone = OmegaConf.to_container(OmegaConf.load(HERE.parents[1] / "conf" / "backbone" / "local.yaml"))
    backbone.update(name="local", label="Qwen (local)")  # the real local backbone: pre-flight checks its weights
    cfg = OmegaConf.create({
        "benchmark": {"name": "toy", "_target_": "toy_benchmark.ToyBenchmark", "items": items, "progress": False,
                      "uses_backbones": ["backbone", "user_backbone"], "hide_task_tests": True},
        "backbone": {**backbone, "name": "scripted_bb", "model": "scripted/toy_benchmark:reply", "label": "Scripted",
                     "local": None},
        "user_backbone": backbone, "judge_backbone": backbone,
        "method": {"name": "full", "manager": {"_target_": "baselines.full.FullHistory"}},
        "run": {"results_dir": str(tmp / "results"), "run_id": "t", "limit": None, "ids": None, "workers": 1,
                "retry_errors": True, "shard": None, "cost_limit_usd": None, "dry_run": False, "reproduction": False,
                **run_kw},
        "allow_local_eval_models": False,
        "cache": {"dir": str(tmp / "cache")},
    })
    return cfg


def backbone_model() -> str:
    return str(OmegaConf.load(HERE.parents[1] / "conf" / "backbone" / "local.yaml").model)


def _run_dir(cfg) -> Path:
    return Path(cfg.run.results_dir) / "toy" / "scripted_bb" / "full" / "t"


ITEMS = [{"id": "a", "cost": 0.25, "bad_json": 2}, {"id": "b", "cost": 0.5}, {"id": "c", "fail": True, "cost": 0.1},
         {"id": "d", "status": "excluded"}]


def test_records_ledger_slicing_and_accounting(tmp_path, _toy_path):
    cfg = _cfg(tmp_path, ITEMS, workers=3)
    summary = run(cfg)
    rd = _run_dir(cfg)
    res = {r["sample_id"]: r for r in records.RunDir(rd).results()}
    assert {k: r["status"] for k, r in res.items()} == {"a": "ok", "b": "ok", "c": "error", "d": "excluded"}
    # one slicing rule: every event of this sample's attempt, all fields kept
    for sid in "abcd":
        events = records.RunDir(rd).sample(sid).ledger()
        assert len(events) == 2 and {e["sample"] for e in events} == {sid} and {e["custom_field"] for e in events} == {sid}
        assert {e["attempt"] for e in events} == {res[sid]["attempt"]}
    assert res["a"]["cost_usd"] == 0.5 and res["b"]["cost_usd"] == 1.0
    assert res["a"]["usage"] == {"calls": 2, "cached_calls": 0, "input_tokens": 20, "output_tokens": 10, "total_tokens": 30}
    # JSON failures counted per sample even with 3 workers running at once
    assert (res["a"]["json_failures"], res["b"]["json_failures"]) == (2, 0)
    # the errored sample: error.txt, its tasks listed as failed, counted
    assert res["c"]["tasks"] == [{"req_id": "c", "passed": False, "outcome": "not_run"}] and res["c"]["n_tasks"] == 1
    assert res["c"]["errored"] is True and "toy failure in c" in res["c"]["error"]
    assert "RuntimeError: toy failure in c" in (rd / "samples" / "c" / "error.txt").read_text()
    # rows through the loop's recorder; memory.json is the loop's (an errored sample's too)
    assert records.RunDir(rd).sample("a").conversation() == [{"turn": 0, "role": "user", "content": "toy a"}]
    assert all(isinstance(records.RunDir(rd).sample(s).memory(), dict) for s in "ac")
    assert summary["n_errored"] == 1 and summary["json_failures"] == 2 and summary["cost_usd"] == pytest.approx(1.9)
    assert summary["status_counts"] == {"error": 1, "ok": 2, "excluded": 1} and summary["stopped"] is None
    manifest = records.RunDir(rd).manifest_file()
    assert manifest["benchmark"] == "toy" and manifest["family"] == "locoeval" and manifest["method"] == "full"
    assert manifest["models"] == {"backbone": "scripted/toy_benchmark:reply", "user": backbone_model(), "judge": None}
    assert manifest["model_labels"] == {"backbone": "Scripted", "user": "Qwen (local)", "judge": None}
    assert manifest["scripted"] is True and manifest["hide_task_tests"] is True and manifest["shard"] is None
    assert {"git_rev", "packages", "data_checksums"} <= set(manifest)

    # resume: only the errored sample runs again (benchmark-declared final statuses are kept)
    _toy_path.CALLS.clear()
    again = run(cfg)
    assert _toy_path.CALLS == ["c"] and again["n_errored"] == 1


def test_undeclared_status_is_an_error(tmp_path):
    cfg = _cfg(tmp_path, [{"id": "x", "status": "made_up"}])
    run(cfg)
    r = records.RunDir(_run_dir(cfg)).result("x")
    assert r["status"] == "error" and "undeclared status 'made_up'" in r["error"]


def test_cost_limit_interrupts_then_resume_continues(tmp_path, _toy_path):
    items = [{"id": f"s{i}", "cost": 0.4} for i in range(4)]
    cfg = _cfg(tmp_path, items, cost_limit_usd=1.0)
    summary = run(cfg)
    rd = _run_dir(cfg)
    res = {r["sample_id"]: r["status"] for r in records.RunDir(rd).results()}
    # s0 spends 0.8, s1 makes one call (1.2 total) and is refused the next: interrupted, nothing else starts
    assert res == {"s0": "ok", "s1": "interrupted"} and _toy_path.CALLS == ["s0", "s1"]
    assert sorted(p.name for p in (rd / "samples" / "s1").iterdir()) == ["ledger.jsonl", "result.json"]
    assert summary["stopped"] == "cost_limit" and summary["n_interrupted"] == 1 and summary["n_unfinished"] == 2
    _toy_path.CALLS.clear()
    run(cfg)  # same limit: the recorded spend already reached it
    assert records.RunDir(rd).sample("s1").result()["status"] == "interrupted"
    _toy_path.CALLS.clear()
    final = run(_cfg(tmp_path, items, cost_limit_usd=10.0))
    assert _toy_path.CALLS == ["s1", "s2", "s3"] and final["status_counts"] == {"ok": 4} and final["stopped"] is None
    assert records.RunDir(rd).sample("s1").result()["earlier_attempts_cost_usd"] == pytest.approx(0.4)


def _strip(r: dict) -> dict:
    return {k: v for k, v in r.items() if k not in ("attempt", "shard", "wall_seconds", "seconds")}


def test_shards_partition_and_merge_to_the_unsharded_records(tmp_path):
    items = [{"id": f"id-{i}", "cost": 0.01 * i, "bad_json": i % 2} for i in range(12)]
    whole = _cfg(tmp_path / "whole", items)
    run(whole)
    parts = [_cfg(tmp_path / "sharded", items, shard=f"{i}/3") for i in range(3)]
    owned = [{it["id"] for it in items if in_shard(it["id"], parse_shard(f"{i}/3"))} for i in range(3)]
    assert set().union(*owned) == {it["id"] for it in items} and sum(map(len, owned)) == 12 and all(owned)
    summaries = [run(c) for c in parts]
    a, b = _run_dir(whole), _run_dir(parts[0])
    ra = {r["sample_id"]: _strip(r) for r in records.RunDir(a).results()}
    rb = {r["sample_id"]: _strip(r) for r in records.RunDir(b).results()}
    assert ra == rb
    drop = ("attempt", "seconds")
    for sid in ra:
        la = [{k: v for k, v in e.items() if k not in drop} for e in records.RunDir(a).sample(sid).ledger()]
        lb = [{k: v for k, v in e.items() if k not in drop} for e in records.RunDir(b).sample(sid).ledger()]
        assert la == lb
    merged = records.RunDir(b).summary()
    unsharded = records.RunDir(a).summary()
    for key in ("n_selected", "n_finished", "status_counts", "json_failures", "cost_usd", "pass_at_1"):
        assert merged[key] == unsharded[key], key
    assert summaries[-1]["n_shards"] == 3 and len(records.RunDir(b).shard_files("summary")) == 3
    assert [json.loads(p.read_text())["shard"] for p in records.RunDir(b).shard_files("manifest")] == ["0/3", "1/3", "2/3"]
    assert records.RunDir(b).manifest_file()["n_shards"] == 3 and records.RunDir(b).manifest_file()["shard"] is None
    assert (b / "config.yaml").read_text() == (a / "config.yaml").read_text().replace(str(tmp_path / "whole"),
                                                                                        str(tmp_path / "sharded"))


def test_bad_shard_is_a_config_error(tmp_path):
    for bad in ("3/3", "x", "1/0"):
        with pytest.raises(ConfigError, match="run.shard"):
            run(_cfg(tmp_path, ITEMS, shard=bad))


def test_reproduction_refuses_local_eval_models(tmp_path):
    cfg = _cfg(tmp_path, ITEMS[:1], reproduction=True)
    with pytest.raises(ConfigError, match="allow_local_eval_models=true") as exc:
        run(cfg)
    assert "user_backbone=local is a local model" in str(exc.value) and "\n" not in str(exc.value)
    cfg.allow_local_eval_models = True
    assert run(cfg)["status_counts"] == {"ok": 1}


def test_data_error_is_one_line(tmp_path):
    from benchmarks.errors import DataError

    cfg = _cfg(tmp_path, ITEMS)
    cfg.benchmark.items = None
    with pytest.raises(DataError, match=r"^toy.jsonl:3: invalid JSON"):
        run(cfg)


def test_a_runner_config_is_one_line_error(tmp_path):
    from benchmarks.runloop import build_benchmark

    cfg = _cfg(tmp_path, ITEMS)
    cfg.benchmark.runner = "benchmarks.cab.runner.run_benchmark"
    with pytest.raises(ConfigError, match="benchmark.runner is replaced by benchmark._target_"):
        build_benchmark(cfg)


def test_dry_run_makes_no_call_and_writes_nothing(tmp_path, _toy_path, monkeypatch, capsys):
    import sys
    import types

    fake = types.ModuleType("benchmarks.estimate")
    fake.estimate_run = lambda cfg, bench, samples: {"n_samples": len(samples), "cost_usd": 1.23}
    fake.format_estimate = lambda est: f"estimate: {est['n_samples']} samples, ${est['cost_usd']}"
    monkeypatch.setitem(sys.modules, "benchmarks.estimate", fake)  # the loop's wiring, not H5's estimator
    cfg = _cfg(tmp_path, ITEMS, dry_run=True)
    cfg.benchmark.explode_on_setup = True
    out = run(cfg)
    assert out["dry_run"] is True and out["n_to_run"] == 4 and _toy_path.CALLS == []
    assert not _run_dir(cfg).exists()
    assert "estimate" in capsys.readouterr().out.lower()


def test_json_failures_are_marked_on_the_real_clients_ledger_events():
    """The per-sample count is the attempt's ledger events with ``json_ok: false`` (the one slicing
    rule), as the client's chat_json marks them: a real (scripted) client."""
    from benchmarks.records import attempt_events
    from reconmem.platform.llm import UsageLedger
    from reconmem.platform.testing import ScriptedLLM

    ledger = UsageLedger()
    llm = ScriptedLLM(["this is not json", '{"ok": 1}', "nor this", "plain reply"], ledger=ledger)
    with ledger.tags(attempt="a1"):
        assert llm.chat_json([{"role": "user", "content": "q"}], purpose="memory_update") is None
        assert llm.chat_json([{"role": "user", "content": "q"}], purpose="memory_update") == {"ok": 1}
    with ledger.tags(attempt="a2"):
        llm.chat_json([{"role": "user", "content": "q"}], purpose="memory_sketching")
        llm.chat([{"role": "user", "content": "q"}], purpose="turn_generation")
    assert [e.get("json_ok") for e in attempt_events([ledger], "a1")] == [False, True]
    assert [e.get("json_ok") for e in attempt_events([ledger], "a2")] == [False, None]  # a plain call: no JSON asked
    assert sum(llm.json_failures.values()) == 2


def test_manifest_records_the_local_models_runtime_per_role():
    """Threads, n_ctx and prompt reuse decide a local model's greedy outputs: the manifest names them."""
    from omegaconf import OmegaConf

    from benchmarks.runloop import _local_runtimes

    cfg = OmegaConf.create({
        "backbone": {"name": "local", "local": {"gguf_name": "m.gguf", "threads": 2, "n_ctx": 8192}},
        "user_backbone": {"name": "gemini", "model": "gemini/gemini-2.5-flash"},
        "judge_backbone": {"name": "local", "local": {"gguf_name": "m.gguf", "threads": 1, "prompt_cache": False}},
    })
    models = {"backbone": "local/m", "user": "gemini/gemini-2.5-flash", "judge": None}
    out = _local_runtimes(cfg, models)
    assert set(out) == {"backbone"}  # the user is remote; the judge role is not used by this run
    assert out["backbone"]["threads"] == 2 and out["backbone"]["n_ctx"] == 8192 and out["backbone"]["prompt_cache"] is True
    out = _local_runtimes(cfg, {**models, "judge": "local/m"})
    assert out["judge"]["threads"] == 1 and out["judge"]["prompt_cache"] is False
