"""Every baseline through the LoCoEval benchmark (``LoCoEval.solve`` / ``grade`` via the loop's ``run_one``) with scripted replies (ScriptedLLM):
read-only tasks leave memory untouched, and the ledger keeps response generation (role assistant)
apart from memory management (role memory)."""

from __future__ import annotations

import dataclasses

import pytest

from baselines.full import FullHistory
from baselines.ld_agent import LDAgent
from baselines.mem0 import Mem0
from baselines.mem0r import Mem0R
from baselines.memgpt import MemGPT
from baselines.vanilla_rag import VanillaRAG

FACTORIES = {
    "full": FullHistory, "vanilla_rag": VanillaRAG, "mem0": Mem0, "mem0r": lambda: Mem0R(repo_k=0),
    "memgpt": MemGPT, "ld_agent": lambda: LDAgent(short_term_turns=4),
}
MEMORY = {"memory_extraction", "memory_update", "memory_summarisation", "persona"}


def scripted(messages, purpose):
    if purpose in ("turn_generation", "task_generation"):
        return {"text": "Sure.", "tool_calls": [{"name": "send_message", "arguments": {"message": "def f():\n    return 1"}}]}
    if purpose == "memory_extraction":
        return {"facts": [{"text": f"fact about {messages[-1]['content'][-60:]}", "paths": ["timeutils.py/total_seconds"]}]}
    if purpose == "memory_update":
        return {"memory": [{"id": "0", "text": "updated fact", "event": "UPDATE"}]}
    if purpose == "persona":
        return {"user_traits": ["works on boltons"], "agent_traits": []}
    return "A summary of the session about timeutils."


@pytest.mark.parametrize("method", list(FACTORIES))
def test_baseline_through_the_benchmark(method, make_session, run_locoeval_sample, tmp_path):
    from benchmarks.locoeval.loader import load_samples

    sample = next(s for s in load_samples("package:benchmarks.locoeval/demo/samples.jsonl") if s.id == "boltons-time-dict-single")
    sample = dataclasses.replace(sample, outline=sample.outline[:10])
    llm = make_session(scripted).llm
    result, _ = run_locoeval_sample(sample, FACTORIES[method](), llm, tmp_path, turn_max_tokens=64, task_max_tokens=64)
    assert result["status"] == "ok" and result["n_turns"] == 10 and len(result["tasks"]) == 2
    roles: dict[str, set[str]] = {}
    for e in llm.ledger.events:
        roles.setdefault(e["role"], set()).add(e["purpose"])
    assert roles["assistant"] - {"memory_summarisation"} <= {"turn_generation", "task_generation"}
    assert roles.get("memory", set()) <= MEMORY
    if method in ("mem0", "mem0r", "ld_agent"):
        assert roles["memory"]
    if method in ("full", "vanilla_rag", "memgpt"):
        assert "memory" not in roles
