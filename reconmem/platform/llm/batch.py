"""Provider batch submission of a run's exchange requests: submit, poll, collect (litellm's batch API).

An exchange run (:mod:`reconmem.platform.llm.exchange`: a backbone with an ``exchange`` node, e.g.
``backbone=gpt5_mini +backbone.exchange.answered_by=...``) writes each request its cache cannot
answer to ``<run>/exchange/requests.jsonl`` in OpenAI's Batch input format, as that backbone's
client built it (its model string, max_tokens with the reasoning allowance, extras).
:func:`submit` sends the waiting requests of that backbone (:func:`~.exchange.pending_requests`)
not yet submitted to its provider as one batch (split at the provider's file limits), each body
mapped to the provider's parameters by litellm (GPT-5: ``max_completion_tokens``, no temperature);
:func:`collect` polls every batch, downloads the output and error files of finished ones into the
exchange folder and imports the answered lines (:func:`~.exchange.import_batch_output`); re-running
the run's command continues its pending samples from them.

Nothing is paid twice. ``exchange/batches.json`` records every batch (submission id, batch id,
provider, input file id, custom_ids, status, times, answers, failures, usage, cost at the batch
rate). A custom_id is never sent again while it is in a batch not yet collected (validating,
in_progress, finalizing, or completed and waiting to be downloaded) or once it was answered. After
a batch is collected, its unanswered custom_ids (expired, cancelled, failed, a per-request error)
may be submitted again; failed requests are not billed by the provider. A submission is recorded
before its batch is created and carries its id in the batch's metadata, so a crash or a lost
response between creating the batch and recording it is resolved from the provider's batch list
instead of creating a second batch.

Providers: litellm's OpenAI batch API (``openai/`` models, and OpenAI-compatible servers that
implement ``/v1/files`` and ``/v1/batches`` through ``api_base``).
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from reconmem.platform.llm.ledger import atomic_write_text
from reconmem.platform.llm.pricing import Pricing, default_pricing, provider_of
from reconmem.platform.llm.spec import BackboneSpec

STATE_FILE = "batches.json"
LOCK_FILE = "batches.lock"
ENDPOINT = "/v1/chat/completions"
SUPPORTED_PROVIDERS = ("openai",)
# provider statuses: still running, and finished (the batch's files can be collected)
RUNNING = ("validating", "in_progress", "finalizing", "cancelling")
FINISHED = ("completed", "expired", "failed", "cancelled")
SUBMITTING = "submitting"  # recorded before the batch is created; resolved from the provider's list
NOT_SUBMITTED = "not_submitted"  # the provider refused the upload or the batch: nothing was created
SUBMISSION_KEY = "reconmem_submission"  # the batch metadata key naming our submission id
# OpenAI's limits of one batch input file: 50,000 requests, 200 MB (kept below it)
MAX_REQUESTS = 50_000
MAX_BYTES = 190 * 2**20


class BatchError(ValueError):
    """A batch cannot be submitted or collected; the message is one line naming the file or option."""


@dataclass
class BatchRecord:
    """One submission to a provider's batch API, as recorded in ``exchange/batches.json``."""

    submission: str
    backbone: str
    model: str  # litellm model string (priced as ``pricing_model`` when the backbone sets one)
    pricing_model: str
    provider: str
    api_base: str | None
    api_key_env: str | None
    input_file: str  # the provider-ready JSONL in the exchange folder
    custom_ids: list[str]
    status: str = SUBMITTING
    batch_id: str | None = None
    input_file_id: str | None = None
    submitted_at: str = ""
    updated_at: str = ""
    collected_at: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    request_counts: dict[str, int] = field(default_factory=dict)
    answered: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # custom_id -> why it has no answer
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    price_source: str | None = None
    message: str | None = None

    @property
    def blocks(self) -> bool:
        """Whether its custom_ids may not be sent again yet (submitted and not collected)."""
        return self.collected_at is None and self.status != NOT_SUBMITTED


