"""CAB metrics (ReConMem paper Tables 2 and 5), as pure functions over per-issue records.

What is counted (one denominator, docs/cab.md "What is counted"):

* **scored** issues = judged (``status == "ok"``) + **errored** ones (``judge_error`` after the
  run's retry with the same judge, or ``error``: the loop crashed after the run's retries). An
  errored issue counts as INCORRECT and carries no verbosity label, so Correct + Partially Correct
  + Incorrect = 100 % and Appropriate + Verbose + Terse + Errored = 100 % of the scored issues.
* **missing** issues (selected but never finished: ``interrupted``, or ``missing`` - no result.json)
  are scored too, as INCORRECT without a verbosity label, and counted apart (``missing``).
* **excluded** issues (``init_failed``: the repository could not be initialised;
  ``docker_unavailable``: a dockerfile but no engine; or an ``excluded_reason``) are not scored.
  Exclusion is a property of the issue, not of a method: the analysis
  (:mod:`benchmarks.analysis.cab_tables`) excludes such an issue for *every* method when any run
  recorded it so, and passes the ids here as ``excluded_ids`` — every method is scored on the same
  issue set (the paper: the same 268 issues for every method).
* Avg. Turns - maintainer responses per scored issue that recorded turns;
* token costs (Eq. 12-13) over scored issues that recorded tokens and turns: for category x in
  {maintainer, memory, combined}, Tok./Issue = mean_i T_i^x and Tok./Turn = mean_i (T_i^x / r_i)
  (macro average over issues); Cost/Issue the same mean over the ledger's ``cost_usd`` (missing = 0).

Token categories, per ledger event (input + output tokens, cached calls included - a cache hit
stands for the call the protocol makes):

* only a counted call (:func:`benchmarks.accounting.is_counted`) has one: user-agent and judge
  calls belong to neither;
* memory: ``role == "memory"`` (calls made inside the context manager's context_for / observe)
  or a memory purpose (:data:`reconmem.platform.llm.purposes.MEMORY_PURPOSES`);
* maintainer: ``role == "maintainer"`` (or, without a role tag, a maintainer purpose) and not memory.
"""

from __future__ import annotations

from statistics import mean
from typing import Any, Iterable, Mapping, Sequence

from benchmarks.accounting import is_counted
from benchmarks.records import Status, sample_class
from reconmem.platform.llm.purposes import MEMORY_PURPOSES, Kind, purposes_of

# A maintainer response's calls: its first (a turn response) and the later ones (tool steps).
MAINTAINER_PURPOSES = purposes_of((Kind.TURN_RESPONSE, Kind.TOOL_STEP))
# Statuses summarize() counts as ``<status>_count``.
COUNTED_STATUSES = (Status.INIT_FAILED, Status.DOCKER_UNAVAILABLE, Status.JUDGE_ERROR, Status.ERROR)

VERDICTS = ("CORRECT", "PARTIALLY CORRECT", "INCORRECT")
VERBOSITY_LABELS = {"APPROPRIATE": "appropriate", "VERBOSE": "verbose", "CONCISE": "terse", "TERSE": "terse"}


def event_category(event: Mapping[str, Any]) -> str | None:
    """``"memory"``, ``"maintainer"`` or ``None`` (a call not counted: user agent, judge; or an
    untagged call of neither kind)."""
    role = event.get("role")
    purpose = event.get("purpose")
    if not is_counted(purpose):
        return None
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


