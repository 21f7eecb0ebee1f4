"""Every method x benchmark x backbone composes, resolves, and points at importable code."""

from __future__ import annotations

import importlib
import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

CONF = Path(__file__).resolve().parents[2] / "conf"
METHODS = sorted(p.stem for p in (CONF / "method").glob("*.yaml"))
BACKBONES = sorted(p.stem for p in (CONF / "backbone").glob("*.yaml"))
BENCHMARKS = sorted(p.stem for p in (CONF / "benchmark").glob("*.yaml"))
EXPECTED_METHODS = {
    "reconmem", "reconmem_wo_gae", "reconmem_wo_smg", "reconmem_wo_qg", "reconmem_wo_hcc",
    "full", "vanilla_rag", "mem0", "mem0r", "memgpt", "ld_agent", "no_memory", "oracle_context", "memory_tool",
}


def _import_target(path: str):
    module, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def test_groups_are_complete():
    assert EXPECTED_METHODS <= set(METHODS)
    assert {"local", "gpt5_mini", "deepseek_v32", "qwen3_235b"} <= set(BACKBONES)
    assert {"locoeval", "cab", "demo"} <= set(BENCHMARKS)


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_every_combination_composes(benchmark):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for method, backbone in itertools.product(METHODS, BACKBONES):
            cfg = compose("config", overrides=[f"method={method}", f"backbone={backbone}", f"benchmark={benchmark}"])
            resolved = OmegaConf.to_container(cfg, resolve=True)  # fails on any broken interpolation
            assert resolved["method"]["name"] == method
            assert resolved["backbone"]["context_window"] > 0
            target = resolved["method"]["manager"]["_target_"]
            assert callable(_import_target(target)), target
            assert callable(_import_target(resolved["benchmark"]["_target_"]))
            assert "budgets" not in resolved["backbone"]  # budgets belong to the method


def test_paper_budgets():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        ds = compose("config", overrides=["backbone=deepseek_v32"])
        gpt = compose("config", overrides=["backbone=gpt5_mini"])
        qwen = compose("config", overrides=["backbone=qwen3_235b"])
    from hydra.utils import instantiate

    key = lambda c: [instantiate(c.method.manager).config[k] for k in ("k1", "k2", "k31", "k32")]  # noqa: E731
    assert key(ds) == [3, 6, 3, 3]
    assert key(gpt) == key(qwen) == [2, 4, 2, 2]
    # paper §3.5: 128K, 400K, 256K (the providers' exact limits: 131,072, 400,000, 262,144)
    assert (ds.backbone.context_window, gpt.backbone.context_window, qwen.backbone.context_window) == (131072, 400000, 262144)
    # GPT-5 mini: 400K total of which at most 128K output -> prompt budget = the API's 272K input limit
    assert gpt.backbone.context_window - gpt.backbone.max_output_tokens == 272000


def test_paper_model_ids():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        models = {b: compose("config", overrides=[f"backbone={b}"]).backbone
                  for b in ("gpt5_mini", "deepseek_v32", "qwen3_235b", "gemini_25_flash")}
    assert {b: m.model for b, m in models.items()} == {
        "gpt5_mini": "openai/gpt-5-mini", "deepseek_v32": "deepseek/deepseek-chat",
        "qwen3_235b": "openrouter/qwen/qwen3-235b-a22b-2507", "gemini_25_flash": "gemini/gemini-2.5-flash"}
    gemini = models["gemini_25_flash"]
    assert (gemini.api_key_env, gemini.context_window, gemini.max_output_tokens, gemini.temperature) == (
        "GEMINI_API_KEY", 1048576, 65536, 0.0)
    assert all(m.temperature == 0.0 for m in models.values())  # paper §3.5


REPRODUCTIONS = ("table1", "table2", "table6", "coverage")


@pytest.mark.parametrize("experiment", REPRODUCTIONS)
def test_reproduction_experiments_use_the_paper_evaluation_model(experiment):
    """Mock user (LoCoEval), CAB user and judge, and the coverage judge: Gemini-2.5-Flash (paper §3.2, §4.4)."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment={experiment}"])
    assert cfg.user_backbone.model == cfg.judge_backbone.model == "gemini/gemini-2.5-flash"
    assert cfg.run.reproduction is True


def test_table2_and_table6_method_sets():
    from hydra import compose as _compose

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        t2 = _compose("config", overrides=["experiment=table2"], return_hydra_config=True)
        t6 = _compose("config", overrides=["experiment=table6"], return_hydra_config=True)
    assert t2.hydra.sweeper.params.method.split(",") == ["native_strands", "full", "mem0", "reconmem"]
    assert (CONF / "method" / "native_strands.yaml").exists()
    assert t6.hydra.sweeper.params.method.split(",") == [
        "full", "reconmem", "reconmem_wo_gae", "reconmem_wo_smg", "reconmem_wo_qg", "reconmem_wo_hcc"]
    assert t6.calibration.name == "cr_matched"


def test_ablation_switches():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for flag in ("gae", "smg", "qg", "hcc"):
            m = compose("config", overrides=[f"method=reconmem_wo_{flag}"]).method.manager
            assert m[flag] is False
            assert all(m[o] is True for o in ("gae", "smg", "qg", "hcc") if o != flag)


def _run_cli(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "scripts.run", *args], capture_output=True, text=True,
                          cwd=CONF.parent, env=env, timeout=120)


def test_unknown_key_is_one_line_error():
    proc = _run_cli("method.manager.no_such_knob=3")
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "no_such_knob" in lines[0]
    proc = _run_cli("method=no_such_method")
    assert proc.returncode == 2 and "reconmem_wo_gae" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_missing_api_key_names_variable(tmp_path):
    proc = _run_cli("backbone=gpt5_mini", f"run.results_dir={tmp_path}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert lines[-1].startswith("error:") and "OPENAI_API_KEY" in lines[-1]


@pytest.mark.parametrize("experiment", ("table1", "table6", "coverage"))
def test_the_gemini_mock_user_has_room_to_think(experiment):
    """Gemini-2.5-Flash's thinking counts toward max_tokens; a 200-token cap can leave an empty query."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment={experiment}"])
    assert cfg.benchmark.user_max_tokens >= 4096
