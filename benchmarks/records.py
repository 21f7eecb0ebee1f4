"""The one record format of a run directory: typed rows, atomic writers and tolerant readers.

Every runner writes through this module and every reader (``benchmarks.analysis``, the metrics,
the notebook) reads through it; the field names are documented in docs/RECORDS.md and stay stable.

Run directory (one run = one benchmark x backbone x method x run_id)::

    <results_dir>/<benchmark>/<backbone>/<method>/<run_id>/
        config.yaml            resolved Hydra config
        manifest.json          Manifest (merged view; a sharded run also has shards/manifest-<i>-of-<n>.json)
        summary.json           Summary (merged view; shards/summary-<i>-of-<n>.json per shard)
        samples/<safe id>/
            result.json        Result, written LAST: its presence marks the sample finished
            ledger.jsonl       LedgerEvent per LLM call of the sample (all fields of the client's ledger)
            conversation.jsonl ConversationRow per message / exchange (benchmark labels live here)
            contexts.jsonl     ContextRow per context a method built
            error.txt          traceback of an errored sample

Writers are atomic (same-directory temp file, fsync, ``os.replace``); ``append_jsonl`` is for
incremental logs inside an unfinished sample (a crash leaves at most a truncated last line, which
the readers skip).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

# ----------------------------------------------------------------------------- file names
CONFIG = "config.yaml"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
SAMPLES = "samples"
SHARDS = "shards"
RESULT = "result.json"
LEDGER = "ledger.jsonl"
CONVERSATION = "conversation.jsonl"
CONTEXTS = "contexts.jsonl"
ERROR = "error.txt"

# ----------------------------------------------------------------------------- statuses
OK = "ok"
ERROR_STATUS = "error"          # crashed; retried on resume; its tasks count as failed
INTERRUPTED = "interrupted"     # stopped by the run (cost limit); retried on resume; its tasks count as failed
MISSING = "missing"             # selected by the manifest, no result.json (never finished); its tasks count as failed
LOOP_STATUSES = (OK, ERROR_STATUS, INTERRUPTED)
UNFINISHED_STATUSES = frozenset({INTERRUPTED, MISSING})


class RecordError(ValueError):
    """A malformed record; the message names the file (and line or field)."""


# ----------------------------------------------------------------------------- typed rows
class TaskOutcome(TypedDict, total=False):
    """One judged task of a sample (LoCoEval: a function; CAB: the issue itself)."""

    req_id: str            # LoCoEval requirement id / CAB task id
    namespace: str | None  # LoCoEval: the judged function's DevEval namespace
    outcome: str | None    # pass|fail|error|timeout|oom (LoCoEval); the verdict (CAB); "not_run" on error
    passed: bool           # authoritative for Pass@1 / correctness


class Usage(TypedDict):
    """Token totals of a sample's ledger events."""

    calls: int
    cached_calls: int
    input_tokens: int
    output_tokens: int
    total_tokens: int


class Result(TypedDict, total=False):
    """``samples/<id>/result.json``."""

    sample_id: str
    status: str                 # ok | error | interrupted | a benchmark-declared status
    error: str | None
    excluded_reason: str | None  # issue-level property (CAB init_failed / docker_unavailable): excluded for ALL methods
    errored: bool                # counted as failed/incorrect in the denominator (error, judge_error)
    n_tasks: int
    tasks: list[TaskOutcome]     # on error: every task of the sample with passed=false
    json_failures: int           # malformed JSON replies of this sample (chat_json failures)
    cost_usd: float              # sum of this sample's ledger events' cost_usd (missing = 0)
    usage: Usage                 # token totals of this sample's ledger events
    attempt: str                 # the attempt id tagging this sample's ledger events
    shard: str | None            # "i/n" of the job that ran it (null when unsharded)
    wall_seconds: float
    prep_replies: str            # LoCoEval: "generated", or "skipped" (bracket runs: no preparation reply was generated)


class LedgerEvent(TypedDict, total=False):
    """One line of ``ledger.jsonl``: every field the client's UsageLedger recorded, unchanged."""

    purpose: str
    input_tokens: int
    output_tokens: int
    cached: bool
    model: str
    seconds: float
    cost_usd: float
    sample: str
    attempt: str
    turn: int
    phase: str
    role: str
    req_id: str


class ContextRow(TypedDict, total=False):
    """One line of ``contexts.jsonl`` (LoCoEval: ``{turn, phase, req_id?, context}``; CAB: context fields inline)."""

    turn: int
    phase: str
    req_id: str
    context: dict[str, Any]   # reconmem.platform.context.Context.to_dict()


