"""Scorers re-run over finished runs (benchmarks/scoring.py, python -m scripts.score): the registered
Pass@1 and coverage judge, and a toy scorer added from ONE file written here; one-line errors.
The coverage judge's replies are SCRIPTED (tests/analysis/scripted_judge.py), not a model's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.locoeval import metrics
from benchmarks.records import RunDir
from scripts.score import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "runs"

TOY_SCORER = '''"""A toy scorer: the mean output tokens of the task replies, over calls of at least min_tokens."""


def task_output_tokens(env):
    tokens = [int(e.get("output_tokens") or 0) for d in env.run.sample_dirs() for e in d.ledger()
              if e.get("purpose") == "task_generation" and int(e.get("output_tokens") or 0) >= int(env.options.get("min_tokens", 0))]
    return {"n_calls": len(tokens), "mean_output_tokens": sum(tokens) / len(tokens) if tokens else None}
'''


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A finished LoCoEval run (the fixture records), copied: scoring writes beside its records."""
    dest = tmp_path / "results" / "locoeval" / "qwen3_235b" / "reconmem" / "fixture"
    shutil.copytree(FIXTURES / "results" / "locoeval" / "qwen3_235b" / "reconmem" / "fixture", dest)
    return dest


def _files(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_pass_at_1_rescored_beside_the_records_as_the_run_scores_it(run, capsys):
    before = _files(run)
    assert main([str(run), "--scorer", "pass_at_1"]) == 0
    written = RunDir(run).score("pass_at_1")
    assert written["scorer"] == "pass_at_1" and written["target"] == "benchmarks.locoeval.metrics:pass_at_1_scorer"
    selected = RunDir(run).selected_ids()
    summary = metrics.summarize_run(run, sample_ids=selected)  # what LoCoEval.score puts in summary.json
    assert written["result"]["pass_at_1"] == summary["pass_at_1"]
    assert (written["result"]["n_tasks"], written["result"]["n_passed"]) == (summary["n_tasks"], summary["n_passed"])
    after = _files(run)
    assert {k: v for k, v in after.items() if k != "scores/pass_at_1.json"} == before  # no record touched
    assert "scores/pass_at_1.json" in capsys.readouterr().out


def test_a_toy_scorer_from_one_file_rescores_a_finished_run(run, tmp_path):
    scorer = tmp_path / "plugins" / "toy_scorer.py"
    scorer.parent.mkdir()
    scorer.write_text(TOY_SCORER, encoding="utf-8")
    env = {**os.environ, "RECONMEM_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "scripts.score", str(run), "--scorer", f"{scorer}:task_output_tokens",
           "--option", "min_tokens=1"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    written = json.loads((run / "scores" / "task_output_tokens.json").read_text(encoding="utf-8"))
    tokens = [e["output_tokens"] for d in RunDir(run).sample_dirs() for e in d.ledger()
              if e["purpose"] == "task_generation" and e["output_tokens"] >= 1]
    assert written["options"] == {"min_tokens": "1"} and written["result"]["n_calls"] == len(tokens) > 0
    assert written["result"]["mean_output_tokens"] == pytest.approx(sum(tokens) / len(tokens))


def test_the_coverage_judge_is_a_scorer(run, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "analysis"))
    args = [str(run), "--scorer", "coverage_judge", "--option", f"samples={FIXTURES / 'locoeval_samples.jsonl'}",
            "judge_backbone.model=scripted/scripted_judge:reply", f"cache.dir={run.parents[4] / 'cache'}"]
    assert main(args) == 0
    written = RunDir(run).score("coverage_judge")
    n_ok = sum(1 for r in RunDir(run).results() if r["status"] == "ok")
    assert written["result"]["judged"] == n_ok > 0 and written["result"]["failed"] == 0
    assert written["usage"]["calls"] > 0  # the judge's calls, accounted
    assert all(RunDir(run).sample(r["sample_id"]).coverage() for r in RunDir(run).results() if r["status"] == "ok")
    assert main(args) == 0 and RunDir(run).score("coverage_judge")["result"]["skipped"] == n_ok  # already judged


def test_bad_input_is_one_line(run, tmp_path, capsys):
    assert main([str(run), "--scorer", "no_such_scorer"]) == 2
    assert main([str(tmp_path), "--scorer", "pass_at_1"]) == 2
    assert main([str(run), "--scorer", f"{tmp_path / 'missing.py'}:f"]) == 2
    assert main([str(run), "--scorer", "pass_at_1", "--option", "novalue"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("error:") for line in err)
    assert "unknown scorer" in err[0] and "not a run directory" in err[1] and "file not found" in err[2]
    assert main(["--list"]) == 0 and "coverage_judge" in capsys.readouterr().out
