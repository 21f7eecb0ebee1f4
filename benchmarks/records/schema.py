"""The record schema, written once: typed models of every file a run writes, and their validation.

The models are ``TypedDict``s (records stay plain JSON objects; a benchmark's own fields are extras
that pass through unchanged); :func:`validate` checks a parsed record against its model with
pydantic and raises a one-line :class:`RecordError` naming the file and the field. Field meanings:
docs/RECORDS.md.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from benchmarks.records.files import RecordError
from benchmarks.records.status import Status, parse_member
from reconmem.memory.budgets import BUDGET_NAMES

#: version of the manifest (and so of the run directory) this harness writes; manifests without
#: ``schema_version`` are version 1 and are brought up to date by :mod:`benchmarks.records.migrate`.
SCHEMA_VERSION = 2

_OPEN = ConfigDict(extra="allow")


class Family(str, enum.Enum):
    """How a run's samples are read: ``locoeval`` (tasks judged by tests, Pass@1) or ``cab`` (one
    judged issue per sample). A benchmark class names its family; any other value is an error."""

    LOCOEVAL = "locoeval"
    CAB = "cab"

    @classmethod
    def parse(cls, value: Any, where: str = "family") -> "Family":
        return parse_member(cls, value, where, "family")


class TaskOutcome(TypedDict, total=False):
    """One judged task of a sample (LoCoEval: a function; CAB: the issue itself)."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    req_id: str
    namespace: str | None
    outcome: str | None          # pass|fail|error|timeout|oom (LoCoEval); the verdict (CAB); "not_run"
    passed: bool                 # authoritative for Pass@1 / correctness


class Usage(TypedDict):
    """Token totals of a sample's ledger events."""

    calls: int
    cached_calls: int
    input_tokens: int
    output_tokens: int
    total_tokens: int


class Result(TypedDict, total=False):
    """``samples/<id>/result.json``: the loop's fields; a benchmark's own fields are extras."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    sample_id: str
    status: Status
    error: str | None
    excluded_reason: str | None  # issue-level (CAB init_failed / docker_unavailable): out for ALL methods
    errored: bool | None         # counted as failed/incorrect (error, judge_error)
    n_tasks: int | None
    tasks: list[TaskOutcome]     # on error: every task of the sample with passed=false
    json_failures: int | None
    cost_usd: float | None
    usage: Usage | None
    attempt: str | None
    shard: str | None
    wall_seconds: float | None
    seconds: dict[str, float] | None  # the loop's timing of the sample's phases: {solve, grade}
    pending_requests: list[str] | None  # status pending: the exchange request ids it waits for


class LedgerEvent(TypedDict, total=False):
    """One line of ``ledger.jsonl``: every field the client's UsageLedger recorded."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    purpose: str
    input_tokens: int | None
    output_tokens: int | None
    cached: bool | None
    model: str | None
    seconds: float | None
    cost_usd: float | None
    sample: str | None
    attempt: str | None
    turn: int | None
    phase: str | None
    role: str | None
    req_id: str | None


class Row(TypedDict, total=False):
    """One line of ``conversation.jsonl`` (one message) or ``contexts.jsonl`` (one built context),
    the same schema for every benchmark; benchmark labels (``kind``, ``req_id`` ...) are extras."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    turn: int
    phase: str | None
    role: str
    content: str
    req_id: str | None
    context: dict[str, Any]      # contexts.jsonl: reconmem.platform.context.Context.to_dict()


class SelectedSample(TypedDict, total=False):
    """One entry of the manifest's ``selected``: a selected sample as it counts when it never
    finishes (the benchmark's ``error_result`` fields)."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    sample_id: str
    n_tasks: int | None
    tasks: list[TaskOutcome]


class Repeat(TypedDict):
    """The manifest's ``repeat`` of a ``run.repeat=K`` run (null for an unrepeated run)."""

    index: int
    of: int
    run_id: str


MethodRecord = TypedDict("MethodRecord", {name: int for name in BUDGET_NAMES}, total=False)  # type: ignore[misc]
MethodRecord.__doc__ = """The manifest's ``method_params``: the method's resolved parameters as the run used them
(``method.manager`` without ``_target_``, and what the method resolved itself: ReConMem's budgets,
:data:`reconmem.memory.budgets.BUDGET_NAMES`)."""
MethodRecord.__pydantic_config__ = _OPEN  # type: ignore[attr-defined]


class Manifest(TypedDict, total=False):
    """``manifest.json`` (the merged view of a sharded run; ``shards/manifest-I-of-N.json`` per shard)."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    schema_version: int
    benchmark: str
    family: Family
    benchmark_target: str | None
    method: str
    method_label: str | None
    method_params: MethodRecord
    backbone: str
    run_id: str
    models: dict[str, str | None]
    model_labels: dict[str, str | None]
    scripted: bool
    hide_task_tests: bool | None
    privileged_inputs: list[str]
    skip_prep_replies: bool
    shard: str | None
    n_shards: int | None
    n_selected: int | None
    selected: list[SelectedSample]
    repeat: Repeat | None
    data_checksums: dict[str, str | None]
    git_rev: str | None
    git_dirty: bool
    packages: dict[str, str | None]
    command: str
    started: str


class Summary(TypedDict, total=False):
    """``summary.json``: informational; the analysis recomputes everything from the samples."""

    __pydantic_config__ = _OPEN  # type: ignore[misc]
    benchmark: str
    method: str
    backbone: str
    run_id: str
    n_selected: int
    n_finished: int
    n_errored: int
    n_interrupted: int
    n_pending: int               # samples waiting for exchange answers (counted in n_missing)
    n_missing: int
    status_counts: dict[str, int]
    json_failures: int
    cost_usd: float
    stopped: str | None
    shard: str | None


MODELS: dict[str, Any] = {"result": Result, "manifest": Manifest, "summary": Summary, "ledger": LedgerEvent,
                          "row": Row}


@cache
def _adapter(kind: str) -> TypeAdapter:
    return TypeAdapter(MODELS[kind])


def validate(kind: str, data: Any, where: str) -> dict[str, Any]:
    """``data`` (unchanged) when it fits the ``kind`` model; else RecordError ``<where>: field 'a.b': why``."""
    if not isinstance(data, Mapping):
        raise RecordError(f"{where}: expected a JSON object, got {type(data).__name__}")
    try:
        _adapter(kind).validate_python(dict(data))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(record)"
        raise RecordError(f"{where}: field '{field}': {err['msg']} (got {err.get('input')!r:.60})") from None
    return dict(data)