def issue_costs(events: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Maintainer / memory / combined ``cost_usd`` of one issue's ledger events (missing = 0), plus
    ``all`` (user agent and judge included) and ``events_without_cost``."""
    out = {"maintainer": 0.0, "memory": 0.0, "all": 0.0, "events_without_cost": 0}
    for e in events:
        cost = float(e.get("cost_usd") or 0.0)
        if e.get("cost_usd") is None:
            out["events_without_cost"] += 1
        out["all"] += cost
        cat = event_category(e)
        if cat is not None:
            out[cat] += cost
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


def issue_state(result: Mapping[str, Any], excluded_ids: Iterable[str] = ()) -> str:
    """``judged`` | ``errored`` | ``missing`` | ``excluded`` for one issue record (the status's meaning,
    :func:`benchmarks.records.sample_class`; an id in ``excluded_ids`` is excluded for every method)."""
    kind = sample_class(result)
    if kind == "excluded" or str(result.get("sample_id")) in set(excluded_ids):
        return "excluded"
    return "judged" if kind == "ok" else kind


def summarize(results: Sequence[Mapping[str, Any]], *, excluded_ids: Iterable[str] = ()) -> dict[str, Any]:
    """Table 2 + Table 5 numbers from ``result.json`` records of one method (x backbone).

    Each judged record needs ``verdict``, ``verbosity``, ``turns`` (> 0) and ``tokens``
    (``{"maintainer", "memory", "combined"}``, as written by :func:`issue_tokens`). ``excluded_ids``:
    issues excluded for every method (see the module docstring); records with an excluding status
    are excluded anyway. Percentages are over the scored issues (judged + errored + missing).
    """
    excluded_ids = {str(i) for i in excluded_ids}
    states = [issue_state(r, excluded_ids) for r in results]
    judged = [r for r, st in zip(results, states) if st == "judged"]
    errored = [r for r, st in zip(results, states) if st == "errored"]
    missing = [r for r, st in zip(results, states) if st == "missing"]
    scored = judged + errored + missing
    counts = {s.value: sum(1 for r in results if r.get("status") == s.value) for s in COUNTED_STATUSES}
    n = len(scored)
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
        if int(r.get("turns", 0) or 0) <= 0:
            raise ValueError(f"issue {r.get('sample_id')}: turns must be > 0 for a judged issue")
    with_turns = [r for r in scored if int(r.get("turns", 0) or 0) > 0]
    with_tokens = [r for r in with_turns if isinstance(r.get("tokens"), dict)]
    tokens: dict[str, Any] = {}
    for cat in ("maintainer", "memory", "combined"):
        per_issue = [float(r["tokens"][cat]) for r in with_tokens]
        per_turn = [float(r["tokens"][cat]) / int(r["turns"]) for r in with_tokens]
        tokens[f"{cat}_tokens_per_issue"] = mean(per_issue) if per_issue else None  # Eq. 12
        tokens[f"{cat}_tokens_per_turn"] = mean(per_turn) if per_turn else None  # Eq. 13
    with_costs = [r for r in with_tokens if isinstance(r.get("costs"), dict)]
    costs = {f"{cat}_cost_per_issue": (mean(float(r["costs"].get(cat) or 0.0) for r in with_costs) if with_costs else None)
             for cat in ("maintainer", "memory", "combined")}
    costs["all_calls_cost_per_issue"] = mean(float(r["costs"].get("all") or 0.0) for r in with_costs) if with_costs else None
    costs["events_without_cost"] = sum(int(r["costs"].get("events_without_cost") or 0) for r in with_costs)
    return {
        "scored": n,
        "evaluated": len(judged),
        "errored": len(errored),
        "missing": len(missing),
        "excluded": sum(1 for st in states if st == "excluded"),
        "total_records": len(results),
        **{f"{s}_count": c for s, c in counts.items()},
        "correct_pct": _pct(verdicts["CORRECT"], n),
        "partially_correct_pct": _pct(verdicts["PARTIALLY CORRECT"], n),
        "incorrect_pct": _pct(verdicts["INCORRECT"] + len(errored) + len(missing), n),
        "errored_pct": _pct(len(errored), n),
        "missing_pct": _pct(len(missing), n),
        "appropriate_pct": _pct(verbosity["appropriate"], n),
        "verbose_pct": _pct(verbosity["verbose"], n),
        "terse_pct": _pct(verbosity["terse"], n),
        "avg_turns": mean(int(r["turns"]) for r in with_turns) if with_turns else None,
        "n_turn_issues": len(with_turns),
        "n_token_issues": len(with_tokens),
        "fully_satisfied_pct": _pct(sum(1 for r in judged if r.get("final_user_status") == "FULLY_SATISFIED"), n),
        **tokens,
        **costs,
    }