@dataclass
class BatchState:
    """``exchange/batches.json``: every batch of a run's exchange folder."""

    path: Path
    batches: list[BatchRecord] = field(default_factory=list)

    @classmethod
    def load(cls, exchange_dir: Path) -> "BatchState":
        path = exchange_dir / STATE_FILE
        if not path.is_file():
            return cls(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(path, [BatchRecord(**row) for row in data.get("batches") or []])
        except (json.JSONDecodeError, TypeError, AttributeError) as exc:
            raise BatchError(f"{path}: unreadable batch state ({exc}); it records what was paid: "
                             "repair it, do not delete it") from exc

    def save(self) -> None:
        atomic_write_text(self.path, json.dumps({"batches": [asdict(b) for b in self.batches]}, indent=1) + "\n")

    def answered(self) -> set[str]:
        return {cid for b in self.batches for cid in b.answered}

    def blocked(self) -> set[str]:
        """custom_ids that must not be sent: answered, or in a batch not yet collected."""
        return self.answered() | {cid for b in self.batches if b.blocks for cid in b.custom_ids}


@dataclass
class SubmitReport:
    """What :func:`submit` did."""

    pending: int  # the backbone's waiting requests (exchange.pending_requests of its model)
    skipped_in_flight: int  # pending but already in a batch not yet collected
    submitted: int
    resubmitted: int  # of ``submitted``: sent before in a batch that left them unanswered
    batches: list[BatchRecord] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)  # earlier submissions found on the provider
    other_models: list[str] = field(default_factory=list)  # waiting requests of other backbones, not sent

    @property
    def batch(self) -> BatchRecord | None:
        """The first batch created (None: nothing submitted)."""
        return self.batches[0] if self.batches else None

    def lines(self) -> list[str]:
        out = list(self.resolved)
        if not self.batches:
            out.append(f"nothing to submit: {self.pending} request(s) without an answer, "
                       f"{self.skipped_in_flight} of them in a batch not yet collected")
        else:
            again = f" ({self.resubmitted} unanswered before)" if self.resubmitted else ""
            made = ", ".join(f"{b.batch_id} ({len(b.custom_ids)}, {b.status})" for b in self.batches)
            out.append(f"submitted {self.submitted} request(s){again} to {self.batches[0].backbone} "
                       f"({self.batches[0].model}): batch {made}; {self.skipped_in_flight} already in flight")
        if self.other_models:
            out.append(f"not sent: waiting requests of other models ({', '.join(self.other_models)}): submit them "
                       "with their backbone, or answer them with python -m scripts.exchange import")
        return out


@dataclass
class CollectReport:
    """What :func:`collect` found and imported."""

    lines: list[str] = field(default_factory=list)
    answered: int = 0
    unanswered: int = 0  # collected but without an answer: submittable again
    running: int = 0  # batches still running
    errors: list[str] = field(default_factory=list)  # import failures (the batch stays uncollected)
    cost_usd: float = 0.0


# ------------------------------------------------------------------ the provider
@dataclass(frozen=True)
class BatchProvider:
    """Where and how to reach a provider's batch API for one backbone."""

    provider: str
    api_base: str | None
    api_key_env: str | None

    @classmethod
    def for_spec(cls, spec: BackboneSpec, api_base: str | None = None) -> "BatchProvider":
        provider = provider_of(spec.model)
        if spec.is_local or spec.is_scripted or provider not in SUPPORTED_PROVIDERS:
            raise BatchError(f"backbone '{spec.name}' ({spec.model}): no batch API through litellm for provider "
                             f"'{provider}' (supported: {', '.join(SUPPORTED_PROVIDERS)}); answer its requests "
                             "with python -m scripts.exchange import instead")
        return cls(provider, api_base or spec.api_base, spec.api_key_env)

    @classmethod
    def for_record(cls, record: BatchRecord, api_base: str | None = None) -> "BatchProvider":
        return cls(record.provider, api_base or record.api_base, record.api_key_env)

    def kwargs(self) -> dict[str, Any]:
        """The connection arguments of every litellm batch and file call."""
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise BatchError(f"the provider's API key variable {self.api_key_env} is not set: "
                                 f"export {self.api_key_env}=...")
        else:
            key = "EMPTY" if self.api_base else None  # never forward an unrelated provider key to a custom server
        out: dict[str, Any] = {"custom_llm_provider": self.provider}
        if self.api_base:
            out["api_base"] = self.api_base
        if key is not None:
            out["api_key"] = key
        return out


