"""Every baseline through the LoCoEval runner with the real local backbone (slow).

A 10-turn scripted preparation dialogue (the shipped demo sample, first 10 outline steps) and one
read-only function-generation task, run by ``LoCoEval.solve`` / ``grade`` through the loop's
``run_one`` exactly as a benchmark run does, with the unified repository adaptation on (k=10). The DevEval test execution is
replaced by a stub evaluator: this test is about the method path and its token ledger.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BASELINES = ["full", "vanilla_rag", "mem0", "mem0r", "memgpt", "ld_agent"]
RESPONSE = {"turn_generation", "task_generation"}
MEMORY_PURPOSES = {"memory_extraction", "memory_update", "memory_summarisation", "persona"}
EXPECTED_MEMORY = {"full": set(), "vanilla_rag": set(), "mem0": {"memory_extraction"}, "mem0r": {"memory_extraction"},
                   "memgpt": set(), "ld_agent": {"persona"}}


@pytest.fixture(scope="module")
def local_backbone_cfg():
    from omegaconf import OmegaConf

    return OmegaConf.load(REPO_ROOT / "conf" / "backbone" / "local.yaml")


@pytest.mark.slow
@pytest.mark.parametrize("method", BASELINES)
def test_baseline_ten_turns_with_local_backbone(method, local_backbone_cfg, run_locoeval_sample, tmp_path):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from benchmarks.locoeval.loader import load_samples
    from reconmem.platform.downloads import cache_root
    from reconmem.platform.llm import BackboneSpec, LLMClient, UsageLedger

    sample = next(s for s in load_samples("package:benchmarks.locoeval/demo/samples.jsonl")
                  if s.id == "boltons-time-dict-single")
    sample = dataclasses.replace(sample, outline=sample.outline[:10], tasks=sample.tasks[:1])
    llm = LLMClient(BackboneSpec.from_config(local_backbone_cfg), ledger=UsageLedger(),
                    cache_path=cache_root() / "llm_cache.sqlite")
    root = OmegaConf.create({"method": OmegaConf.load(REPO_ROOT / "conf" / "method" / f"{method}.yaml"),
                             "benchmark": {"name": "locoeval", "repo_adaptation_k": 10}, "backbone": local_backbone_cfg})
    cm = instantiate(root.method.manager)  # LoCoEval's unified repository adaptation: the method's k=10

    result, _ = run_locoeval_sample(sample, cm, llm, tmp_path, turn_max_tokens=96, task_max_tokens=160)
    assert result["status"] == "ok" and result["n_turns"] == 10

    events = llm.ledger.events
    by_role: dict[str, set[str]] = {}
    for e in events:
        by_role.setdefault(e.get("role"), set()).add(e["purpose"])
    # response generation happens only in the assistant role, memory management only outside it
    assert by_role.get("assistant", set()) - {"memory_summarisation"} <= RESPONSE
    assert by_role.get("memory", set()) <= MEMORY_PURPOSES
    totals = llm.ledger.totals()
    assert totals["turn_generation"]["calls"] >= 10 and totals["task_generation"]["calls"] >= 1
    response_tokens = sum(totals[p]["total_tokens"] for p in RESPONSE)
    memory_tokens = sum(t["total_tokens"] for p, t in totals.items() if p in MEMORY_PURPOSES)
    assert response_tokens > 0
    assert EXPECTED_MEMORY[method] <= set(totals)
    if EXPECTED_MEMORY[method]:
        assert memory_tokens > 0
        assert totals[next(iter(EXPECTED_MEMORY[method]))]["calls"] == 10  # one per prep turn
    else:
        assert set(totals) <= RESPONSE | {"memory_summarisation"}
    json.dumps(cm.state(), default=str)  # what the run loop writes as memory.json
