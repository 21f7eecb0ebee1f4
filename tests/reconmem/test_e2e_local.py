"""End-to-end: a 10-turn conversation about boltons with the REAL local backbone (no scripted replies).

The tiny model's quality is not the point; the path is: response generation, memory sketching and
memory updates all go through ``LLMClient`` exactly as with an API backbone. What the model produced
is printed (run with ``-s``) and written to ``reconmem_e2e_local.json`` in the test's tmp dir.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from reconmem.platform.context import Session, Turn

REPO = Path(__file__).resolve().parents[2]

QUERIES = [
    "I'm working on the boltons repository. How does `chunked` in iterutils.py split an iterable?",
    "Can you show me a small example that uses chunked to batch log lines in groups of 3?",
    "I also need overlapping windows of log lines. Is `windowed` in iterutils the right helper?",
    "Our service caches parsed lines. How does the `LRU` class in cacheutils.py evict entries?",
    "Write a function `parse_batches(lines, size)` that uses chunked and returns a list of lists.",
    "Requirement: parse_batches must raise ValueError when size is not positive.",
    "How would I count cache hits with LRU for monitoring?",
    "Actually, let's not use windowed any more; plain chunked batches are enough.",
    "Can you make a helper that slugifies batch names with `slugify` from strutils.py?",
    "Summarise what parse_batches must do and which boltons helpers we decided to use.",
]


@pytest.mark.slow
@pytest.mark.timeout(7200)  # ~3-7 min per turn with the 0.5B model on a busy 2-core machine
def test_ten_turn_conversation_with_the_local_backbone(boltons_index, embedder, tmp_path):
    from omegaconf import OmegaConf

    from reconmem.platform.llm import BackboneSpec, LLMClient, UsageLedger
    from reconmem.memory.method import ReConMem

    spec = BackboneSpec.from_config(OmegaConf.load(REPO / "conf" / "backbone" / "local.yaml"))
    spec.local["threads"] = "auto"  # as in tests/llm: one thread when the shared machine is busy
    spec.max_output_tokens = 160  # keeps 10 turns affordable on a shared CPU; the path is unchanged
    from reconmem.platform.downloads import cache_root

    # temperature-0 response cache: a re-run replays the same conversation through the same path
    llm = LLMClient(spec, ledger=UsageLedger(), cache_path=cache_root() / "llm" / "tests-reconmem-e2e.sqlite")
    # budgets: the method's own table for this backbone (conf/method/reconmem.yaml; defaults for "local")
    method_cfg = OmegaConf.load(REPO / "conf" / "method" / "reconmem.yaml")
    method = ReConMem(backbone=spec.name, budgets_by_backbone=OmegaConf.to_container(method_cfg.budgets_by_backbone),
                      sketch_max_tokens=256, update_max_tokens=96)
    method.start(Session(sample_id="boltons-e2e", llm=llm, embedder=embedder, repo=boltons_index))

    log: list[dict] = []
    for index, query in enumerate(QUERIES, start=1):
        started = time.perf_counter()
        reply = method.respond(query)
        method.observe(Turn(index, query, reply.text))
        report = method.turn_reports[-1]
        log.append({
            "turn": index,
            "query": query,
            "context_items": [(i.kind, i.id, i.source, i.meta.get("stage")) for i in reply.context.items],
            "dual_query_used": reply.context.dual_query is not None,
            "response": reply.text,
            "construction": report,
            "seconds": round(time.perf_counter() - started, 1),
        })
        print(f"--- turn {index} ({log[-1]['seconds']} s): {len(reply.context.items)} context items; "
              f"sketch: {[m['text'] for m in report.get('memories', [])]} "
              f"decisions: {[d.get('action', d.get('skipped')) for d in report.get('decisions', [])]}", flush=True)

    state = method.state()
    (tmp_path / "reconmem_e2e_local.json").write_text(json.dumps({"turns": log, "state": state}, indent=1, default=str))
    print(json.dumps({"stats": state["stats"], "graph": state["graph"]}, indent=1, default=str))

    method.graph.check_invariants()
    assert len(QUERIES) >= 10
    assert method.graph.semantic, f"the local model produced no memory in 10 turns: {state['stats']}"
    assert all(entry["context_items"] for entry in log)  # every turn had context (repo-wide at least)
    assert any(any(kind == "memory" for kind, *_ in entry["context_items"]) for entry in log[1:])
    totals = llm.ledger.totals()
    assert totals["turn_generation"]["calls"] == len(QUERIES)
    assert totals["memory_sketching"]["calls"] == len(QUERIES)
    assert "memory_update" in totals
    json.dumps(state)  # memory.json is serialisable