def provider_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Batch input body as the exchange wrote it (the client's request: litellm model string,
    ``max_tokens``, ``temperature``, tools, ``response_format``, stop, the backbone's extras) mapped
    to the provider's parameters by litellm, as ``litellm.completion`` would send it."""
    from reconmem.platform.llm.providers import import_litellm

    litellm = import_litellm()
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BatchError("body.messages: expected a non-empty list")
    model, provider, _, _ = litellm.get_llm_provider(str(body.get("model") or ""))
    params = {k: v for k, v in body.items() if k not in ("model", "messages") and v is not None}
    extra_body = dict(params.pop("extra_body", None) or {})
    mapped = litellm.get_optional_params(model=model, custom_llm_provider=provider, drop_params=True, **params)
    mapped.pop("stream", None)
    extra_body.update(mapped.pop("extra_body", None) or {})
    return {"model": model, "messages": messages, **{k: v for k, v in mapped.items() if v is not None}, **extra_body}


# ------------------------------------------------------------------ the exchange folder
def exchange_folder(run_dir: str | Path) -> Path:
    """``<run_dir>/exchange`` (BatchError if the run wrote no requests)."""
    from reconmem.platform.llm.exchange import REQUESTS, exchange_dir

    path = exchange_dir(run_dir)
    if not (path / REQUESTS).is_file():
        raise BatchError(f"{path / REQUESTS}: no exchange requests (run with a backbone that has an exchange node, "
                         "e.g. +backbone.exchange.answered_by=..., first)")
    return path


@contextmanager
def _locked(folder: Path) -> Iterator[BatchState]:
    """The batch state under an exclusive lock (one submit / collect at a time per run)."""
    with (folder / LOCK_FILE).open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield BatchState.load(folder)
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _litellm() -> Any:
    from reconmem.platform.llm.providers import import_litellm

    return import_litellm()


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


# ------------------------------------------------------------------ submit
def submit(run_dir: str | Path, spec: BackboneSpec, *, api_base: str | None = None,
           max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES) -> SubmitReport:
    """Send the run's waiting requests of backbone ``spec`` (its model string) that are not in flight
    to ``spec``'s provider: one batch, or several of at most ``max_requests`` lines and ``max_bytes``
    (see the module doc)."""
    from reconmem.platform.llm.exchange import pending_requests

    folder = exchange_folder(run_dir)
    provider = BatchProvider.for_spec(spec, api_base)
    conn = provider.kwargs()
    with _locked(folder) as state:
        resolved = _resolve_submitting(state, api_base)
        waiting = pending_requests(run_dir)
        mine = [r for r in waiting if r["line"]["body"].get("model") == spec.model]
        others = sorted({str(r["line"]["body"].get("model")) for r in waiting} - {spec.model})
        blocked = state.blocked()
        todo = [r for r in mine if r["custom_id"] not in blocked]
        report = SubmitReport(pending=len(mine), skipped_in_flight=len(mine) - len(todo), submitted=len(todo),
                              resubmitted=0, resolved=resolved, other_models=others)
        if not todo:
            return report
        sent_before = {cid for b in state.batches if b.status != NOT_SUBMITTED for cid in b.custom_ids}
        report.resubmitted = sum(1 for r in todo if r["custom_id"] in sent_before)
        chunks: list[list[tuple[str, str]]] = [[]]
        size = 0
        for r in todo:
            try:
                body = provider_body(r["line"]["body"])
            except BatchError as exc:
                raise BatchError(f"{folder / 'requests.jsonl'}: custom_id {r['custom_id']}: {exc}") from exc
            line = json.dumps({"custom_id": r["custom_id"], "method": "POST", "url": ENDPOINT, "body": body},
                              ensure_ascii=False)
            if chunks[-1] and (len(chunks[-1]) >= max_requests or size + len(line.encode()) + 1 > max_bytes):
                chunks.append([])
                size = 0
            chunks[-1].append((r["custom_id"], line))
            size += len(line.encode()) + 1
        for chunk in chunks:
            report.batches.append(_send(folder, state, spec, provider, conn, chunk))
        return report


def _send(folder: Path, state: BatchState, spec: BackboneSpec, provider: BatchProvider, conn: dict[str, Any],
          lines: list[tuple[str, str]]) -> BatchRecord:
    """Upload ``lines`` ((custom_id, Batch input line)) and create their batch, recording each step first."""
    submission = f"sub-{uuid.uuid4().hex[:12]}"
    input_file = f"batch-{submission}-input.jsonl"
    atomic_write_text(folder / input_file, "".join(line + "\n" for _, line in lines))
    record = BatchRecord(submission=submission, backbone=spec.name, model=spec.model,
                         pricing_model=spec.pricing_model or spec.model, provider=provider.provider,
                         api_base=provider.api_base, api_key_env=provider.api_key_env, input_file=input_file,
                         custom_ids=[cid for cid, _ in lines], submitted_at=_now(), updated_at=_now())
    state.batches.append(record)
    state.save()  # before anything is created: a crash from here on is resolved, never re-sent
    litellm = _litellm()
    try:
        uploaded = litellm.create_file(file=(input_file, (folder / input_file).read_bytes()), purpose="batch", **conn)
    except Exception as exc:  # noqa: BLE001 - an upload creates no batch: nothing to pay
        record.status, record.message, record.updated_at = NOT_SUBMITTED, f"upload failed: {_short(exc)}", _now()
        state.save()
        raise BatchError(f"{spec.name}: uploading {folder / input_file} failed: {_short(exc)}") from exc
    record.input_file_id, record.updated_at = str(uploaded.id), _now()
    state.save()
    try:
        batch = litellm.create_batch(completion_window="24h", endpoint=ENDPOINT, input_file_id=record.input_file_id,
                                     metadata={SUBMISSION_KEY: submission}, max_retries=0, **conn)
    except Exception as exc:  # noqa: BLE001 - maybe created: left 'submitting', resolved from the provider's list
        status = getattr(exc, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:  # refused: no batch exists
            record.status, record.message = NOT_SUBMITTED, f"batch refused: {_short(exc)}"
        else:
            record.message = f"creating the batch got no answer ({_short(exc)}); the next submit or collect looks it up"
        record.updated_at = _now()
        state.save()
        raise BatchError(f"{spec.name}: {record.message}") from exc
    _update(record, batch)
    state.save()
    return record


def _update(record: BatchRecord, batch: Any) -> None:
    """Copy a provider batch object's id, status, file ids and counts into ``record``."""
    record.batch_id = str(batch.id)
    record.status = str(batch.status)
    record.output_file_id = getattr(batch, "output_file_id", None) or None
    record.error_file_id = getattr(batch, "error_file_id", None) or None
    counts = getattr(batch, "request_counts", None)
    if counts is not None:
        record.request_counts = {k: int(getattr(counts, k, 0) or 0) for k in ("total", "completed", "failed")}
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) if errors is not None else None
    if data:
        record.message = "; ".join(f"line {getattr(e, 'line', None)}: {getattr(e, 'code', None)}: "
                                   f"{getattr(e, 'message', '')}"
                                   for e in data)[:500]
    record.updated_at = _now()


def _resolve_submitting(state: BatchState, api_base: str | None) -> list[str]:
    """Find on the provider the batches of submissions recorded as 'submitting' (the answer to their
    creation was lost); those not found were never created and are marked not submitted."""
    notes = []
    for record in state.batches:
        if record.status != SUBMITTING:
            continue
        if record.input_file_id is None:  # the upload never finished: no batch can reference it
            record.status, record.message, record.updated_at = NOT_SUBMITTED, "upload did not finish", _now()
            notes.append(f"submission {record.submission}: the upload did not finish; its requests are submittable")
            continue
        try:
            found = _find_submission(record, BatchProvider.for_record(record, api_base).kwargs())
        except BatchError:
            raise
        except Exception as exc:  # noqa: BLE001 - unknown whether it exists: keep it 'submitting', send nothing
            raise BatchError(f"submission {record.submission}: cannot list the provider's batches to find it "
                             f"({_short(exc)}); nothing sent, try again") from exc
        if found is not None:
            _update(record, found)
            record.message = None
            notes.append(f"submission {record.submission}: found batch {record.batch_id} ({record.status}) on the provider")
        else:
            record.status, record.message, record.updated_at = NOT_SUBMITTED, "no batch created", _now()
            notes.append(f"submission {record.submission}: no batch on the provider; its requests are submittable")
    if notes:
        state.save()
    return notes


def _find_submission(record: BatchRecord, conn: dict[str, Any]) -> Any:
    """The provider's batch whose metadata names ``record``'s submission (newest first, pages followed
    back to an hour before it was recorded), or None."""
    since = datetime.fromisoformat(record.submitted_at).timestamp() - 3600 if record.submitted_at else 0
    after = None
    while True:
        page = _litellm().list_batches(limit=100, after=after, **conn)
        for batch in page.data:
            if (getattr(batch, "metadata", None) or {}).get(SUBMISSION_KEY) == record.submission:
                return batch
        if not page.data or not getattr(page, "has_more", False) or (page.data[-1].created_at or 0) < since:
            return None
        after = page.data[-1].id


# ------------------------------------------------------------------ poll / collect
def poll(run_dir: str | Path, *, api_base: str | None = None) -> list[BatchRecord]:
    """Refresh the status of every batch not yet collected; the run's batch records."""
    folder = exchange_folder(run_dir)
    with _locked(folder) as state:
        _poll(state, api_base)
        return list(state.batches)


def _poll(state: BatchState, api_base: str | None) -> None:
    _resolve_submitting(state, api_base)
    for record in state.batches:
        if record.collected_at is None and record.batch_id and record.status in RUNNING:
            conn = BatchProvider.for_record(record, api_base).kwargs()
            try:
                _update(record, _litellm().retrieve_batch(batch_id=record.batch_id, **conn))
            except Exception as exc:  # noqa: BLE001 - unreachable now: the batch keeps its last status
                record.message = f"last poll failed: {_short(exc)}"
    state.save()


def collect(run_dir: str | Path, *, api_base: str | None = None, pricing: Pricing | None = None) -> CollectReport:
    """Poll every batch; for each finished one not yet collected, download its output and error files
    into the exchange folder, import the answered requests (:func:`~.exchange.import_batch_output`)
    and record the rest as unanswered with the reason (provider error, HTTP status, import error)."""
    run_dir = Path(run_dir)
    folder = exchange_folder(run_dir)
    if not (folder / STATE_FILE).is_file():
        raise BatchError(f"{folder / STATE_FILE}: no batches submitted for this run "
                         "(python -m scripts.exchange submit RUN --backbone NAME)")
    pricing = pricing or default_pricing()
    report = CollectReport()
    with _locked(folder) as state:
        _poll(state, api_base)
        for record in state.batches:
            if record.collected_at is not None or record.status == NOT_SUBMITTED:
                continue
            if record.status not in FINISHED:
                report.running += 1
                report.lines.append(f"batch {record.batch_id or record.submission}: {record.status} "
                                    f"({len(record.custom_ids)} request(s), submitted {record.submitted_at})"
                                    + (f"; {record.message}" if record.message else ""))
                continue
            try:
                _collect_one(run_dir, folder, record, api_base, pricing)
            except Exception as exc:  # noqa: BLE001 - the batch stays uncollected; collect again after fixing
                report.errors.append(f"batch {record.batch_id}: not collected: {_short(exc)}")
                state.save()
                continue
            state.save()
            report.answered += len(record.answered)
            report.unanswered += len(record.failed)
            report.cost_usd += record.cost_usd
            report.lines.append(_collected_line(record))
            report.lines.extend(f"  unanswered {cid}: {why}" for cid, why in sorted(record.failed.items()))
    return report


def _collected_line(record: BatchRecord) -> str:
    line = (f"batch {record.batch_id}: {record.status}: {len(record.answered)} answered, {len(record.failed)} unanswered"
            f"; {record.input_tokens:,} input / {record.output_tokens:,} output tokens, ${record.cost_usd:.4f} "
            f"({record.price_source})")
    if record.message:
        line += f"; provider: {record.message}"
    if record.failed:
        line += "; the unanswered are submittable again (python -m scripts.exchange submit)"
    return line


def _collect_one(run_dir: Path, folder: Path, record: BatchRecord, api_base: str | None, pricing: Pricing) -> None:
    from reconmem.platform.llm.exchange import import_batch_output

    conn = BatchProvider.for_record(record, api_base).kwargs()
    litellm = _litellm()
    rows: list[tuple[str, int, dict[str, Any]]] = []
    for kind, file_id in (("output", record.output_file_id), ("errors", record.error_file_id)):
        if not file_id:
            continue
        raw = litellm.file_content(file_id=file_id, **conn).content
        name = f"batch-{record.batch_id}-{kind}.jsonl"
        atomic_write_text(folder / name, raw.decode("utf-8"))
        for n, text in enumerate(raw.decode("utf-8").splitlines(), 1):
            if text.strip():
                try:
                    rows.append((name, n, json.loads(text)))
                except json.JSONDecodeError as exc:
                    raise BatchError(f"{folder / name}:{n}: not JSON ({exc.msg})") from exc
    sent = set(record.custom_ids)
    good: dict[str, str] = {}
    failed: dict[str, str] = {}
    strays: list[str] = []
    tin = tout = 0
    for name, n, row in rows:
        cid = row.get("custom_id")
        if cid not in sent:
            strays.append(f"{name}:{n}: custom_id {cid!r} was not in this batch (ignored)")
            continue
        reason = _failure(row)
        if reason is not None:
            failed.setdefault(cid, f"{name}:{n}: {reason}")
        elif cid not in good:
            good[cid] = json.dumps(row, ensure_ascii=False)
            usage = row["response"]["body"].get("usage") or {}
            tin += int(usage.get("prompt_tokens") or 0)
            tout += int(usage.get("completion_tokens") or 0)
    for cid in good:
        failed.pop(cid, None)
    answered: list[str] = []
    price = pricing.batch_price(record.pricing_model) or pricing.price(record.pricing_model)
    if good:
        answers = folder / f"batch-{record.batch_id}-answers.jsonl"
        ids = list(good)
        atomic_write_text(answers, "\n".join(good.values()) + "\n")
        imported = import_batch_output(run_dir, answers, price=price)
        answered = sorted(set(imported.imported) | set(imported.unchanged))
        for error in imported.errors:  # "<file>:<line>: why": the line names the request
            where = error[len(str(answers)) + 1:].split(":", 1)[0] if error.startswith(f"{answers}:") else ""
            if where.isdigit() and 0 < int(where) <= len(ids):
                failed[ids[int(where) - 1]] = f"answered but not imported: {error}"
            else:
                strays.append(error)
    for cid in record.custom_ids:
        if cid not in answered and cid not in failed:
            failed[cid] = f"no answer in the batch's files (batch {record.status})"
    record.answered = answered
    record.failed = failed
    record.input_tokens, record.output_tokens = tin, tout  # every HTTP 200 answer is billed
    record.cost_usd = round(price.cost(tin, tout), 10)
    record.price_source = price.source
    if strays:
        record.message = "; ".join(filter(None, [record.message, *strays]))[:1000]
    record.collected_at = record.updated_at = _now()


def _failure(row: Mapping[str, Any]) -> str | None:
    """Why a Batch output / error line holds no usable answer (None: it does)."""
    error = row.get("error")
    if error:
        if isinstance(error, Mapping):
            return f"{error.get('code') or 'error'}: {error.get('message') or ''}".strip()
        return str(error)
    response = row.get("response")
    if not isinstance(response, Mapping):
        return "no response"
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        message = ((body or {}).get("error") or {}).get("message") if isinstance(body, Mapping) else None
        return f"HTTP {status}: {message or body}"
    if not isinstance(body, Mapping) or not body.get("choices"):
        return "HTTP 200 without choices"
    return None
