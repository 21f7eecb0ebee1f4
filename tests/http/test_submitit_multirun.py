"""A 2-job Hydra multirun through submitit's local executor (hydra/launcher=submitit_local), end to
end on SCRIPTED replies (backbone.model=scripted/...): both jobs finish and write their records."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import HERE

ROOT = HERE.parents[1]


@pytest.mark.slow
def test_two_job_multirun_on_submitit_local(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests" / "locoeval"), str(ROOT), env.get("PYTHONPATH", "")])
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_workers", ROOT / "scripts" / "bench_workers.py")
    bench_workers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_workers)
    samples = bench_workers._samples(tmp_path, 2, 3, "sweep-")  # tiny LoCoEval samples over a tiny repository
    cmd = [sys.executable, "-m", "scripts.run", "-m", "hydra/launcher=submitit_local", "method=full,vanilla_rag",
           "benchmark=locoeval", f"benchmark.samples={samples}", "benchmark.evaluator=scripted_backbone.fake_evaluate",
           "backbone.model=scripted/scripted_backbone:fast_reply", "benchmark.progress=false", f"run.results_dir={tmp_path / 'results'}", f"cache.dir={tmp_path / 'cache'}",
           "run.run_id=sweep", "hydra.launcher.timeout_min=20"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    for method in ("full", "vanilla_rag"):
        run = tmp_path / "results" / "locoeval" / "local" / method / "sweep"
        summary = json.loads((run / "summary.json").read_text())
        assert summary["n_finished"] == 2, summary
        results = [json.loads(p.read_text()) for p in (run / "samples").glob("*/result.json")]
        assert [r["status"] for r in results] == ["ok", "ok"]
    assert list((tmp_path / "results" / ".hydra" / "multirun").rglob(".submitit"))  # it really went through submitit
