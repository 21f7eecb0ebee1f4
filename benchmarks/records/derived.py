"""Fields derived from records: a sample's usage from its ledger events, the manifest's selection
entries and the result a selected sample counts as when it never finished."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchmarks.records.schema import Result, SelectedSample, Usage
from benchmarks.records.status import Status

SELECTED_KEYS = ("subset", "project", "repo_cluster", "n_turns", "n_tasks", "task_id", "repo")


def usage_of(events: Iterable[Mapping[str, Any]]) -> tuple[Usage, float]:
    """Token totals and summed ``cost_usd`` (missing = 0) of ledger events."""
    usage: Usage = {"calls": 0, "cached_calls": 0, "input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    cost = 0.0
    for e in events:
        usage["calls"] += 1
        usage["cached_calls"] += int(bool(e.get("cached")))
        usage["input_tokens"] += int(e.get("input_tokens") or 0)
        usage["output_tokens"] += int(e.get("output_tokens") or 0)
        cost += float(e.get("cost_usd") or 0.0)
    usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    return usage, round(cost, 8)


def attempt_events(ledgers: Iterable[Any], attempt: str) -> list[dict[str, Any]]:
    """Every event (all fields) tagged with ``attempt`` across ``ledgers`` (each ledger once)."""
    seen: set[int] = set()
    out: list[dict[str, Any]] = []
    for led in ledgers:
        if led is None or id(led) in seen:
            continue
        seen.add(id(led))
        out.extend(e for e in led.events if e.get("attempt") == attempt)
    return out


def is_scripted(models: Mapping[str, Any]) -> bool:
    """Whether any recorded model is a scripted test hook (``scripted/...``)."""
    return any(str(m or "").startswith("scripted/") for m in models.values())


def selected_entry(sample_id: str, fields: Mapping[str, Any]) -> SelectedSample:
    """The manifest entry of one selected sample from its benchmark's ``error_result`` fields."""
    entry: dict[str, Any] = {"sample_id": str(sample_id),
                             **{k: fields[k] for k in SELECTED_KEYS if fields.get(k) is not None}}
    tasks = fields.get("tasks")
    if isinstance(tasks, list):
        entry["tasks"] = [{"req_id": t.get("req_id"), "namespace": t.get("namespace")} for t in tasks
                          if isinstance(t, Mapping)]
        entry.setdefault("n_tasks", len(entry["tasks"]))
    return entry  # type: ignore[return-value]


def manifest_selection(manifest: Mapping[str, Any]) -> dict[str, SelectedSample] | None:
    """Sample id -> entry of the manifest's ``selected`` (None for manifests written before it)."""
    selected = manifest.get("selected")
    if not isinstance(selected, list):
        return None
    return {str(e["sample_id"]): e for e in selected if isinstance(e, Mapping) and e.get("sample_id") is not None}


def missing_result(entry: Mapping[str, Any], *, status: str = Status.MISSING.value, error: str | None = None) -> Result:
    """The result a selected sample without a finished record counts as: every task failed (``not_run``)."""
    tasks = [{"req_id": t.get("req_id"), "namespace": t.get("namespace"), "outcome": "not_run", "passed": False}
             for t in entry.get("tasks") or []]
    n_tasks = entry.get("n_tasks")
    if n_tasks is None and entry.get("tasks") is not None:
        n_tasks = len(tasks)
    return {**entry, "status": status, "error": error or "no result.json (the sample never finished)",  # type: ignore[typeddict-item]
            "n_tasks": None if n_tasks is None else int(n_tasks), "tasks": tasks}
