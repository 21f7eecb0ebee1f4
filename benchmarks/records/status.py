"""The one status vocabulary of a sample record, with what each status means.

Every status a ``result.json`` may carry is a :class:`Status` member; its three meanings decide
everything that reads a record:

* ``final`` - finished: a resume keeps it (``error``, ``interrupted``, ``pending`` and ``missing`` are redone);
* ``scored`` - enters the scores; a scored status other than ``ok`` counts as a failure (every task
  failed, the CAB issue incorrect), as *errored* (``error``, ``judge_error``) or as *missing*
  (``interrupted``, ``pending``, ``missing``: selected, never finished; ``pending``: an exchange
  backbone's request waits for its answer, docs/exchange.md);
* ``excluded`` - the sample is out of the comparison for every method and backbone of the benchmark
  (an issue-level property: CAB ``init_failed``, ``docker_unavailable``).

A benchmark declares which of them its ``grade`` may return (``Benchmark.statuses``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any


class Status(str, enum.Enum):
    """A sample's status; ``Status("ok") == "ok"`` (records store the value)."""

    OK = "ok"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    PENDING = "pending"
    MISSING = "missing"
    JUDGE_ERROR = "judge_error"
    INIT_FAILED = "init_failed"
    DOCKER_UNAVAILABLE = "docker_unavailable"
    EXCLUDED = "excluded"

    @property
    def final(self) -> bool:
        """Not redone on resume."""
        return self not in _REDONE

    @property
    def scored(self) -> bool:
        """Enters the scores (a non-ok scored sample counts as a failure)."""
        return self not in _EXCLUDING

    @property
    def excluded(self) -> bool:
        """Out of the comparison for every method of the benchmark."""
        return self in _EXCLUDING

    @property
    def errored(self) -> bool:
        """Scored as a failure and counted as errored."""
        return self in _ERRORED

    @property
    def unfinished(self) -> bool:
        """Selected but never finished: scored as a failure and counted as missing."""
        return self in _UNFINISHED

    @classmethod
    def parse(cls, value: Any, where: str = "status") -> "Status":
        """The member named ``value``; an unknown one raises ``ValueError`` naming ``where`` and the known ones."""
        return parse_member(cls, value, where, "status")


def parse_member(enum_cls: Any, value: Any, where: str, noun: str) -> Any:
    """``enum_cls(value)``; an unknown value raises ``ValueError`` naming ``where`` and the known values."""
    try:
        return enum_cls(str(value))
    except ValueError:
        known = ", ".join(m.value for m in enum_cls)
        raise ValueError(f"{where}: unknown {noun} {value!r} (known: {known})") from None


_REDONE = frozenset({Status.ERROR, Status.INTERRUPTED, Status.PENDING, Status.MISSING})
_EXCLUDING = frozenset({Status.INIT_FAILED, Status.DOCKER_UNAVAILABLE, Status.EXCLUDED})
_ERRORED = frozenset({Status.ERROR, Status.JUDGE_ERROR})
_UNFINISHED = frozenset({Status.INTERRUPTED, Status.PENDING, Status.MISSING})

FINAL = frozenset(s.value for s in Status if s.final)


# The class of a sample record, from its status and flags.
OK, ERRORED, MISSING, EXCLUDED = "ok", "errored", "missing", "excluded"


def sample_class(result: Mapping[str, Any]) -> str:
    """``ok`` | ``errored`` | ``missing`` | ``excluded`` of one result: an ``excluded_reason`` or an
    excluding status excludes; ``errored: true`` on a non-ok scored sample counts it errored."""
    status = Status.parse(result.get("status") or Status.MISSING)
    if result.get("excluded_reason") or status.excluded:
        return EXCLUDED
    if status is Status.OK:
        return OK
    if status.errored or result.get("errored"):
        return ERRORED
    return MISSING


def excluded_reason(result: Mapping[str, Any]) -> str | None:
    """Why the sample is out for every method (its ``excluded_reason``, else an excluding status), or None."""
    if result.get("excluded_reason"):
        return str(result["excluded_reason"])
    status = Status.parse(result.get("status") or Status.MISSING)
    return status.value if status.excluded else None
