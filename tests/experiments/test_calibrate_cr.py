"""CR-matched ablation budgets: the budget search, the calibrated config file and the
command end to end on the demo samples with SCRIPTED replies (``calib_backbone``; not a model's)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from benchmarks.cr_calibration import (Evaluation, budget_chain_point, calibrate, calibration_report, chain_length,
                                       forwarded_overrides, interleave_subsets, search_budgets)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BASE = {"k2": 4, "k31": 2, "k32": 2}
KEYS = ["k2", "k31", "k32"]


def test_the_chain_moves_one_budget_per_step_in_turn():
    up = [budget_chain_point(BASE, KEYS, n, min_value=1, max_value=12) for n in range(0, 5)]
    assert [tuple(p.values()) for p in up] == [(4, 2, 2), (5, 2, 2), (5, 3, 2), (5, 3, 3), (6, 3, 3)]
    down = [budget_chain_point(BASE, KEYS, -n, min_value=1, max_value=12) for n in range(0, 6)]
    assert [tuple(p.values()) for p in down] == [(4, 2, 2), (3, 2, 2), (3, 1, 2), (3, 1, 1), (2, 1, 1), (1, 1, 1)]
    assert budget_chain_point(BASE, KEYS, -6, min_value=1, max_value=12) is None
    assert chain_length(BASE, KEYS, -1, min_value=1, max_value=12) == 5
    assert budget_chain_point(BASE, ["k2"], 2, min_value=1, max_value=12) == {"k2": 6, "k31": 2, "k32": 2}


def _search(tokens, target_budgets=None, target=None, tolerance=0.05, max_evaluations=10):
    """Search against a synthetic token model: CR = 10000 / tokens(budgets)."""
    full = 10000.0
    target = target if target is not None else full / tokens(target_budgets)
    calls = []

    def evaluate(level, budgets):
        calls.append(dict(budgets))
        return Evaluation(level, dict(budgets), full / tokens(budgets))

    result = search_budgets(evaluate, base=BASE, keys=KEYS, target=target, tolerance=tolerance, min_value=1,
                            max_value=12, max_evaluations=max_evaluations)
    return result, calls


def test_search_raises_budgets_when_the_ablation_is_too_cheap():  # e.g. w/o GAE: no expansion, high CR
    tokens = lambda b: 100 + 20 * b["k2"] + 45 * (b["k31"] + b["k32"])  # noqa: E731
    result, calls = _search(tokens, target_budgets={"k2": 8, "k31": 5, "k32": 5})
    assert calls[0] == BASE and result.within_tolerance
    assert abs(result.best.ratio(result.target) - 1) <= 0.05 and result.best.budgets["k2"] > 4
    assert len(calls) <= 10


def test_search_lowers_budgets_when_the_ablation_is_too_expensive():  # e.g. w/o HCC: whole files
    tokens = lambda b: 100 + 20 * b["k2"] + 150 * (b["k31"] + b["k32"])  # noqa: E731
    result, _ = _search(tokens, target=10000 / (100 + 20 * 3 + 150 * 2))
    assert result.within_tolerance and result.best.budgets["k31"] == result.best.budgets["k32"] == 1
    assert result.best.cr > result.base.cr


def test_an_unreachable_target_returns_the_closest_end_and_says_so():
    tokens = lambda b: 1000 + 20 * b["k2"] + 150 * (b["k31"] + b["k32"])  # noqa: E731
    result, calls = _search(tokens, target=10000 / 500)
    assert not result.within_tolerance and result.best.budgets == {"k2": 1, "k31": 1, "k32": 1}
    assert calls[-1] == {"k2": 1, "k31": 1, "k32": 1}


def test_the_calibration_subset_alternates_between_subsets():
    samples = [("s1", "single-hop"), ("s2", "single-hop"), ("s3", "single-hop"), ("m1", "multi-hop"), ("m2", "multi-hop")]
    assert interleave_subsets(samples) == ["s1", "m1", "s2", "m2", "s3"]


def test_method_overrides_only_reach_the_ablation_and_searched_budgets_never():
    common, method_only = forwarded_overrides([
        "method=reconmem_wo_hcc", "backbone=qwen3_235b", "calib.samples=2", "method.manager.k2=9",
        "method.manager.grounding_threshold=0.4", "run.results_dir=x", "cache.dir=/c", "calibration=cr_matched"])
    assert common == ["backbone=qwen3_235b", "cache.dir=/c"]
    assert method_only == ["method.manager.grounding_threshold=0.4"]
    from benchmarks.cr_calibration import CalibrationError

    with pytest.raises(CalibrationError, match="run.repeat=3"):
        forwarded_overrides(["run.repeat=3"])


def test_calibration_cr_matched_applies_the_written_budgets(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    target = conf / "method" / "calibrated" / "cr_matched" / "qwen3_235b" / "reconmem_wo_hcc.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump({"manager": {"k2": 3, "k31": 1, "k32": 1},
                                      "calibration": {"target_cr": 5.6, "cr": 5.5, "within_tolerance": True}}))
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        t6 = compose("config", overrides=["experiment=table6", "method=reconmem_wo_hcc"])
        plain = compose("config", overrides=["backbone=qwen3_235b", "method=reconmem_wo_hcc"])
        ref = compose("config", overrides=["experiment=table6", "method=reconmem"])
        cli = compose("config", overrides=["experiment=table6", "method=reconmem_wo_hcc", "method.manager.k2=7"])
        # what scripts.calibrate_cr passes to its runs: the command line's calibration=none beats table6's
        uncalibrated = compose("config", overrides=["experiment=table6", "method=reconmem_wo_hcc", "calibration=none"])
    from hydra.utils import instantiate

    assert instantiate(t6.method.manager).config["k2"] == 3 and t6.method.manager.hcc is False
    assert OmegaConf.to_container(t6.method.calibration)["cr"] == 5.5  # lands in the run's config.yaml
    assert "calibration" not in plain.method  # only calibration=cr_matched applies the file
    assert instantiate(plain.method.manager).config["k2"] == 4
    assert "calibration" not in ref.method  # the reference keeps its budgets
    assert cli.method.manager.k2 == 7  # a command-line override still wins
    assert "calibration" not in uncalibrated.method and uncalibrated.calibration.name == "none"


@pytest.mark.slow
def test_calibration_command_on_the_demo_moves_cr_toward_the_target(tmp_path):
    """End to end: `python -m scripts.calibrate_cr` on one demo sample, SCRIPTED replies (minutes)."""
    out = tmp_path / "reconmem_wo_hcc.yaml"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "scripts.calibrate_cr", "method=reconmem_wo_hcc", "benchmark=demo", "calib.samples=1",
           "backbone.model=scripted/calib_backbone:reply", "benchmark.evaluator=calib_backbone.fake_evaluate",
           "benchmark.progress=false", f"run.results_dir={tmp_path / 'results'}", f"calib.output={out}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode == 3:  # out of tolerance (w/o HCC on the scripted demo): nothing written, exit 3
        assert not out.exists() and "outside calib.tolerance" in proc.stderr, proc.stderr[-3000:]
        proc = subprocess.run([*cmd, "calib.accept_out_of_tolerance=true"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=1800)  # every run replays: cached
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = yaml.safe_load(out.read_text())
    cal = record["calibration"]
    assert record["manager"] == cal["budgets"] != cal["base_budgets"]
    assert abs(cal["cr"] - cal["target_cr"]) < abs(cal["cr_before"] - cal["target_cr"])
    assert cal["model"].startswith("scripted/") and len(cal["evaluations"]) >= 2
    # every evaluation is an ordinary run whose resolved config.yaml holds its budgets
    for ev in cal["evaluations"]:
        manager = yaml.safe_load((Path(ev["run_dir"]) / "config.yaml").read_text())["method"]["manager"]
        assert {k: manager[k] for k in ("k2", "k31", "k32")} == ev["budgets"]
    assert "CR before" in proc.stderr and "wrote" in proc.stderr


def test_bad_options_are_one_line_errors():
    for args, needle in ((["method=nope"], "method/nope"), (["calib.nope=1"], "calib.nope"),
                         (["method=reconmem"], "calibrate an ablation")):
        proc = subprocess.run([sys.executable, "-m", "scripts.calibrate_cr", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=120)
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], proc.stderr


def _fake_runs(monkeypatch, tmp_path, target=0.36, ablation=lambda b: 0.09 + 0.002 * (8 - sum(b.values()))):
    """Runner.run / Runner.cr replaced: no benchmark run; CR(reference) = target, CR(ablation) from its budgets."""
    from benchmarks import cr_calibration

    def run(self, method, run_id, extra=()):
        path = tmp_path / "runs" / method / run_id
        path.mkdir(parents=True, exist_ok=True)
        (path / "budgets.txt").write_text(" ".join(extra))
        return path

    def cr(self, run, full):
        if run.name == "calib-reference":
            return target
        b = {k: int(x.split("=")[1]) for x in (run / "budgets.txt").read_text().split() for k in ("k2", "k31", "k32")
             if x.startswith(f"method.manager.{k}=")}
        return ablation(b)

    monkeypatch.setattr(cr_calibration.Runner, "run", run)
    monkeypatch.setattr(cr_calibration.Runner, "cr", cr)


def _calib_cfg(tmp_path, *extra):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("calibrate_cr", overrides=["method=reconmem_wo_hcc", "benchmark=demo", "calib.samples=1",
                                                  f"calib.output={tmp_path / 'out.yaml'}",
                                                  f"run.results_dir={tmp_path / 'results'}", *extra])


def test_out_of_tolerance_writes_nothing_unless_accepted(monkeypatch, tmp_path):
    """The w/o HCC shape (CR far below the target whatever the budgets): exit 3, no conf file; accepted: written."""
    _fake_runs(monkeypatch, tmp_path)
    record = calibrate(_calib_cfg(tmp_path), [])
    assert not record["within_tolerance"] and record["output"] is None and not (tmp_path / "out.yaml").exists()
    kept = json.loads((tmp_path / "results" / "calibration" / "demo" / "local" / "reconmem_wo_hcc" / "calibration.json")
                      .read_text())
    assert kept["within_tolerance"] is False and kept["output"] is None  # the record of the search is kept
    record = calibrate(_calib_cfg(tmp_path, "calib.accept_out_of_tolerance=true"), [])
    assert record["accepted_out_of_tolerance"] and record["output"] == str(tmp_path / "out.yaml")
    written = yaml.safe_load((tmp_path / "out.yaml").read_text())
    assert written["calibration"]["within_tolerance"] is False and written["manager"] == {"k2": 1, "k31": 1, "k32": 1}
    report = calibration_report("qwen3_235b", ["reconmem_wo_hcc", "reconmem_wo_gae"], root=tmp_path / "none")
    assert report[0].startswith("reconmem_wo_hcc: ReConMem's budgets (not calibrated")


def test_within_tolerance_is_written_and_reported(monkeypatch, tmp_path):
    _fake_runs(monkeypatch, tmp_path, target=0.36, ablation=lambda b: 0.40 - 0.01 * (sum(b.values()) - 8))
    record = calibrate(_calib_cfg(tmp_path), [])
    assert record["within_tolerance"] and record["output"] == str(tmp_path / "out.yaml")
    shutil.copy(tmp_path / "out.yaml", tmp_path / "reconmem_wo_gae.yaml")
    line = calibration_report("qwen3_235b", ["reconmem_wo_gae"], root=tmp_path)[0]
    assert line.startswith("reconmem_wo_gae: CR-matched: k2=") and "tolerance ±5%" in line


def test_make_calibrate_table6_stops_on_an_out_of_tolerance_calibration(tmp_path):
    """mk/reproduce.mk: a calibration exiting 3 stops the loop (and so reproduce-table6); w/o HCC is not calibrated."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho \"ran $*\"\ncase \"$*\" in *method=reconmem_wo_smg*) exit 3;; esac\nexit 0\n")
    fake.chmod(0o755)
    proc = subprocess.run(["make", "-s", "calibrate-table6", f"PY={fake}", f"STAMP={tmp_path / 'stamp'}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    ran = [line for line in proc.stdout.splitlines() if "scripts.calibrate_cr" in line]
    assert proc.returncode != 0
    assert [x.split("method=")[1].split()[0] for x in ran] == ["reconmem_wo_gae", "reconmem_wo_smg"]
