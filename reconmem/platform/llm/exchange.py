"""The exchange: a backbone's requests handed out as files and their answers taken back (docs/exchange.md).

A backbone with an ``exchange`` node (``backbone=exchange``, or ``+backbone.exchange.answered_by=...``
on any backbone) gets an :class:`ExchangeTransport`: a request the client's cache cannot answer is
written to the run's exchange folder and the call raises :class:`ExchangePending` (the run loop
records the sample ``pending`` and goes on); once answers are imported, re-running the same command
delivers them through the client, which caches and records them like any reply. In live mode
(``exchange.live: true``) the transport waits for ``answers/<id>.md`` instead.

Folder of a run, ``<run_dir>/exchange/`` (:func:`exchange_dir`)::

    requests.jsonl        one line per request, the OpenAI Batch input format:
                          {"custom_id": "req_<24 hex>", "method": "POST", "url": "/v1/chat/completions",
                           "body": {"model", "messages", "max_tokens", "temperature",
                                    "tools" / "response_format" / "stop" when set, backbone extras}}
                          ("model" is the backbone's litellm model string, e.g. "openai/gpt-5-mini")
    requests/<id>.md      the same request rendered for a person (messages, tools, where to answer)
    index.jsonl           one line per request: {"custom_id", "key" (the LLM cache key), "sample",
                          "position", "purpose", "backbone", "model", "written"}
    positions/<sample>.json   {"<turn>.<n>": custom_id}: the request each call position of a sample made
    answers/<id>.md       an answer written by a person or an agent (see below)
    imported/<id>.json    a validated answer: {"custom_id", "source": "<file>:<line>", "completion": {...}}

``custom_id`` is ``req_`` + the first 24 hex digits of the request's LLM cache key: stable, file-name
safe, the same for the same prompt and parameters (the "prompt hash").

Answers come as the OpenAI Batch *output* JSONL (``{"id", "custom_id", "response": {"status_code",
"body": <chat.completion>}, "error"}`` per line; usage, when the body has it, is recorded as the
provider's) or as one ``<id>.md`` per request: the reply text (surrounding whitespace dropped); a
reply that calls tools ends with a fenced block ``tool_calls`` holding a JSON list of
``{"name", "arguments"}``.

Functions for the run-level commands and the provider batch module (:mod:`.batch`):

* :func:`pending_requests` ``(run_dir) -> list[dict]`` - the requests still without an answer, each
  ``{"custom_id", "line" (the Batch input line), "sample", "position", "purpose", "backbone",
  "model", "markdown" (path of requests/<id>.md)}``;
* :func:`import_batch_output` ``(run_dir, path) -> ImportReport`` - a Batch output JSONL file;
* :func:`import_answers` ``(run_dir, path=None) -> ImportReport`` - a Batch output JSONL file, a
  directory of ``<id>.md`` files or one such file (default: the folder's ``answers/``).

Bad input - an answer for an unknown id, a duplicate, an empty or truncated answer, a Batch output
line with an error, a second different answer to an answered request - is one line in
``ImportReport.errors`` naming the file and line; the other answers are imported; nothing already
imported is replaced (an identical re-import is ``unchanged``).

Replay is exact: an answered request is served from ``imported/`` (and, after its first delivery,
from the LLM cache). A call at a position of a sample that an *answered* request already holds,
with another prompt, is an :class:`ExchangeConflict` naming both hashes.

Task answers (purpose kind ``task_answer``: read-only, independent of each other) are *deferred*
instead of stopping the sample: the transport writes the request, returns an empty placeholder that
is neither cached nor recorded, and the run loop records the sample pending after ``solve``
(:func:`take_deferred`), so all of a sample's task requests are written in one cycle.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reconmem.platform.jsonfiles import json_lines
from reconmem.platform.llm.errors import ExchangeConflict, ExchangePending, LLMError
from reconmem.platform.llm.ledger import atomic_write_text, current_tags
from reconmem.platform.llm.pricing import Price
from reconmem.platform.llm.response import Completion, Usage

EXCHANGE_DIR = "exchange"
REQUESTS = "requests.jsonl"
REQUESTS_MD = "requests"
INDEX = "index.jsonl"
POSITIONS = "positions"
ANSWERS = "answers"
IMPORTED = "imported"
BATCH_URL = "/v1/chat/completions"
#: request fields that are not sent to a provider's Batch API
_CLIENT_ONLY = frozenset({"messages", "model", "max_tokens", "temperature", "tools", "json_mode", "stop", "api_base"})
_ID = re.compile(r"^req_[0-9a-f]{24}$")
_FENCE = re.compile(r"^\s*```")
_TOOL_BLOCK = re.compile(r"\n?```tool_calls[ \t]*\n(.*?)\n```\s*$", re.S)


def exchange_dir(run_dir: str | Path) -> Path:
    """The exchange folder of a run directory."""
    return Path(run_dir) / EXCHANGE_DIR


def custom_id(key: str) -> str:
    """The request id of an LLM cache key: ``req_`` + its first 24 hex digits."""
    return f"req_{key[:24]}"


# ----------------------------------------------------------------------------- options
@dataclasses.dataclass(frozen=True)
class ExchangeOptions:
    """A backbone's ``exchange`` node: who answers, live mode and its wait."""

    answered_by: str = "expert"
    live: bool = False
    timeout_seconds: float = 3600.0
    poll_seconds: float = 1.0
    defer_tasks: bool = True

    @classmethod
    def from_config(cls, node: Mapping[str, Any] | None, where: str = "backbone.exchange") -> "ExchangeOptions":
        """From the ``exchange`` mapping; an unknown key or a bad value is a ValueError naming it."""
        data = dict(node or {})
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(fields))})")
        try:
            options = cls(answered_by=str(data.get("answered_by") or cls.answered_by), live=bool(data.get("live", False)),
                          timeout_seconds=float(data.get("timeout_seconds", cls.timeout_seconds)),
                          poll_seconds=float(data.get("poll_seconds", cls.poll_seconds)),
                          defer_tasks=bool(data.get("defer_tasks", True)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        if options.timeout_seconds <= 0 or options.poll_seconds <= 0:
            raise ValueError(f"{where}: timeout_seconds and poll_seconds must be > 0")
        return options


# ----------------------------------------------------------------------------- import report
@dataclasses.dataclass
class ImportReport:
    """What an import did: ids imported, ids already imported with the same answer, one line per problem."""

    imported: list[str] = dataclasses.field(default_factory=list)
    unchanged: list[str] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def merge(self, other: "ImportReport") -> "ImportReport":
        self.imported += other.imported
        self.unchanged += other.unchanged
        self.errors += other.errors
        return self


class AnswerError(ValueError):
    """One bad answer; the message is the problem, the caller adds ``<file>:<line>``."""


# ----------------------------------------------------------------------------- the folder
class ExchangeFolder:
    """One exchange folder: requests written, answers validated and stored, call positions indexed."""

    _locks: dict[str, threading.Lock] = {}
    _locks_guard = threading.Lock()

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        with self._locks_guard:
            self._lock = self._locks.setdefault(str(self.path.resolve()), threading.Lock())
        self._written: dict[str, tuple[Any, Any]] | None = None  # custom_id -> (sample, position) of its index row

    # ---- paths
    @property
    def requests_file(self) -> Path:
        return self.path / REQUESTS

    def request_markdown(self, cid: str) -> Path:
        return self.path / REQUESTS_MD / f"{cid}.md"

    def answer_file(self, cid: str) -> Path:
        return self.path / ANSWERS / f"{cid}.md"

    def imported_file(self, cid: str) -> Path:
        return self.path / IMPORTED / f"{cid}.json"

    def positions_file(self, sample: str) -> Path:
        return self.path / POSITIONS / f"{_safe(sample)}.json"

    # ---- reading
    def index(self) -> dict[str, dict[str, Any]]:
        """custom_id -> its index row (the last row of an id wins)."""
        rows: dict[str, dict[str, Any]] = {}
        path = self.path / INDEX
        if not path.is_file():
            return rows
        for line in json_lines(path):  # a line cut by a crash does not parse: its request is written again
            row = line.value
            if isinstance(row, dict) and row.get("custom_id"):
                rows[str(row["custom_id"])] = row
        return rows

    def batch_lines(self) -> dict[str, dict[str, Any]]:
        """custom_id -> its Batch input line (requests.jsonl)."""
        out: dict[str, dict[str, Any]] = {}
        if not self.requests_file.is_file():
            return out
        for line in json_lines(self.requests_file):
            row = line.value
            if isinstance(row, dict) and row.get("custom_id"):
                out[str(row["custom_id"])] = row
        return out

    def positions(self, sample: str) -> dict[str, str]:
        path = self.positions_file(sample)
        if not path.is_file():
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): str(v) for k, v in (data.get("calls") or {}).items()}

    def answered(self, cid: str) -> bool:
        return self.imported_file(cid).is_file()

    def stored(self, cid: str) -> dict[str, Any] | None:
        """The validated answer of ``cid`` (``imported/<id>.json``), or None."""
        path = self.imported_file(cid)
        if not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    def pending(self) -> list[dict[str, Any]]:
        """The requests without an answer that a sample still asks (a superseded pending request is not listed)."""
        index = self.index()
        lines = self.batch_lines()
        current: dict[str, set[str]] = {}
        out = []
        for cid, row in index.items():
            if self.answered(cid) or cid not in lines:
                continue
            sample = row.get("sample")
            if sample is not None:
                if sample not in current:
                    current[sample] = set(self.positions(sample).values())
                if cid not in current[sample]:
                    continue
            out.append({"custom_id": cid, "line": lines[cid], "sample": sample, "position": row.get("position"),
                        "purpose": row.get("purpose"), "backbone": row.get("backbone"), "model": row.get("model"),
                        "markdown": str(self.request_markdown(cid))})
        return out

    # ---- writing
    def write_request(self, cid: str, key: str, request: Mapping[str, Any], *, purpose: str, backbone: str,
                      sample: str | None, position: str | None) -> None:
        """Add a request (once per id): its Batch input line, its markdown and its index row."""
        with self._lock:
            if self._written is None:  # read once per folder object; later writes are remembered
                lines = self.batch_lines()
                self._written = {c: (row.get("sample"), row.get("position")) for c, row in self.index().items()
                                 if c in lines}
            where = (sample, position)
            if self._written.get(cid) == where:
                return  # asked again while it waits: already out
            if cid not in self._written:
                _append_line(self.requests_file, batch_input_line(cid, request))
                atomic_write_text(self.request_markdown(cid), render_markdown(cid, request, purpose=purpose, sample=sample,
                                                                         position=position,
                                                                         answer=self.answer_file(cid)))
            _append_line(self.path / INDEX, {"custom_id": cid, "key": key, "sample": sample, "position": position,
                                             "purpose": purpose, "backbone": backbone, "model": request.get("model"),
                                             "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
            self._written[cid] = where

    def place(self, sample: str, position: str, cid: str) -> None:
        """Record that ``position`` of ``sample`` asked request ``cid``; a different *answered* request
        at that position is an :class:`ExchangeConflict`."""
        with self._lock:
            calls = self.positions(sample)
            old = calls.get(position)
            if old == cid:
                return
            if old is not None and self.answered(old):
                raise ExchangeConflict(
                    f"exchange {self.path}: sample {sample!r}, call position {position}: the prompt changed - new "
                    f"request {cid} (prompt hash {cid[4:]}) where request {old} (prompt hash {old[4:]}) is already "
                    f"answered; a replay must ask the same prompts (a changed method, config or data needs a new run_id)")
            calls[position] = cid
            atomic_write_text(self.positions_file(sample), json.dumps({"sample": sample, "calls": calls}, indent=1) + "\n")

    def store(self, cid: str, completion: Mapping[str, Any], source: str) -> bool:
        """Keep a validated answer; False when the same answer is already stored. A different one: AnswerError."""
        entry = {"custom_id": cid, "source": source, "completion": dict(completion)}
        with self._lock:
            old = self.stored(cid)
            if old is not None:
                if old.get("completion") == entry["completion"]:
                    return False
                raise AnswerError(f"request {cid} already has a different answer (from {old.get('source')}); "
                                  f"an answer is never replaced")
            atomic_write_text(self.imported_file(cid), json.dumps(entry, indent=1, ensure_ascii=False) + "\n")
        return True


def pending_requests(run_dir: str | Path) -> list[dict[str, Any]]:
    """The requests of a run still waiting for an answer (see the module docstring for the fields)."""
    return ExchangeFolder(exchange_dir(run_dir)).pending()


def import_batch_output(run_dir: str | Path, path: str | Path, *, price: Price | None = None) -> ImportReport:
    """Import an OpenAI Batch output JSONL file into the run's exchange folder. ``price``: the rate the
    provider billed these answers at (its batch rate); each answer then carries its cost, which the
    client records in the ledger instead of the backbone's standard rate."""
    return _import_jsonl(ExchangeFolder(exchange_dir(run_dir)), Path(path), price)


def import_answers(run_dir: str | Path, path: str | Path | None = None) -> ImportReport:
    """Import answers: a Batch output JSONL file, a directory of ``<id>.md`` files or one such file
    (default: the run's ``exchange/answers/``)."""
    folder = ExchangeFolder(exchange_dir(run_dir))
    source = Path(path) if path is not None else folder.path / ANSWERS
    if path is None and not source.exists():
        return ImportReport()  # nothing answered in the folder yet
    if source.is_file() and source.suffix == ".jsonl":
        return _import_jsonl(folder, source)
    if source.is_file():
        return _import_markdown(folder, [source])
    if source.is_dir():
        files = sorted(source.glob("*.md"))
        report = _import_markdown(folder, files)
        for jsonl in sorted(source.glob("*.jsonl")):
            report.merge(_import_jsonl(folder, jsonl))
        return report
    return ImportReport(errors=[f"{source}: no such file or directory"])


def _import_jsonl(folder: ExchangeFolder, path: Path, price: Price | None = None) -> ImportReport:
    report = ImportReport()
    if not path.is_file():
        report.errors.append(f"{path}: no such file")
        return report
    lines = folder.batch_lines()
    seen: dict[str, int] = {}
    for line in json_lines(path):
        n, where, row = line.lineno, line.where, line.value
        if line.error is not None:
            report.errors.append(f"{where}: not a JSON object (a truncated line?): {line.error.msg}")
            continue
        cid = row.get("custom_id") if isinstance(row, dict) else None
        if not isinstance(cid, str) or not cid:
            report.errors.append(f"{where}: no custom_id")
            continue
        if cid in seen:
            report.errors.append(f"{where}: duplicate answer to {cid} (first at line {seen[cid]})")
            continue
        seen[cid] = n
        if cid not in lines:
            report.errors.append(f"{where}: unknown request id {cid} (not in {folder.requests_file})")
            continue
        try:
            completion = completion_from_batch_row(row, lines[cid])
            if price is not None:
                usage = completion.get("usage") or {}
                completion["cost_usd"] = round(price.cost(int(usage.get("input_tokens") or 0),
                                                          int(usage.get("output_tokens") or 0)), 10)
            _record(folder, report, cid, completion, where)
        except AnswerError as exc:
            report.errors.append(f"{where}: {exc}")
    return report


def _import_markdown(folder: ExchangeFolder, files: Sequence[Path]) -> ImportReport:
    report = ImportReport()
    lines = folder.batch_lines()
    seen: dict[str, Path] = {}
    for path in files:
        cid = path.stem
        where = f"{path}:1"
        if cid in seen:
            report.errors.append(f"{where}: duplicate answer to {cid} (also {seen[cid]})")
            continue
        seen[cid] = path
        if not _ID.match(cid) or cid not in lines:
            report.errors.append(f"{where}: unknown request id {cid} (not in {folder.requests_file})")
            continue
        try:
            completion = completion_from_markdown(path.read_text(encoding="utf-8"), lines[cid])
            _record(folder, report, cid, completion, where)
        except AnswerError as exc:
            report.errors.append(f"{where}: {exc}")
        except UnicodeDecodeError as exc:
            report.errors.append(f"{where}: not UTF-8 text ({exc.reason})")
    return report


def _record(folder: ExchangeFolder, report: ImportReport, cid: str, completion: Mapping[str, Any], where: str) -> None:
    if folder.store(cid, completion, where):
        report.imported.append(cid)
    else:
        report.unchanged.append(cid)


# ----------------------------------------------------------------------------- formats
def batch_input_line(cid: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAI Batch input line of a client request."""
    body: dict[str, Any] = {"model": request["model"], "messages": request["messages"],
                            "max_tokens": request["max_tokens"], "temperature": request["temperature"]}
    if request.get("tools"):
        body["tools"] = request["tools"]
    if request.get("json_mode"):
        body["response_format"] = {"type": "json_object"}
    if request.get("stop"):
        body["stop"] = request["stop"]
    for key, value in request.items():
        if key not in _CLIENT_ONLY and value is not None:
            body[key] = value
    return json.loads(json.dumps({"custom_id": cid, "method": "POST", "url": BATCH_URL, "body": body},
                                 ensure_ascii=False, default=str))


def completion_from_batch_row(row: Mapping[str, Any], line: Mapping[str, Any]) -> dict[str, Any]:
    """A Batch output line's answer as a stored completion; AnswerError when it is an error or unusable."""
    from reconmem.platform.llm.providers import completion_from_litellm

    if row.get("error"):
        error = row["error"]
        message = error.get("message") if isinstance(error, Mapping) else error
        raise AnswerError(f"request {row.get('custom_id')} failed at the provider: {message} (it stays pending)")
    response = row.get("response")
    if not isinstance(response, Mapping):
        raise AnswerError("no response object")
    status = response.get("status_code")
    body = response.get("body")
    if status is not None and status != 200:
        detail = body.get("error", {}).get("message") if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping) else ""
        raise AnswerError(f"request {row.get('custom_id')} answered HTTP {status} {detail}".rstrip() + " (it stays pending)")
    if not isinstance(body, Mapping):
        raise AnswerError("response.body is not a chat.completion object")
    try:
        completion = completion_from_litellm(body)
    except LLMError as exc:
        raise AnswerError(f"unusable chat.completion: {exc}") from None
    if not completion.text.strip() and not completion.tool_calls:
        truncated = completion.finish_reason == "length"
        raise AnswerError("truncated answer (finish_reason length, no content)" if truncated else "empty answer")
    completion.model = completion.model or str(line["body"].get("model") or "")
    _check_tools(completion.tool_calls, line)
    return completion_to_store(completion)


def completion_from_markdown(text: str, line: Mapping[str, Any]) -> dict[str, Any]:
    """An ``<id>.md`` answer as a stored completion; AnswerError when empty or truncated."""
    fences = sum(1 for row in text.splitlines() if _FENCE.match(row))
    if fences % 2:
        raise AnswerError("truncated answer: a ``` block is not closed")
    tool_calls: list[dict[str, Any]] = []
    match = _TOOL_BLOCK.search(text)
    if match:
        try:
            calls = json.loads(match.group(1))
        except json.JSONDecodeError as exc:
            raise AnswerError(f"the tool_calls block is not JSON: {exc.msg}") from None
        if not isinstance(calls, list) or not all(isinstance(c, Mapping) and isinstance(c.get("name"), str)
                                                  for c in calls):
            raise AnswerError('the tool_calls block must be a JSON list of {"name", "arguments"}')
        for i, call in enumerate(calls):
            arguments = call.get("arguments") or {}
            if not isinstance(arguments, Mapping):
                raise AnswerError(f"tool_calls[{i}].arguments must be a JSON object")
            tool_calls.append({"id": str(call.get("id") or f"call_{i}"), "name": call["name"], "arguments": dict(arguments)})
        text = text[:match.start()]
    reply = text.strip()
    if not reply and not tool_calls:
        raise AnswerError("empty answer")
    _check_tools(tool_calls, line)
    completion = Completion(text=reply, tool_calls=tool_calls, model=str(line["body"].get("model") or ""),
                            finish_reason="tool_calls" if tool_calls else "stop")
    return completion_to_store(completion)


def _check_tools(tool_calls: Sequence[Mapping[str, Any]], line: Mapping[str, Any]) -> None:
    if not tool_calls:
        return
    offered = {str((t.get("function") or {}).get("name") or t.get("name")) for t in line["body"].get("tools") or []
               if isinstance(t, Mapping)}
    for call in tool_calls:
        if call.get("name") not in offered:
            raise AnswerError(f"tool call {call.get('name')!r} is not one of the request's tools "
                              f"({', '.join(sorted(offered)) or 'none offered'})")


def completion_to_store(completion: Completion) -> dict[str, Any]:
    """A completion as stored in ``imported/<id>.json``."""
    return json.loads(json.dumps(dataclasses.asdict(completion), ensure_ascii=False, default=str))


def completion_from_store(data: Mapping[str, Any]) -> Completion:
    """The :class:`Completion` of a stored answer."""
    usage = data.get("usage")
    return Completion(text=str(data.get("text") or ""), tool_calls=[dict(c) for c in data.get("tool_calls") or []],
                      usage=None if not usage else Usage(int(usage.get("input_tokens") or 0),
                                                         int(usage.get("output_tokens") or 0),
                                                         usage.get("reasoning_tokens")),
                      model=str(data.get("model") or ""), finish_reason=data.get("finish_reason"),
                      raw=dict(data.get("raw") or {}),
                      cost_usd=None if data.get("cost_usd") is None else float(data["cost_usd"]))


def render_markdown(cid: str, request: Mapping[str, Any], *, purpose: str, sample: str | None,
                    position: str | None, answer: Path) -> str:
    """A request as a person reads it: what is asked, every message, the tools, where to answer."""
    head = [f"# Request {cid}", "",
            f"- purpose: {purpose}", f"- sample: {sample or '-'} (call position {position or '-'})",
            f"- model: {request.get('model')}, max_tokens: {request.get('max_tokens')}, "
            f"temperature: {request.get('temperature')}",
            f"- answer in: `{answer}` (your reply text, nothing else: at most {request.get('max_tokens')} tokens, "
            f"about {int(0.75 * int(request.get('max_tokens') or 0))} words; a model's reply is cut there)"]
    if request.get("json_mode"):
        head.append("- the reply must be one JSON object")
    if request.get("stop"):
        head.append(f"- stop sequences: {json.dumps(request['stop'])}")
    if request.get("tools"):
        head.append("- tools may be called: end the answer with a ```tool_calls block holding a JSON list of "
                    '{"name": ..., "arguments": {...}}')
    parts = ["\n".join(head)]
    for i, message in enumerate(request.get("messages") or []):
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
        title = f"## {i + 1}. {message.get('role')}"
        if message.get("name"):
            title += f" ({message['name']})"
        block = [title, "", str(content or "")]
        if message.get("tool_calls"):
            block += ["", "tool calls:", "```json", json.dumps(message["tool_calls"], indent=1, ensure_ascii=False,
                                                               default=str), "```"]
        parts.append("\n".join(block))
    if request.get("tools"):
        parts.append("## tools\n\n```json\n" + json.dumps(request["tools"], indent=1, ensure_ascii=False, default=str)
                     + "\n```")
    return "\n\n".join(parts) + "\n"


# ----------------------------------------------------------------------------- positions and deferrals
_COUNTERS: dict[tuple[str, str, str], int] = {}
_DEFERRED: dict[str, list[str]] = {}
_STATE_LOCK = threading.Lock()


def next_position(folder: Path) -> tuple[str, str] | None:
    """``(sample, "<turn>.<n>")`` of the call about to be made in this context (n counts the calls of
    this sample attempt and turn, cached ones included); None outside a sample scope."""
    tags = current_tags()
    sample, attempt = tags.get("sample"), tags.get("attempt")
    if sample is None:
        return None
    turn = str(tags.get("turn", "-"))
    key = (str(folder), str(attempt), turn)
    with _STATE_LOCK:
        n = _COUNTERS.get(key, 0)
        _COUNTERS[key] = n + 1
    return str(sample), f"{turn}.{n}"


def defer(cid: str) -> bool:
    """Remember a deferred request of the current sample attempt; False outside a sample attempt."""
    attempt = current_tags().get("attempt")
    if attempt is None:
        return False
    with _STATE_LOCK:
        _DEFERRED.setdefault(str(attempt), []).append(cid)
    return True


def take_deferred(attempt: str) -> list[str]:
    """The requests deferred during a sample attempt (forgotten once taken), and the attempt's counters dropped."""
    with _STATE_LOCK:
        for key in [k for k in _COUNTERS if k[1] == str(attempt)]:
            del _COUNTERS[key]
        return _DEFERRED.pop(str(attempt), [])


# ----------------------------------------------------------------------------- transport
class ExchangeTransport:
    """The transport of an exchange backbone: answers from the folder, new requests written out.

    ``inner`` is the backbone's own transport; it still counts tokens, names the cache identity and
    says whether counts are exact (so a request, its cache key and its records are those of a direct
    run); it is never sent anything.
    """

    def __init__(self, inner: Any, folder: str | Path, *, backbone: str, options: ExchangeOptions) -> None:
        self.inner = inner
        self.folder = ExchangeFolder(folder)
        self.backbone = backbone
        self.options = options
        self._where = threading.local()

    # ---- the Transport interface
    def note_call(self, key: str) -> None:
        """Every call of the client (cached or not): advance the sample's call position."""
        self._where.position = next_position(self.folder.path)

    def send(self, request: dict[str, Any], *, purpose: str, key: str) -> Completion:
        from reconmem.platform.llm.purposes import PURPOSES, Kind

        cid = custom_id(key)
        where = getattr(self._where, "position", None)
        self._where.position = None
        stored = self.folder.stored(cid)
        if stored is not None:
            if where is not None:
                self.folder.place(where[0], where[1], cid)
            return completion_from_store(stored["completion"])
        if where is not None:
            self.folder.place(where[0], where[1], cid)
        self.folder.write_request(cid, key, request, purpose=purpose, backbone=self.backbone,
                                  sample=where[0] if where else None, position=where[1] if where else None)
        if self.options.live:
            return self._wait(cid)
        entry = PURPOSES.get(purpose)
        if self.options.defer_tasks and entry is not None and entry.kind is Kind.TASK_ANSWER and defer(cid):
            return Completion(text="", model=str(request.get("model") or ""), finish_reason="deferred", deferred=True)
        raise ExchangePending(f"request {cid} ({purpose}) waits for an answer: {self.folder.request_markdown(cid)}",
                              request_ids=[cid], folder=str(self.folder.path))

    def count_text(self, text: str) -> int:
        return self.inner.count_text(text)

    def count_messages(self, messages: list[Mapping[str, Any]]) -> int:
        return self.inner.count_messages(messages)

    def cache_identity(self) -> dict[str, Any]:
        return self.inner.cache_identity()

    @property
    def exact_counts(self) -> bool:
        return self.inner.exact_counts

    def context_window(self, configured: int) -> int:
        return self.inner.context_window(configured)

    def check_available(self) -> None:
        return None  # answers come from files

    # ---- live mode
    def _wait(self, cid: str) -> Completion:
        """Wait for ``answers/<id>.md`` (live mode), validate and store it; ExchangePending on timeout."""
        answer = self.folder.answer_file(cid)
        print(f"exchange: waiting up to {self.options.timeout_seconds:g} s for {answer} "
              f"(the request: {self.folder.request_markdown(cid)})", file=sys.stderr, flush=True)
        deadline = time.monotonic() + self.options.timeout_seconds
        line = self.folder.batch_lines()[cid]
        complained = ""
        while True:
            if answer.is_file():
                text = answer.read_text(encoding="utf-8")
                try:
                    completion = completion_from_markdown(text, line)
                except AnswerError as exc:
                    problem = f"{answer}:1: {exc}"
                    if time.monotonic() >= deadline:
                        raise ExchangePending(f"{problem}; the sample stays pending", request_ids=[cid],
                                              folder=str(self.folder.path)) from None
                    if problem != complained:  # perhaps still being written: say so once, keep waiting
                        print(f"exchange: {problem}; waiting for a corrected file", file=sys.stderr, flush=True)
                        complained = problem
                    time.sleep(self.options.poll_seconds)
                    continue
                try:
                    self.folder.store(cid, completion, f"{answer}:1")
                except AnswerError:
                    pass  # imported meanwhile: the stored answer is the one replayed
                return completion_from_store(self.folder.stored(cid)["completion"])
            stored = self.folder.stored(cid)
            if stored is not None:  # imported from elsewhere while waiting
                return completion_from_store(stored["completion"])
            if time.monotonic() >= deadline:
                raise ExchangePending(f"no answer at {answer} after {self.options.timeout_seconds:g} s (live mode); "
                                      f"the sample stays pending: answer and re-run the same command",
                                      request_ids=[cid], folder=str(self.folder.path))
            time.sleep(self.options.poll_seconds)


# ----------------------------------------------------------------------------- files
def _safe(name: str) -> str:
    import hashlib

    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:120] or "sample"
    return cleaned if cleaned == name else f"{cleaned}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"


def _append_line(path: Path, row: Mapping[str, Any]) -> None:
    """Append one JSON line in a single write (O_APPEND: shards of a run may append concurrently)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(row, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


__all__ = [
    "ANSWERS", "EXCHANGE_DIR", "IMPORTED", "INDEX", "REQUESTS", "AnswerError", "ExchangeFolder", "ExchangeOptions",
    "ExchangeTransport", "ImportReport", "batch_input_line", "completion_from_batch_row", "completion_from_markdown",
    "custom_id", "exchange_dir", "import_answers", "import_batch_output", "pending_requests", "take_deferred",
]
