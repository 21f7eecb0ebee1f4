"""Token accounting over ledger events: which purposes count for which metric (paper §3.3).

* Excluded everywhere (simulation and evaluation, not the evaluated system):
  ``mock_user``, ``judge``, ``coverage_judge``, ``builder``.
* Response generation (CAB: the Maintainer Agent): ``turn_generation``, ``task_generation``,
  ``maintainer_tool_step``.
* Everything else is context management (memory) — ``memory_sketching``, ``memory_update``,
  ``memory_extraction``, ``memory_summarisation``, ``persona`` and any purpose a new method
  introduces — so a new method's memory calls are never silently dropped.

CR (Eq. 10) uses the *input* tokens of all counted calls; end-to-end tokens (Tables 3/4) use
input + output of the same calls. Cost: each ledger event's ``cost_usd`` (priced by the client from
litellm's offline cost map / conf pricing); an event without ``cost_usd`` counts as $0 and is
counted in ``n_events_without_cost`` so the report can say so.
"""

from __future__ import annotations

from typing import Any, Iterable

# One definition shared with the LoCoEval runner's summaries (benchmarks.locoeval.metrics), so the
# report and the runner's summary.json can never disagree on what counts.
from benchmarks.locoeval.metrics import EXCLUDED_PURPOSES
from benchmarks.locoeval.metrics import STAGES as RECONMEM_STAGES  # Table 4's four stages, paper order

RESPONSE_PURPOSES = frozenset({"turn_generation", "task_generation", "maintainer_tool_step"})
STAGE_LABELS = {
    "turn_generation": "Turn Generation",
    "task_generation": "Task Generation",
    "memory_sketching": "Memory Sketching",
    "memory_update": "Memory Update",
    "other": "Other",
}


def is_counted(purpose: str) -> bool:
    """Whether a call belongs to the evaluated system (response generation or memory)."""
    return purpose not in EXCLUDED_PURPOSES


def category(purpose: str) -> str:
    """``excluded`` | ``response`` | ``memory``."""
    if purpose in EXCLUDED_PURPOSES:
        return "excluded"
    return "response" if purpose in RESPONSE_PURPOSES else "memory"


def summarise_events(events: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Per-sample token sums: ``input_tokens`` (CR), ``e2e_tokens``, response / memory split and
    ``tok_<purpose>`` (input + output) for every purpose seen, excluded ones included; costs:
    ``cost_usd`` (counted calls), ``cost_usd_all`` (every call, user simulation and judging
    included), ``cost_<purpose>``; ``n_events`` and ``n_events_without_cost``."""
    out: dict[str, float] = {"input_tokens": 0, "e2e_tokens": 0, "response_tokens": 0, "memory_tokens": 0,
                             "excluded_tokens": 0, "n_calls": 0, "cost_usd": 0.0, "cost_usd_all": 0.0,
                             "n_events": 0, "n_events_without_cost": 0}
    for ev in events:
        purpose = str(ev.get("purpose") or "unknown")
        tin = int(ev.get("input_tokens") or 0)
        tout = int(ev.get("output_tokens") or 0)
        out["n_events"] += 1
        if ev.get("cost_usd") is None:
            out["n_events_without_cost"] += 1
        cost = float(ev.get("cost_usd") or 0.0)
        out[f"tok_{purpose}"] = out.get(f"tok_{purpose}", 0) + tin + tout
        out[f"cost_{purpose}"] = out.get(f"cost_{purpose}", 0.0) + cost
        out["cost_usd_all"] += cost
        cat = category(purpose)
        if cat == "excluded":
            out["excluded_tokens"] += tin + tout
            continue
        out["n_calls"] += 1
        out["input_tokens"] += tin
        out["e2e_tokens"] += tin + tout
        out[f"{cat}_tokens"] += tin + tout
        out["cost_usd"] += cost
    return out