class ConversationRow(TypedDict, total=False):
    """One line of ``conversation.jsonl`` (benchmark labels such as ``kind`` / ``req_id`` live here only)."""

    turn: int
    phase: str
    kind: str
    req_id: str
    user: str
    assistant: str
    assistant_skipped: bool   # bracket runs: this preparation reply was not generated ("assistant" is "")
    oracle_turns: list[int]   # oracle_context tasks: the turns handed over through the privileged channel
    role: str
    content: str


class SelectedSample(TypedDict, total=False):
    """One entry of the manifest's ``selected``: a selected sample as it counts when it never finishes
    (the benchmark's ``error_result`` fields: LoCoEval subset / project / tasks, CAB task id / repo)."""

    sample_id: str
    subset: str
    project: str
    repo_cluster: str
    n_turns: int
    n_tasks: int
    tasks: list[TaskOutcome]
    task_id: str
    repo: str


class Repeat(TypedDict):
    """The manifest's ``repeat`` of a ``run.repeat=K`` run (null for an unrepeated run)."""

    index: int                  # 1..K
    of: int                     # K
    run_id: str                 # the run id the K run directories share (<run_id>-r<index>)


class Models(TypedDict):
    backbone: str
    user: str | None
    judge: str | None


class Manifest(TypedDict, total=False):
    """``manifest.json``."""

    benchmark: str              # benchmark.name (locoeval, demo, cab ...)
    family: str                 # the benchmark class's family (locoeval | cab): how to read the samples
    benchmark_target: str       # dotted path of the benchmark class
    method: str
    backbone: str
    run_id: str
    models: Models              # model ids actually called (null when the benchmark does not use that role)
    model_labels: dict[str, str | None]
    scripted: bool              # any of models starts with "scripted/": never a benchmark number
    hide_task_tests: bool | None
    privileged_inputs: list[str]  # the privileged channels the method declared (oracle_context: ["task_oracle"]; else [])
    skip_prep_replies: bool       # bracket runs: preparation replies were not generated
    local_models: dict[str, dict[str, Any]]  # role -> llama.cpp settings (threads, n_ctx, prompt_cache ...); only roles on a local model
    embedder: dict[str, Any]    # {model, device_setting, device}: embedder.device as set and the device it resolved to
    shard: str | None           # "i/n" in a shard file; null (unsharded) or "n shards" in the merged view
    n_shards: int | None
    n_selected: int
    selected: list[SelectedSample]  # every selected sample (the whole selection, also in a shard's file)
    repeat: Repeat | None
    data_checksums: dict[str, str | None]
    git_rev: str | None
    git_dirty: bool
    packages: dict[str, str | None]
    command: str
    started: str
    python: str
    host: str


class Summary(TypedDict, total=False):
    """``summary.json``: informational; the analysis recomputes everything from samples/."""

    benchmark: str
    method: str
    backbone: str
    run_id: str
    run_dir: str
    n_selected: int
    n_finished: int
    n_ok: int
    n_errored: int
    n_interrupted: int
    n_unfinished: int
    n_missing: int              # selected samples without a finished record (no result.json, or interrupted)
    status_counts: dict[str, int]
    json_failures: int
    cost_usd: float
    stopped: str | None         # null, or "cost_limit"
    shard: str | None


# ----------------------------------------------------------------------------- writers
_SAFE_ID = re.compile(r"[^A-Za-z0-9._+-]+")


