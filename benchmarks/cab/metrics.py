"""CAB metrics (ReConMem paper Tables 2 and 5), as pure functions over per-issue records.

Denominator: issues whose ``result.json`` has ``status == "ok"`` (judged). ``init_failed`` (the
repository could not be initialised), ``docker_unavailable`` (a dockerfile but no engine),
``judge_error`` (malformed judgment after one retry) and ``error`` are excluded and counted
separately. Everything else falls out of the judged records:

* Correct % / Partially Correct % / Incorrect % - the judge's verdict;
* Appropriate % / Verbose % / Terse % - the judge's verbosity (upstream CONCISE = the paper's Terse);
* Avg. Turns - maintainer responses per issue;
* token costs (Eq. 12-13): for category x in {maintainer, memory, combined},
  Tok./Issue = mean_i T_i^x and Tok./Turn = mean_i (T_i^x / r_i) (macro average over issues).

Token categories, per ledger event (input + output tokens, cached calls included - a cache hit
stands for the call the protocol makes):

* memory: ``role == "memory"`` (calls made inside the context manager's context_for / observe)
  or a memory-management purpose (:data:`MEMORY_PURPOSES`);
* maintainer: ``role == "maintainer"`` (or, without a role tag, a maintainer purpose) and not memory;
* user-agent and judge calls belong to neither.
"""

from __future__ import annotations

from statistics import mean
from typing import Any, Iterable, Mapping, Sequence

MEMORY_PURPOSES = frozenset({
    "memory_sketching", "memory_update", "memory_extraction", "memory_summarisation", "memory_summarization",
    "memory_retrieval", "memory_consolidation", "persona", "event_summary", "core_memory", "memgpt_memory",
    "query_grounding", "code_draft", "coverage_judge_memory",
})
MAINTAINER_PURPOSES = frozenset({"turn_generation", "maintainer_tool_step"})
EXCLUDED_STATUSES = ("init_failed", "docker_unavailable", "judge_error", "error")

VERDICTS = ("CORRECT", "PARTIALLY CORRECT", "INCORRECT")
VERBOSITY_LABELS = {"APPROPRIATE": "appropriate", "VERBOSE": "verbose", "CONCISE": "terse", "TERSE": "terse"}


def event_category(event: Mapping[str, Any]) -> str | None:
    """``"memory"``, ``"maintainer"`` or ``None`` (user agent, judge, anything else)."""
    role = event.get("role")
    purpose = event.get("purpose")
    if role == "memory" or purpose in MEMORY_PURPOSES:
        return "memory"
    if role == "maintainer" or (role is None and purpose in MAINTAINER_PURPOSES):
        return "maintainer"
    return None


def issue_tokens(events: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Maintainer / memory / combined tokens (input + output) of one issue's ledger events."""
    out = {"maintainer": 0, "memory": 0}
    for e in events:
        cat = event_category(e)
        if cat is not None:
            out[cat] += int(e.get("input_tokens", 0)) + int(e.get("output_tokens", 0))
    out["combined"] = out["maintainer"] + out["memory"]
    return out


def tokens_by_role(events: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Input / output tokens and calls grouped by role tag (maintainer, memory, user, judge, ...)."""
    out: dict[str, dict[str, int]] = {}
    for e in events:
        role = str(e.get("role") or "untagged")
        agg = out.setdefault(role, {"calls": 0, "input_tokens": 0, "output_tokens": 0})
        agg["calls"] += 1
        agg["input_tokens"] += int(e.get("input_tokens", 0))
        agg["output_tokens"] += int(e.get("output_tokens", 0))
    return out


def _pct(n: int, d: int) -> float | None:
    return None if d == 0 else 100.0 * n / d


def summarize(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Table 2 + Table 5 numbers from ``result.json`` records.

    Each judged record needs ``verdict``, ``verbosity``, ``turns`` (> 0) and ``tokens``
    (``{"maintainer", "memory", "combined"}``, as written by :func:`issue_tokens`).
    """
    judged = [r for r in results if r.get("status") == "ok"]
    counts = {s: sum(1 for r in results if r.get("status") == s) for s in EXCLUDED_STATUSES}
    n = len(judged)
    verdicts = {v: sum(1 for r in judged if r.get("verdict") == v) for v in VERDICTS}
    verbosity = {k: 0 for k in ("appropriate", "verbose", "terse")}
    for r in judged:
        label = VERBOSITY_LABELS.get(str(r.get("verbosity", "")).upper())
        if label is None:
            raise ValueError(f"issue {r.get('sample_id')}: unknown verbosity {r.get('verbosity')!r}")
        verbosity[label] += 1
    unknown = [r.get("sample_id") for r in judged if r.get("verdict") not in VERDICTS]
    if unknown:
        raise ValueError(f"issues {unknown[:5]}: verdict not in {VERDICTS}")
    for r in judged:
        if int(r.get("turns", 0)) <= 0:
            raise ValueError(f"issue {r.get('sample_id')}: turns must be > 0 for a judged issue")
    tokens: dict[str, Any] = {}
    for cat in ("maintainer", "memory", "combined"):
        per_issue = [float(r["tokens"][cat]) for r in judged]
        per_turn = [float(r["tokens"][cat]) / int(r["turns"]) for r in judged]
        tokens[f"{cat}_tokens_per_issue"] = mean(per_issue) if per_issue else None  # Eq. 12
        tokens[f"{cat}_tokens_per_turn"] = mean(per_turn) if per_turn else None  # Eq. 13
    return {
        "evaluated": n,
        "total_records": len(results),
        **{f"{s}_count": c for s, c in counts.items()},
        "correct_pct": _pct(verdicts["CORRECT"], n),
        "partially_correct_pct": _pct(verdicts["PARTIALLY CORRECT"], n),
        "incorrect_pct": _pct(verdicts["INCORRECT"], n),
        "appropriate_pct": _pct(verbosity["appropriate"], n),
        "verbose_pct": _pct(verbosity["verbose"], n),
        "terse_pct": _pct(verbosity["terse"], n),
        "avg_turns": mean(int(r["turns"]) for r in judged) if judged else None,
        "fully_satisfied_pct": _pct(sum(1 for r in judged if r.get("final_user_status") == "FULLY_SATISFIED"), n),
        **tokens,
    }
