"""Resume: a run killed with SIGKILL mid-way finishes the rest on re-run without redoing finished
samples; errored samples are retried. SCRIPTED backbone (backbone.model=scripted/...) and a fake
evaluator (benchmark.evaluator) stand in for the model and the Pass@1 layer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import tiny_sample, write_samples

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
N = 4


def _overrides(tmp: Path, samples: Path, fn: str) -> list[str]:
    return [
        "benchmark=locoeval", "method=full", f"benchmark.samples={samples}",
        f"backbone.model=scripted/scripted_backbone:{fn}", "benchmark.evaluator=scripted_backbone.fake_evaluate",
        "method.manager.repo_context_k=0", "benchmark.progress=false", f"run.results_dir={tmp / 'results'}",
        f"cache.dir={tmp / 'cache'}", "run.run_id=t",
    ]


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT), env.get("PYTHONPATH", "")])
    env["LOCOEVAL_TEST_CALL_LOG"] = str(tmp / "calls.tsv")
    env["LOCOEVAL_TEST_DELAY"] = "0.4"
    return env


def _results(run: Path) -> dict[str, dict]:
    out = {}
    for p in sorted((run / "samples").glob("*/result.json")):
        r = json.loads(p.read_text())
        out[r["sample_id"]] = r
    return out


def test_sigkill_then_resume(tiny_repo, tmp_path):
    samples = write_samples(tmp_path / "samples.jsonl", [tiny_sample(tiny_repo, f"s{i}", n_turns=4) for i in range(N)])
    cmd = [sys.executable, "-m", "scripts.run", *_overrides(tmp_path, samples, "slow_reply")]
    run = tmp_path / "results" / "locoeval" / "local" / "full" / "t"
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 240

    def mid_sample() -> bool:  # >= 1 sample finished and the next one has started writing records
        done = _results(run)
        return bool(done) and any((run / "samples" / f"s{i}" / "conversation.jsonl").exists()
                                  for i in range(N) if f"s{i}" not in done)

    while time.time() < deadline and proc.poll() is None and not mid_sample():
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read().decode()[-2000:]}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    first = _results(run)
    assert 1 <= len(first) < N and all(r["status"] == "ok" for r in first.values())
    unfinished = [f"s{i}" for i in range(N) if f"s{i}" not in first]
    # the interrupted sample left partial records but no result.json
    assert any((run / "samples" / sid / "conversation.jsonl").exists() for sid in unfinished)
    kept = {sid: ((run / "samples" / sid / "result.json").stat().st_mtime_ns,
                  (run / "samples" / sid / "conversation.jsonl").read_text()) for sid in first}
    (tmp_path / "calls.tsv").unlink()

    rerun = subprocess.run(cmd, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    final = _results(run)
    assert sorted(final) == [f"s{i}" for i in range(N)] and all(r["status"] == "ok" for r in final.values())
    for sid, (mtime, conv) in kept.items():  # finished samples were not redone
        assert (run / "samples" / sid / "result.json").stat().st_mtime_ns == mtime
        assert (run / "samples" / sid / "conversation.jsonl").read_text() == conv
    called = {line.split("\t")[0] for line in (tmp_path / "calls.tsv").read_text().splitlines()}
    assert called == set(unfinished)
    for sid in unfinished:  # redone from the start: exactly one record per turn
        conv = [json.loads(x) for x in (run / "samples" / sid / "conversation.jsonl").read_text().splitlines()]
        assert [r["turn"] for r in conv] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]  # user and assistant messages
    summary = json.loads((run / "summary.json").read_text())
    assert summary["n_ok"] == N and summary["pass_at_1"]["overall"] == 1.0 and summary["cr"] == 1.0
    for name in ("config.yaml", "manifest.json"):
        assert (run / name).exists()


def test_errored_samples_are_retried(tiny_repo, tmp_path, monkeypatch):
    from hydra import compose, initialize_config_dir

    from benchmarks import runloop

    monkeypatch.syspath_prepend(str(HERE))
    samples = write_samples(tmp_path / "samples.jsonl", [tiny_sample(tiny_repo, f"e{i}") for i in range(2)])
    marker = tmp_path / "fail-once"
    marker.write_text("x")
    monkeypatch.setenv("LOCOEVAL_TEST_FAIL_ONCE", str(marker))
    monkeypatch.setenv("LOCOEVAL_TEST_CALL_LOG", str(tmp_path / "calls.tsv"))
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=_overrides(tmp_path, samples, "fast_reply") + ["run.workers=2"])
    first = runloop.run(cfg)
    assert (first["n_ok"], first["n_error"]) == (1, 1)
    assert "injected evaluator failure" in first["errors"][0]["error"]
    failed = first["errors"][0]["sample_id"]
    run = tmp_path / "results" / "locoeval" / "local" / "full" / "t"
    errored = json.loads((run / "samples" / failed / "result.json").read_text())
    assert errored["status"] == "error" and errored["errored"] and errored["n_tasks"] == 1
    assert errored["tasks"] == [{"req_id": "R1", "namespace": "tinypkg.ops.add", "outcome": "not_run", "passed": False}]
    assert (run / "samples" / failed / "error.txt").is_file()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["benchmark"] == "locoeval" and manifest["family"] == "locoeval" and manifest["hide_task_tests"] is True
    assert manifest["models"] == {"backbone": "scripted/scripted_backbone:fast_reply", "user": None, "judge": None}
    (tmp_path / "calls.tsv").unlink()
    second = runloop.run(cfg)
    assert (second["n_ok"], second["n_error"]) == (2, 0)
    called = {line.split("\t")[0] for line in (tmp_path / "calls.tsv").read_text().splitlines()}
    assert called == {failed}
    # run.ids / run.limit select samples
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg_ids = compose("config", overrides=_overrides(tmp_path, samples, "fast_reply") + ["run.ids=[e1]", "run.run_id=u"])
    assert runloop.run(cfg_ids)["n_samples"] == 1
