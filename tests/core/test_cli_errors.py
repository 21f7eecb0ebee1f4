"""``python -m scripts.run``: data problems and refused evaluation models end in ONE ``error:`` line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "HYDRA_FULL_ERROR"}
    return subprocess.run([sys.executable, "-m", "scripts.run", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=180)


def _one_line(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    return lines[0]


def test_malformed_samples_file_is_one_line(tmp_path):
    bad = tmp_path / "samples.jsonl"
    bad.write_text('{"id": "x", "project_path": "p"}\n{not json\n')
    line = _one_line(_run("benchmark=locoeval", f"benchmark.samples={bad}", f"run.results_dir={tmp_path / 'r'}"))
    assert line.startswith(f"error: {bad}:")
    proc = _run("benchmark=cab", f"benchmark.data={tmp_path / 'missing.jsonl'}", f"run.results_dir={tmp_path / 'r'}",
                "--verbose")
    assert proc.returncode == 2 and "Traceback" in proc.stderr and proc.stderr.strip().splitlines()[-1].startswith(
        f"error: {tmp_path / 'missing.jsonl'}")


def test_reproduction_refuses_a_local_user_model(tmp_path):
    line = _one_line(_run("experiment=table1", "backbone@user_backbone=local", f"run.results_dir={tmp_path}"))
    assert "user_backbone=local" in line and "allow_local_eval_models=true" in line
    # with the option it starts (and then stops at the next problem: no LoCoEval samples here)
    line = _one_line(_run("experiment=table1", "backbone@user_backbone=local", "allow_local_eval_models=true",
                          "benchmark.samples=/nonexistent/samples.jsonl", f"run.results_dir={tmp_path}"))
    assert "allow_local_eval_models" not in line and "/nonexistent/samples.jsonl" in line


def test_malformed_deveval_data_is_one_line_before_any_sample(tmp_path):
    bad = tmp_path / "data.jsonl"
    bad.write_text('{"namespace": "x"}\n')
    line = _one_line(_run("experiment=demo", "method=full", "run.limit=1", f"benchmark.deveval_data={bad}",
                          f"run.results_dir={tmp_path / 'r'}"))
    assert line.startswith(f"error: {bad}:1:")
    assert not list((tmp_path / "r").glob("**/result.json"))  # stopped before the first sample
