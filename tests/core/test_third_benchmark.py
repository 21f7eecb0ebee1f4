"""A third benchmark from the recipe alone (tests/core/third_benchmark: its class and its config;
nothing in benchmarks/, the loop, the records or the analysis changes; one command-line override for
the baselines' repository adaptation): run through scripts.run, read back through RunDir and the
analysis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BENCH = HERE / "third_benchmark"


def test_a_third_benchmark_needs_only_its_class_and_config(tmp_path):
    from benchmarks.analysis.records import load_runs
    from benchmarks.records import RunDir

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BENCH), str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "RECONMEM_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "scripts.run", f"hydra.searchpath=[file://{BENCH / 'conf'}]", "benchmark=quiz",
           "method=full", "backbone.model=scripted/quiz_runner:reply", f"run.results_dir={tmp_path / 'results'}",
           # the baselines' repository adaptation is still a per-benchmark table in each method config:
           # a benchmark it does not list needs the method's k on the command line
           "method.manager.repo_context_k=0",
           f"cache.dir={tmp_path / 'cache'}", "run.run_id=t"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = RunDir.at(tmp_path / "results", "quiz", "local", "full", "t")
    assert [r["status"] for r in run.results()] == ["ok", "ok"]
    assert run.sample("q1").conversation()[1] == {"turn": 1, "role": "assistant", "content": "Paris"}
    assert run.manifest["family"] == "locoeval" and run.summary()["pass_at_1"] == 0.5
    tasks = load_runs(tmp_path / "results").tasks_frame("quiz")
    assert list(tasks.passed) == [True, False]