def safe_name(sample_id: str) -> str:
    """A filesystem-safe folder name for a sample id (stable, collision-resistant)."""
    cleaned = _SAFE_ID.sub("_", sample_id).strip("._")[:120] or "sample"
    if cleaned != sample_id:
        cleaned += "-" + hashlib.sha1(sample_id.encode()).hexdigest()[:8]
    return cleaned


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (same-directory temp file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    """Atomically write ``obj`` as indented JSON (non-JSON values via ``str``)."""
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Atomically write rows as JSON lines."""
    return atomic_write_text(path, "".join(json.dumps(dict(r), ensure_ascii=False, default=str) + "\n" for r in rows))


_append_lock = threading.Lock()


def append_jsonl(path: str | Path, row: Mapping[str, Any]) -> None:
    """Append one JSON line (flushed); for incremental logs inside an unfinished sample."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(dict(row), ensure_ascii=False, default=str) + "\n"
    with _append_lock, open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()


# ----------------------------------------------------------------------------- readers
def read_json(path: str | Path) -> Any:
    """Parse one JSON file; a malformed file raises RecordError naming it and the line."""
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RecordError(f"{p}:{exc.lineno}: invalid JSON ({exc.msg})") from None


def read_jsonl(path: str | Path, *, strict: bool = True) -> list[dict[str, Any]]:
    """JSON lines of ``path`` ([] when missing). A truncated LAST line (crash mid-append) is skipped;
    another bad line raises RecordError naming ``file:line`` (``strict=False`` skips it too)."""
    p = Path(path)
    if not p.is_file():
        return []
    lines = p.read_text(encoding="utf-8").splitlines()
    rows: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if i == len(lines) - 1 or not strict:
                continue
            raise RecordError(f"{p}:{i + 1}: invalid JSON line ({exc.msg})") from None
    return rows


def read_result(sample_dir: str | Path) -> Result | None:
    """The sample's result.json, or None when it is unfinished (no file, or an unreadable one)."""
    p = Path(sample_dir) / RESULT
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def read_ledger(sample_dir: str | Path) -> list[LedgerEvent]:
    return read_jsonl(Path(sample_dir) / LEDGER)  # type: ignore[return-value]


def read_contexts(sample_dir: str | Path) -> list[ContextRow]:
    return read_jsonl(Path(sample_dir) / CONTEXTS)  # type: ignore[return-value]


def read_conversation(sample_dir: str | Path) -> list[ConversationRow]:
    return read_jsonl(Path(sample_dir) / CONVERSATION)  # type: ignore[return-value]


def read_manifest(run_dir: str | Path) -> Manifest:
    """The run's merged manifest.json ({} when missing)."""
    p = Path(run_dir) / MANIFEST
    return read_json(p) if p.is_file() else {}  # type: ignore[return-value]


def read_summary(run_dir: str | Path) -> Summary:
    """The run's merged summary.json ({} when missing)."""
    p = Path(run_dir) / SUMMARY
    return read_json(p) if p.is_file() else {}  # type: ignore[return-value]


def shard_files(run_dir: str | Path, kind: str = "manifest") -> list[Path]:
    """Per-shard manifest or summary files of a sharded run (sorted)."""
    return sorted((Path(run_dir) / SHARDS).glob(f"{kind}-*-of-*.json"))


def shard_file(run_dir: str | Path, kind: str, shard: tuple[int, int]) -> Path:
    """``shards/<kind>-<i>-of-<n>.json`` of one shard."""
    return Path(run_dir) / SHARDS / f"{kind}-{shard[0]}-of-{shard[1]}.json"


def sample_results(run_dir: str | Path, sample_ids: Sequence[str] | None = None) -> list[Result]:
    """Finished samples' results (of ``sample_ids`` when given, in that order; else all, by folder)."""
    base = Path(run_dir) / SAMPLES
    if sample_ids is not None:
        found = (read_result(base / safe_name(str(i))) for i in sample_ids)
        return [r for r in found if r is not None]
    if not base.is_dir():
        return []
    return [r for r in (read_result(d) for d in sorted(base.iterdir()) if d.is_dir()) if r is not None]


def selected_entry(sample_id: str, fields: Mapping[str, Any]) -> SelectedSample:
    """The manifest entry of one selected sample from its benchmark's ``error_result`` fields."""
    keep = ("subset", "project", "repo_cluster", "n_turns", "n_tasks", "task_id", "repo")
    entry: dict[str, Any] = {"sample_id": str(sample_id), **{k: fields[k] for k in keep if fields.get(k) is not None}}
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


def missing_result(entry: Mapping[str, Any], *, status: str = MISSING, error: str | None = None) -> Result:
    """The result a selected sample without a finished record counts as: every task failed (``not_run``)."""
    tasks = [{"req_id": t.get("req_id"), "namespace": t.get("namespace"), "outcome": "not_run", "passed": False}
             for t in entry.get("tasks") or []]
    n_tasks = entry.get("n_tasks")
    if n_tasks is None and entry.get("tasks") is not None:
        n_tasks = len(tasks)
    return {**entry, "status": status, "error": error or "no result.json (the sample never finished)",  # type: ignore[typeddict-item]
            "n_tasks": None if n_tasks is None else int(n_tasks), "tasks": tasks}


def selection_results(run_dir: str | Path, sample_ids: Sequence[str]) -> list[Result]:
    """One result per selected id, in order: the recorded one, else :func:`missing_result` of the
    manifest's entry (``{"sample_id": id}`` alone when the manifest lists none)."""
    base = Path(run_dir) / SAMPLES
    selection = manifest_selection(read_manifest(run_dir)) or {}
    out: list[Result] = []
    for sid in sample_ids:
        r = read_result(base / safe_name(str(sid)))
        out.append(r if r is not None else missing_result(selection.get(str(sid)) or {"sample_id": str(sid)}))
    return out


# ----------------------------------------------------------------------------- derived fields
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


def is_scripted(models: Mapping[str, Any]) -> bool:
    """Whether any recorded model is a scripted test hook (``scripted/...``)."""
    return any(str(m or "").startswith("scripted/") for m in models.values())


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
