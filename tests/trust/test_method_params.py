"""Methods own their parameters (ReConMem's budgets table keyed by backbone); the baselines' unified
repository adaptation is the benchmark's (``benchmark.repo_adaptation_k``), handed to each method's
``repo_context_k`` and overridable per method; clear one-line errors for a missing or misplaced k."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from reconmem.memory.method import DEFAULT_BUDGETS, ReConMem, resolve_budgets

CONF = Path(__file__).resolve().parents[2] / "conf"


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def _budgets(cfg) -> list[int]:
    c = instantiate(cfg.method.manager).config
    return [c[k] for k in ("k1", "k2", "k31", "k32")]


def test_budget_resolution_order():
    table = {"default": {"k2": 5}, "big": {"k1": 3, "k31": 4}}
    assert resolve_budgets({}, None, None) == DEFAULT_BUDGETS
    assert resolve_budgets({}, table, "big") == {"k1": 3, "k2": 5, "k31": 4, "k32": 2}
    assert resolve_budgets({"k2": 9, "k1": None}, table, "big")["k2"] == 9  # explicit wins
    with pytest.raises(ValueError, match="budgets_by_backbone.big has unknown key"):
        resolve_budgets({}, {"big": {"k9": 1}}, "big")
    assert ReConMem().config["k2"] == DEFAULT_BUDGETS["k2"]


def test_budgets_come_from_the_method_config_and_overrides_still_work():
    assert _budgets(_cfg("backbone=deepseek_v32")) == [3, 6, 3, 3]
    assert _budgets(_cfg("backbone=openai_compatible")) == [2, 4, 2, 2]  # not in the table: the defaults
    assert _budgets(_cfg("method=reconmem_wo_hcc", "backbone=qwen3_235b", "method.manager.k2=7",
                         "method.manager.k31=1", "method.manager.k32=3")) == [2, 7, 1, 3]
    assert _budgets(_cfg("experiment=demo")) == [2, 4, 1, 1]  # the demo's 2-core sizing
    for name in (p.stem for p in (CONF / "backbone").glob("*.yaml")):
        assert "budgets" not in _cfg(f"backbone={name}").backbone, name


def test_repo_adaptation_k_is_the_benchmarks_and_reaches_every_baseline():
    expected = {"locoeval": 10, "locoeval_verified": 10, "locoeval_verified_v2": 10, "demo": 2, "demo_quick": 2, "cab": 0}
    for bench in (p.stem for p in (CONF / "benchmark").glob("*.yaml")):  # every shipped benchmark declares it
        k = _cfg(f"benchmark={bench}").benchmark.repo_adaptation_k
        assert isinstance(k, int) and k >= 0 and k == expected.get(bench, k), bench
    adapted = [p.stem for p in (CONF / "method").glob("*.yaml")
               if "repo_context_k" in (_cfg(f"method={p.stem}").method.get("manager") or {})]
    assert set(adapted) >= {"full", "vanilla_rag", "mem0", "memgpt", "ld_agent", "no_memory", "oracle_context",
                            "memory_tool"}
    for method in adapted:
        assert "repo_context_k_by_benchmark" not in _cfg(f"method={method}").method, method
        for bench, k in expected.items():
            assert instantiate(_cfg(f"method={method}", f"benchmark={bench}").method.manager).repo_context_k == k
    assert instantiate(_cfg("method=vanilla_rag", "benchmark=locoeval", "method.manager.repo_context_k=3")
                       .method.manager).repo_context_k == 3


def test_the_manifest_records_the_resolved_k():
    from benchmarks.harness import build_method
    from benchmarks.runloop import method_params

    for bench, k in (("locoeval", 10), ("demo", 2), ("cab", 0)):
        cfg = _cfg("method=full", f"benchmark={bench}")
        assert method_params(cfg, build_method(cfg))["repo_context_k"] == k
    cfg = _cfg("method=mem0", "benchmark=cab", "method.manager.repo_context_k=4")
    assert method_params(cfg, build_method(cfg))["repo_context_k"] == 4


def test_a_benchmark_without_repo_adaptation_k_is_a_one_line_error():
    from omegaconf import open_dict

    from benchmarks.errors import ConfigError
    from benchmarks.harness import build_method

    cfg = _cfg("method=ld_agent", "benchmark=locoeval", "benchmark.name=my_new_bench")
    with open_dict(cfg):
        del cfg.benchmark["repo_adaptation_k"]
    with pytest.raises(ConfigError, match=r"^benchmark=my_new_bench: benchmark.repo_adaptation_k is not set") as err:
        build_method(cfg)
    assert "\n" not in str(err.value)
    ok = _cfg("method=ld_agent", "benchmark=locoeval", "benchmark.name=my_new_bench", "method.manager.repo_context_k=4")
    with open_dict(ok):
        del ok.benchmark["repo_adaptation_k"]
    assert build_method(ok).repo_context_k == 4
    assert build_method(_cfg("method=reconmem", "benchmark=locoeval")) is not None  # no adaptation: not needed


def test_benchmark_repo_context_k_is_a_clear_error():
    from benchmarks.errors import ConfigError
    from benchmarks.harness import build_method

    cfg = _cfg("method=reconmem", "benchmark=locoeval", "+benchmark.repo_context_k=10")
    with pytest.raises(ConfigError, match="benchmark.repo_context_k is not an option.*benchmark.repo_adaptation_k"):
        build_method(cfg)
