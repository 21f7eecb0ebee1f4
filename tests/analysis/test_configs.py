"""Experiment configs compose into the intended sweeps; launcher examples and the Make fragment parse."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
SWEEPS = {
    "table1": ("locoeval", None, {"backbone": "gpt5_mini,deepseek_v32,qwen3_235b",
                                  "method": "full,vanilla_rag,memgpt,ld_agent,mem0,mem0r,reconmem"}),
    "table2": ("cab", "qwen3_235b", {"method": "native_strands,full,mem0,reconmem"}),
    "table6": ("locoeval", "qwen3_235b",
               {"method": "full,reconmem,reconmem_wo_gae,reconmem_wo_smg,reconmem_wo_qg,reconmem_wo_hcc"}),
    "coverage": ("locoeval", None, {"backbone": "gpt5_mini,deepseek_v32,qwen3_235b", "method": "reconmem"}),
    "demo": ("demo", "local", {"method": "reconmem,full"}),
}


def _experiment_key() -> str:
    text = (CONF / "config.yaml").read_text()
    return "experiment" if any(line.strip().lstrip("- ").startswith(("experiment:", "optional experiment:"))
                               for line in text.splitlines()) else "+experiment"


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_experiment_composes_to_its_sweep(name):
    benchmark, backbone, params = SWEEPS[name]
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"{_experiment_key()}={name}"], return_hydra_config=True)
    assert cfg.benchmark.name == benchmark
    if backbone:
        assert cfg.backbone.name == backbone
    assert dict(cfg.hydra.sweeper.params) == params
    swept = {m for m in params.get("method", "").split(",") if m}
    assert swept <= {p.stem for p in (CONF / "method").glob("*.yaml")}


def test_launcher_configs_use_the_installed_submitit_plugin():
    import importlib.util

    assert importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is not None  # the [cluster] extra
    # hydra/launcher=submitit_local is the plugin's own config; slurm.yaml extends the plugin's submitit_slurm
    assert not (CONF / "hydra" / "launcher" / "submitit_local.yaml").exists()  # would shadow (and recurse into) the plugin's
    text = (CONF / "hydra" / "launcher" / "slurm.yaml").read_text()
    assert yaml.safe_load(text)["defaults"] == ["submitit_slurm"]


def _make_dry_run(*targets: str) -> str:
    """`make -n` on the fragment alone, with a stub for the main Makefile's `setup` target."""
    out = subprocess.run(["make", "-n", "-f", str(ROOT / "mk" / "reproduce.mk"), "-f", "-", "PY=py", *targets],
                         input="setup:\n\t@true\n", capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_make_targets_expand_to_sweeps_and_report():
    assert "py -m scripts.report --runs some/runs --out r" in _make_dry_run("report", "RUNS=some/runs", "REPORT_DIR=r")
    out = _make_dry_run("reproduce-all")
    for name in ("table1", "table6", "coverage", "table2"):
        assert f"py -m scripts.run -m {_experiment_key()}={name}" in out
    assert "coverage RUNS=results/locoeval" in out and "report RUNS=results" in out
    assert "py -m scripts.coverage --runs x --judge-backbone qwen3_235b" in _make_dry_run("coverage", "RUNS=x",
                                                                                         "JUDGE=qwen3_235b")
