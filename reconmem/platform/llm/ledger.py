"""``UsageLedger``: the thread-safe record of every backbone call of a run (tokens, seconds, cost),
its tag scopes (sample, turn, phase, role) and the run's spend limit."""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from reconmem.platform.llm.response import Usage

_TAGS: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar("reconmem_llm_tags", default=None)


def current_tags() -> dict[str, Any]:
    """The tags of the innermost ``UsageLedger.tags`` scope active in this context."""
    return dict(_TAGS.get() or {})


class UsageLedger:
    """Thread-safe record of every backbone call of a run.

    Tags set by ``with ledger.tags(sample=..., turn=...)`` apply to every call made inside the
    scope, in this thread/task (a context variable: code that hands work to a thread pool must
    open its scope inside the worker, or run it under ``contextvars.copy_context()``). Scopes nest;
    inner values win. The scope is shared by all ledgers, so a judge client with its own ledger is
    tagged the same way.

    ``cost_limit_usd``: the run's spend limit. Every client recording into this ledger checks
    :meth:`limit_reached` before a paid, non-cached call and raises
    :class:`~reconmem.platform.llm.errors.CostLimitReached` instead of calling. Calls already in
    flight finish (with N concurrent calls the total may pass the limit by up to N calls' cost).
    ``cost_usd`` of events loaded from earlier runs (``events=``) counts towards the limit.
    """

    def __init__(self, events: Sequence[Mapping[str, Any]] | None = None, *, cost_limit_usd: float | None = None) -> None:
        self._lock = threading.Lock()
        self._events: list[dict[str, Any]] = [dict(e) for e in events or ()]
        self._cost = sum(float(e.get("cost_usd") or 0.0) for e in self._events)
        self.cost_limit_usd = None if cost_limit_usd is None else float(cost_limit_usd)

    @contextlib.contextmanager
    def tags(self, **tags: Any) -> Iterator[dict[str, Any]]:
        """Context manager: tag every call recorded inside it (sample=..., turn=..., phase=..., role=...)."""
        merged = {**(_TAGS.get() or {}), **tags}
        token = _TAGS.set(merged)
        try:
            yield dict(merged)
        finally:
            _TAGS.reset(token)

    def record(self, purpose: str, usage: Usage, *, cached: bool, model: str, seconds: float,
               cost_usd: float = 0.0, **extra: Any) -> dict[str, Any]:
        """Append one call event (tags of the current scope included) and return it. ``cost_usd`` is 0
        for cached calls."""
        cost = 0.0 if cached else float(cost_usd or 0.0)
        event = {
            "purpose": purpose,
            "input_tokens": int(usage.input_tokens),
            "output_tokens": int(usage.output_tokens),
            "cached": bool(cached),
            "model": model,
            "seconds": round(float(seconds), 6),
            "cost_usd": round(cost, 10),
        }
        for key, value in {**(_TAGS.get() or {}), **extra}.items():
            event.setdefault(key, value)
        with self._lock:
            self._events.append(event)
            self._cost += cost
        return event

    @property
    def total_cost_usd(self) -> float:
        """Dollars spent by all recorded calls (cached calls cost nothing)."""
        with self._lock:
            return self._cost

    def limit_reached(self) -> bool:
        """Whether the spend limit is set and the recorded cost has reached it."""
        return self.cost_limit_usd is not None and self.total_cost_usd >= self.cost_limit_usd

    @property
    def events(self) -> list[dict[str, Any]]:
        """A snapshot (copy) of all events, in recording order."""
        with self._lock:
            return [dict(e) for e in self._events]

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def extend(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Append events recorded elsewhere (e.g. a worker's ledger)."""
        with self._lock:
            for e in events:
                self._events.append(dict(e))
                self._cost += float(e.get("cost_usd") or 0.0)

    def totals(self, by: Sequence[str] | str = ("purpose",), **filters: Any) -> dict[Any, Any]:
        """Sum calls, tokens, seconds and dollars, grouped by event fields, over events matching ``filters``.

        ``by=("purpose",)`` -> ``{purpose: {...}}``; several fields -> tuple keys; ``by=()`` -> one
        totals dict. Each totals dict has calls, cached_calls, input_tokens, output_tokens,
        total_tokens, seconds and cost_usd. Events lacking a field group under None.
        """
        fields = (by,) if isinstance(by, str) else tuple(by)
        groups: dict[Any, dict[str, Any]] = {}
        for event in self.events:
            if any(event.get(k) != v for k, v in filters.items()):
                continue
            key_values = tuple(event.get(f) for f in fields)
            key = key_values[0] if len(fields) == 1 else key_values
            agg = groups.setdefault(key, _empty_totals())
            agg["calls"] += 1
            agg["cached_calls"] += int(bool(event.get("cached")))
            agg["input_tokens"] += int(event.get("input_tokens", 0))
            agg["output_tokens"] += int(event.get("output_tokens", 0))
            agg["total_tokens"] += int(event.get("input_tokens", 0)) + int(event.get("output_tokens", 0))
            agg["seconds"] = round(agg["seconds"] + float(event.get("seconds", 0.0)), 6)
            agg["cost_usd"] = round(agg["cost_usd"] + float(event.get("cost_usd") or 0.0), 10)
        if not fields:
            return groups.get((), _empty_totals())
        return groups

    def to_jsonl(self, path: str | Path) -> Path:
        """Write all events as JSON lines (atomic)."""
        path = Path(path)
        lines = "".join(json.dumps(e, ensure_ascii=False, default=str) + "\n" for e in self.events)
        atomic_write_text(path, lines)
        return path

    @classmethod
    def from_jsonl(cls, path: str | Path) -> "UsageLedger":
        """Read a ledger written by :meth:`to_jsonl`."""
        path = Path(path)
        events = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{lineno}: invalid JSON in usage ledger: {exc}") from exc
        return cls(events)


def _empty_totals() -> dict[str, Any]:
    return {"calls": 0, "cached_calls": 0, "input_tokens": 0, "output_tokens": 0, "total_tokens": 0,
            "seconds": 0.0, "cost_usd": 0.0}


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
