"""Token accounting over ledger events: which purposes count for which metric (paper §3.3).

The classes come from the one purpose taxonomy, :mod:`reconmem.platform.llm.purposes`:

* Excluded everywhere (simulation and evaluation, not the evaluated system):
  :data:`~reconmem.platform.llm.purposes.EXCLUDED_PURPOSES` (the mock user, the judges, the builder).
* Response generation (CAB: the Maintainer Agent):
  :data:`~reconmem.platform.llm.purposes.RESPONSE_PURPOSES`.
* Everything else is context management (memory) — the taxonomy's memory purposes and any
  unregistered purpose a record carries — so a method's memory calls are never silently dropped.

CR (Eq. 10) uses the *input* tokens of all counted calls; end-to-end tokens (Tables 3/4) use
input + output of the same calls. Cost: each ledger event's ``cost_usd`` (priced by the client from
litellm's offline cost map / conf pricing); an event without ``cost_usd`` counts as $0 and is
counted in ``n_events_without_cost`` so the report can say so.
"""

from __future__ import annotations

from typing import Any, Iterable

from benchmarks.locoeval.metrics import STAGES as RECONMEM_STAGES  # Table 4's four stages, paper order
from reconmem.platform.llm.purposes import EXCLUDED_PURPOSES, PURPOSES, RESPONSE_PURPOSES

STAGE_LABELS = {**{stage: PURPOSES[stage].label for stage in RECONMEM_STAGES}, "other": "Other"}


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
