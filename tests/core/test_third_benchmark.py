"""A third benchmark and a toy method from their recipes alone (docs/ARCHITECTURE.md "Add a
benchmark", "Add a method"): tests/core/third_benchmark holds only the benchmark's class and config,
tests/core/toy_method only the method's class and config. Nothing in benchmarks/, the loop, the
records, the analysis or the shipped method configs changes, and the command line carries no method
option: run through scripts.run, read back through RunDir and the analysis, the toy method in the
tables beyond the paper under its config label."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BENCH = HERE / "third_benchmark"
METHOD = HERE / "toy_method"


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_a_third_benchmark_and_a_toy_method_need_only_their_recipes_files(tmp_path):
    from benchmarks.analysis.records import load_runs
    from benchmarks.analysis.report import build_report
    from benchmarks.records import RunDir

    assert _files(BENCH) == {"quiz_runner.py", "conf/benchmark/quiz.yaml"}
    assert _files(METHOD) == {"echo_method.py", "conf/method/echo.yaml"}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BENCH), str(METHOD), str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "RECONMEM_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "scripts.run", "-m", f"hydra.searchpath=[file://{BENCH / 'conf'},file://{METHOD / 'conf'}]",
           "benchmark=quiz", "method=full,vanilla_rag,echo", "backbone.model=scripted/quiz_runner:reply",
           f"run.results_dir={tmp_path / 'results'}", f"cache.dir={tmp_path / 'cache'}", "run.run_id=t"]
    assert not [arg for arg in cmd if arg.startswith(("method.", "+method", "benchmark."))]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for method in ("full", "vanilla_rag", "echo"):
        run = RunDir.at(tmp_path / "results", "quiz", "local", method, "t")
        assert [r["status"] for r in run.results()] == ["ok", "ok"], method
        assert run.sample("q1").conversation()[1] == {"turn": 1, "role": "assistant", "content": "Paris"}
        assert run.manifest["family"] == "locoeval" and run.summary()["pass_at_1"] == 0.5
    assert RunDir.at(tmp_path / "results", "quiz", "local", "full", "t").manifest["method_params"] == {"repo_context_k": 0}
    echo = RunDir.at(tmp_path / "results", "quiz", "local", "echo", "t").manifest
    assert echo["method_label"] == "Echo (toy)" and echo["method_params"] == {}
    tasks = load_runs(tmp_path / "results").tasks_frame("quiz")
    assert list(tasks[tasks.method == "full"].passed) == [True, False]

    report = build_report(tmp_path / "results", tmp_path / "report", n_resamples=50, tsne=False, allow_scripted=True)
    table = (tmp_path / "report" / "quiz" / "table1x.md")
    assert table.is_file(), report.skipped
    rows = [line for line in table.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    assert any("Echo (toy)" in row for row in rows) and any("Full History" in row for row in rows)
