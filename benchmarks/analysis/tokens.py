"""Token accounting over ledger events: which purposes count for which metric (paper §3.3).

* Excluded everywhere (simulation and evaluation, not the evaluated system):
  ``mock_user``, ``judge``, ``coverage_judge``, ``builder``.
* Response generation (CAB: the Maintainer Agent): ``turn_generation``, ``task_generation``,
  ``maintainer_tool_step``.
* Everything else is context management (memory) — ``memory_sketching``, ``memory_update``,
  ``memory_extraction``, ``memory_summarisation``, ``persona`` and any purpose a new method
  introduces — so a new method's memory calls are never silently dropped.

CR (Eq. 10) uses the *input* tokens of all counted calls; end-to-end tokens (Tables 3/4) use
input + output of the same calls.
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
    ``tok_<purpose>`` (input + output) for every purpose seen, excluded ones included."""
    out: dict[str, float] = {"input_tokens": 0, "e2e_tokens": 0, "response_tokens": 0, "memory_tokens": 0,
                             "excluded_tokens": 0, "n_calls": 0}
    for ev in events:
        purpose = str(ev.get("purpose") or "unknown")
        tin = int(ev.get("input_tokens") or 0)
        tout = int(ev.get("output_tokens") or 0)
        out[f"tok_{purpose}"] = out.get(f"tok_{purpose}", 0) + tin + tout
        cat = category(purpose)
        if cat == "excluded":
            out["excluded_tokens"] += tin + tout
            continue
        out["n_calls"] += 1
        out["input_tokens"] += tin
        out["e2e_tokens"] += tin + tout
        out[f"{cat}_tokens"] += tin + tout
    return out
