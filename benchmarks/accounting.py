"""Which LLM calls a method is charged for (paper §3.3), and one sample's token and cost sums.

The one counting rule, over the purpose taxonomy :mod:`reconmem.platform.llm.purposes`: a call
counts (:func:`is_counted`) unless its purpose simulates or evaluates
(:data:`~reconmem.platform.llm.purposes.EXCLUDED_PURPOSES`: the mock user, the judges, the
builder). A counted call is response generation
(:data:`~reconmem.platform.llm.purposes.RESPONSE_PURPOSES`) or context management (memory: the
taxonomy's memory purposes and any unregistered purpose a record carries, so a method's memory
calls are never silently dropped). Every benchmark's metrics and the analysis use this rule.

CR (Eq. 10) uses the *input* tokens of the counted calls; end-to-end tokens use input + output of
the same calls. Cost: each ledger event's ``cost_usd``; an event without one counts as $0 and is
counted in ``n_events_without_cost``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from reconmem.platform.llm.purposes import EXCLUDED_PURPOSES, RESPONSE_PURPOSES

CallClass = Literal["excluded", "response", "memory"]


def call_class(purpose: str | None) -> CallClass:
    """``excluded`` (simulation, judging, building) | ``response`` | ``memory`` (anything else)."""
    if purpose in EXCLUDED_PURPOSES:
        return "excluded"
    return "response" if purpose in RESPONSE_PURPOSES else "memory"


def is_counted(purpose: str | None) -> bool:
    """Whether a call of ``purpose`` belongs to the evaluated system (response generation or memory)."""
    return call_class(purpose) != "excluded"


def summarise_events(events: Iterable[Mapping[str, Any]]) -> dict[str, float]:
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
        cat = call_class(purpose)
        if cat == "excluded":
            out["excluded_tokens"] += tin + tout
            continue
        out["n_calls"] += 1
        out["input_tokens"] += tin
        out["e2e_tokens"] += tin + tout
        out[f"{cat}_tokens"] += tin + tout
        out["cost_usd"] += cost
    return out
