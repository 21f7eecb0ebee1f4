"""The one LLM client every method, baseline and benchmark uses.

``LLMClient.chat`` is the single path to a backbone: it builds the request, looks it up in the
SQLite response cache (temperature-0 calls only), checks the prompt against the context window,
calls the transport under a concurrency cap with retries (exponential backoff + jitter on rate
limits, 5xx, timeouts and connection errors; never on context-length errors), and records every
call -- cached or not -- in the :class:`UsageLedger` under its ``purpose`` tag and the current
``ledger.tags(...)`` scope.

The transport is ``litellm.completion``; the offline backbone is registered with litellm as the
custom provider ``local`` (see :mod:`reconmem.platform.local_model`), so ``model="local/<name>"`` takes
exactly the same path as an API model. :class:`reconmem.platform.testing.ScriptedLLM` replaces only the
transport (and the tokenizer) for unit tests.

Token counts: usage fields reported by the provider are recorded as is; when a provider reports
none, the client's own tokenizer counts prompt and reply. ``count_tokens`` uses the GGUF model's own
tokenizer for ``local/`` models and ``litellm.token_counter`` otherwise (works offline: OpenAI models
use litellm's bundled tiktoken files; other providers fall back to tiktoken ``cl100k_base``, an
approximation of their own tokenizers).
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import hashlib
import json
import logging
import math
import os
import random
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconmem.platform.jsonio import JSONRepairError, parse_json_lenient

log = logging.getLogger(__name__)

CACHE_SCHEMA_VERSION = 1


# --------------------------------------------------------------------------------------- errors
class LLMError(Exception):
    """A backbone call failed (after retries where retrying made sense)."""


class ContextLengthExceeded(LLMError):
    """The prompt does not fit the backbone's context window. Never retried; methods may catch it."""


class LLMUnavailable(LLMError):
    """The backbone cannot be used: missing API key, model file or package. The message says which."""


class TransientLLMError(LLMError):
    """A failure worth retrying (custom transports raise it for rate limits, overload, timeouts)."""


# ---------------------------------------------------------------------------------- value types
@dataclass
class Usage:
    """Token usage of one call."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class LLMResponse:
    """One backbone reply. ``tool_calls`` holds ``[{"id", "name", "arguments": dict}]``."""

    text: str
    usage: Usage
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    cached: bool = False
    model: str = ""
    raw: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None


_SPEC_KEYS = {
    "name", "model", "context_window", "max_output_tokens", "temperature", "api_key_env", "api_base",
    "supports_function_calling", "local", "extra", "label", "budgets",
}
_SPEC_REQUIRED = ("name", "model", "context_window", "max_output_tokens")


@dataclass
class BackboneSpec:
    """A backbone as configured by a ``conf/backbone/*.yaml`` node."""

    name: str
    model: str  # litellm model string, e.g. "openai/gpt-5-mini" or "local/qwen2.5-coder-0.5b-instruct"
    context_window: int
    max_output_tokens: int
    temperature: float = 0.0
    api_key_env: str | None = None
    api_base: str | None = None
    supports_function_calling: bool = False
    local: dict[str, Any] | None = None  # in-process model settings (gguf chunks, sha256, n_ctx, threads)
    extra: dict[str, Any] = field(default_factory=dict)  # passed through to litellm
    label: str | None = None
    budgets: dict[str, Any] = field(default_factory=dict)  # per-backbone method budgets (k1, k2, ...)

    @classmethod
    def from_config(cls, cfg: Any) -> "BackboneSpec":
        """Build from a mapping or an OmegaConf node; unknown or missing keys raise ValueError naming them."""
        data = _to_plain(cfg)
        if not isinstance(data, Mapping):
            raise ValueError(f"backbone config must be a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - _SPEC_KEYS)
        if unknown:
            raise ValueError(f"backbone config: unknown key(s) {', '.join('backbone.' + k for k in unknown)} "
                             f"(known: {', '.join(sorted(_SPEC_KEYS))})")
        missing = [k for k in _SPEC_REQUIRED if data.get(k) in (None, "")]
        if missing:
            raise ValueError(f"backbone config: missing {', '.join('backbone.' + k for k in missing)}")
        try:
            return cls(
                name=str(data["name"]),
                model=str(data["model"]),
                context_window=int(data["context_window"]),
                max_output_tokens=int(data["max_output_tokens"]),
                temperature=float(data.get("temperature") or 0.0),
                api_key_env=data.get("api_key_env") or None,
                api_base=data.get("api_base") or None,
                supports_function_calling=bool(data.get("supports_function_calling", False)),
                local=dict(data["local"]) if data.get("local") else None,
                extra=dict(data.get("extra") or {}),
                label=data.get("label"),
                budgets=dict(data.get("budgets") or {}),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"backbone config '{data.get('name')}': {exc}") from exc

    @property
    def is_local(self) -> bool:
        return self.model.startswith("local/")


def _to_plain(cfg: Any) -> Any:
    if cfg is None or isinstance(cfg, (dict, list, str, int, float, bool)):
        return cfg
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        return dict(cfg)
    if isinstance(cfg, (DictConfig, ListConfig)):
        return OmegaConf.to_container(cfg, resolve=True)
    if isinstance(cfg, Mapping):
        return dict(cfg)
    return cfg


# --------------------------------------------------------------------------------------- ledger
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
    """

    def __init__(self, events: Sequence[Mapping[str, Any]] | None = None) -> None:
        self._lock = threading.Lock()
        self._events: list[dict[str, Any]] = [dict(e) for e in events or ()]

    @contextlib.contextmanager
    def tags(self, **tags: Any) -> Iterator[dict[str, Any]]:
        """Context manager: tag every call recorded inside it (sample=..., turn=..., phase=..., role=...)."""
        merged = {**(_TAGS.get() or {}), **tags}
        token = _TAGS.set(merged)
        try:
            yield dict(merged)
        finally:
            _TAGS.reset(token)

    def record(self, purpose: str, usage: Usage, *, cached: bool, model: str, seconds: float, **extra: Any) -> None:
        """Append one call event (tags of the current scope included)."""
        event = {
            "purpose": purpose,
            "input_tokens": int(usage.input_tokens),
            "output_tokens": int(usage.output_tokens),
            "cached": bool(cached),
            "model": model,
            "seconds": round(float(seconds), 6),
        }
        for key, value in {**(_TAGS.get() or {}), **extra}.items():
            event.setdefault(key, value)
        with self._lock:
            self._events.append(event)

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
            self._events.extend(dict(e) for e in events)

    def totals(self, by: Sequence[str] | str = ("purpose",), **filters: Any) -> dict[Any, Any]:
        """Sum calls, tokens and seconds, grouped by event fields, over events matching ``filters``.

        ``by=("purpose",)`` -> ``{purpose: {...}}``; several fields -> tuple keys; ``by=()`` -> one
        totals dict. Each totals dict has calls, cached_calls, input_tokens, output_tokens,
        total_tokens and seconds. Events lacking a field group under None.
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
        if not fields:
            return groups.get((), _empty_totals())
        return groups

    def to_jsonl(self, path: str | Path) -> Path:
        """Write all events as JSON lines (atomic)."""
        path = Path(path)
        lines = "".join(json.dumps(e, ensure_ascii=False, default=str) + "\n" for e in self.events)
        _atomic_write_text(path, lines)
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
    return {"calls": 0, "cached_calls": 0, "input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "seconds": 0.0}


def _atomic_write_text(path: Path, text: str) -> None:
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


# ---------------------------------------------------------------------------------------- cache
class ResponseCache:
    """SQLite store of temperature-0 responses, safe across threads (one connection per thread) and
    processes (WAL journal, busy timeout). ``path`` may be a file or a directory."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path).expanduser()
        if path.is_dir() or (not path.suffix and not path.exists()):
            path = path / "llm_cache.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._local = threading.local()
        conn = self._conn()
        conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, "
                     "purpose TEXT, value TEXT NOT NULL, created REAL)")
        conn.commit()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(str(self.path), timeout=60.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except json.JSONDecodeError:
            log.warning("LLM cache %s: unreadable entry %s ignored", self.path, key[:12])
            return None

    def put(self, key: str, value: Mapping[str, Any], *, model: str = "", purpose: str = "") -> None:
        conn = self._conn()
        with conn:
            conn.execute("INSERT OR REPLACE INTO responses (key, model, purpose, value, created) VALUES (?, ?, ?, ?, ?)",
                         (key, model, purpose, json.dumps(value, ensure_ascii=False, default=str), time.time()))

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def request_key(request: Mapping[str, Any]) -> str:
    """Cache key: sha256 over model, messages and every request parameter (canonical JSON)."""
    blob = json.dumps({"v": CACHE_SCHEMA_VERSION, **request}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------- error classifier
_RETRY_CLASS_NAMES = {
    "RateLimitError", "APIConnectionError", "Timeout", "APITimeoutError", "InternalServerError",
    "ServiceUnavailableError", "BadGatewayError", "TimeoutError", "ConnectionError", "ReadTimeout",
    "ConnectTimeout", "RemoteProtocolError",
}
_AUTH_CLASS_NAMES = {"AuthenticationError", "PermissionDeniedError"}
_CONTEXT_CLASS_NAMES = {"ContextWindowExceededError"}
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
_CONTEXT_PHRASES = ("context length", "context window", "maximum context", "context_length_exceeded",
                    "too many tokens", "exceeds the context", "exceed_context_size", "prompt is too long")


def classify_error(exc: BaseException) -> str:
    """'context' | 'auth' | 'retry' | 'fatal' for an exception raised by a transport.

    Uses class names along the MRO (litellm's exception classes, httpx, builtins) and HTTP status
    codes, so litellm need not be imported to classify.
    """
    if isinstance(exc, ContextLengthExceeded):
        return "context"
    if isinstance(exc, LLMUnavailable):
        return "auth"
    if isinstance(exc, TransientLLMError):
        return "retry"
    if isinstance(exc, LLMError):
        return "fatal"
    names = {c.__name__ for c in type(exc).__mro__}
    message = str(exc).lower()
    if names & _CONTEXT_CLASS_NAMES or any(p in message for p in _CONTEXT_PHRASES):
        return "context"
    if names & _AUTH_CLASS_NAMES:
        return "auth"
    if names & _RETRY_CLASS_NAMES:
        return "retry"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status in _RETRY_STATUS:
        return "retry"
    if isinstance(status, int) and status in (401, 403):
        return "auth"
    return "fatal"


# ---------------------------------------------------------------------------------- the client
@dataclass
class Completion:
    """What a transport returns. ``usage`` None means the client counts tokens itself."""

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage | None = None
    model: str = ""
    finish_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)


class LLMClient:
    """The single path to a backbone. Thread-safe; share one per backbone per run."""

    def __init__(self, spec: BackboneSpec, *, ledger: UsageLedger | None = None, cache_path: str | Path | None = None,
                 max_concurrency: int = 4, max_retries: int = 6, timeout: float = 300,
                 retry_base_delay: float = 1.0, retry_max_delay: float = 60.0) -> None:
        if not isinstance(spec, BackboneSpec):
            spec = BackboneSpec.from_config(spec)
        if max_concurrency < 1:
            raise ValueError(f"llm.max_concurrency must be >= 1, got {max_concurrency}")
        self.spec = spec
        self.ledger = ledger if ledger is not None else UsageLedger()
        self.cache = ResponseCache(cache_path) if cache_path else None
        self.max_retries = int(max_retries)
        self.timeout = float(timeout)
        self.retry_base_delay = float(retry_base_delay)
        self.retry_max_delay = float(retry_max_delay)
        self.json_failures: collections.Counter[str] = collections.Counter()
        self._semaphore = threading.BoundedSemaphore(int(max_concurrency))
        self._lock = threading.Lock()
        self._check_available()

    # ---- properties
    @property
    def context_window(self) -> int:
        """Usable context window in tokens (the smaller of the config's and the local model's n_ctx)."""
        if self.spec.is_local:
            from reconmem.platform import local_model

            return min(self.spec.context_window, local_model.effective_n_ctx(self.spec.local or {}))
        return self.spec.context_window

    # ---- public API
    def chat(self, messages: Sequence[Mapping[str, Any]], *, purpose: str, max_tokens: int | None = None,
             temperature: float | None = None, tools: Sequence[Mapping[str, Any]] | None = None,
             json_mode: bool = False, stop: str | Sequence[str] | None = None) -> LLMResponse:
        """One backbone call, cached (temperature 0), retried, capped and recorded under ``purpose``."""
        if not purpose or not isinstance(purpose, str):
            raise ValueError("LLMClient.chat: purpose= is required (e.g. 'turn_generation')")
        request = self._build_request(messages, max_tokens=max_tokens, temperature=temperature, tools=tools,
                                      json_mode=json_mode, stop=stop)
        started = time.perf_counter()
        key = None
        if self.cache is not None and request["temperature"] == 0:
            key = request_key({**request, **self._cache_identity()})
        if key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                response = _response_from_cache(hit)
                self.ledger.record(purpose, response.usage, cached=True, model=response.model or self.spec.model,
                                   seconds=time.perf_counter() - started, backbone=self.spec.name,
                                   original_seconds=hit.get("seconds"))
                return response

        prompt_tokens = self._check_context(request)
        completion = self._call_with_retries(request, purpose)
        usage = completion.usage
        if usage is None:
            produced = completion.text
            if completion.tool_calls:
                produced += json.dumps(completion.tool_calls, ensure_ascii=False, default=str)
            usage = Usage(prompt_tokens if prompt_tokens is not None else self.count_tokens(request["messages"]),
                          self.count_tokens(produced) if produced else 0)
        seconds = time.perf_counter() - started
        response = LLMResponse(text=completion.text, usage=usage, tool_calls=completion.tool_calls, cached=False,
                               model=completion.model or self.spec.model, raw=completion.raw,
                               finish_reason=completion.finish_reason)
        if key is not None:
            self.cache.put(key, {**_response_to_cache(response), "seconds": round(seconds, 6)},
                           model=self.spec.model, purpose=purpose)
        self.ledger.record(purpose, usage, cached=False, model=response.model, seconds=seconds, backbone=self.spec.name)
        return response

    def chat_json(self, messages: Sequence[Mapping[str, Any]], *, purpose: str,
                  validate: Callable[[Any], Any] | None = None, **kw: Any) -> Any | None:
        """Ask for JSON (JSON mode), parse leniently, validate; None (counted + logged) on failure.

        ``validate`` receives the parsed value and returns the value to hand back (returning None
        keeps the parsed value) or raises to reject it. Transport errors (LLMError, including
        ContextLengthExceeded) propagate; malformed output never does.
        """
        kw.setdefault("json_mode", True)
        response = self.chat(messages, purpose=purpose, **kw)
        try:
            value = parse_json_lenient(response.text)
        except JSONRepairError as exc:
            self._json_failure(purpose, f"unparseable JSON ({exc})", response.text)
            return None
        if validate is not None:
            try:
                checked = validate(value)
            except Exception as exc:  # noqa: BLE001 - any validator complaint is a rejection
                self._json_failure(purpose, f"validation failed ({type(exc).__name__}: {exc})", response.text)
                return None
            if checked is not None:
                value = checked
        return value

    def count_tokens(self, text_or_messages: str | Sequence[Mapping[str, Any]]) -> int:
        """Tokens of a string, or of chat messages including per-message template overhead."""
        if isinstance(text_or_messages, str):
            return self._count_text(text_or_messages)
        return self._count_messages(list(text_or_messages))

    # ---- extension points (ScriptedLLM overrides these two groups only)
    def _transport(self, request: dict[str, Any], *, purpose: str) -> Completion:
        """Send ``request`` through litellm."""
        litellm = import_litellm()
        if self.spec.is_local:
            from reconmem.platform import local_model

            local_model.ensure_registered(self.spec)  # loads the model; LLMUnavailable if it cannot
        kwargs = dict(request)
        json_mode = kwargs.pop("json_mode", False)
        if json_mode and self._supports_response_format(litellm):
            kwargs["response_format"] = {"type": "json_object"}
        for name in ("tools", "stop", "api_base"):
            if kwargs.get(name) is None:
                kwargs.pop(name, None)
        if self.spec.api_key_env:
            kwargs["api_key"] = os.environ[self.spec.api_key_env]
        elif self.spec.api_base:
            kwargs["api_key"] = "EMPTY"  # never forward an unrelated provider key to a custom server
        kwargs.setdefault("drop_params", True)
        kwargs["timeout"] = self.timeout
        kwargs["num_retries"] = 0  # retries are ours
        response = litellm.completion(**kwargs)
        return completion_from_litellm(response)

    def _count_text(self, text: str) -> int:
        if not text:
            return 0
        if self.spec.is_local:
            from reconmem.platform import local_model

            return local_model.count_tokens(self.spec, text)
        litellm = import_litellm()
        return int(litellm.token_counter(model=self.spec.model, text=text))

    def _count_messages(self, messages: list[Mapping[str, Any]]) -> int:
        if self.spec.is_local:
            from reconmem.platform import local_model

            return local_model.count_message_tokens(self.spec, messages)
        litellm = import_litellm()
        try:
            return int(litellm.token_counter(model=self.spec.model, messages=[dict(m) for m in messages]))
        except Exception:  # noqa: BLE001 - unusual message shapes: fall back to per-message counting
            return sum(self._count_text(_message_text(m)) + MESSAGE_OVERHEAD_TOKENS for m in messages) + REPLY_PRIMING_TOKENS

    def _cache_identity(self) -> dict[str, Any]:
        """Extra cache-key fields naming the weights behind a model string (local GGUF file / checksum)."""
        if not self.spec.local:
            return {}
        local = self.spec.local
        return {"local_weights": {k: local.get(k) for k in ("gguf_path", "gguf_name", "sha256") if local.get(k)}}

    @property
    def _exact_token_counts(self) -> bool:
        """Whether count_tokens is the backbone's own tokenizer (then the context check is strict)."""
        return self.spec.is_local

    def _check_available(self) -> None:
        env = self.spec.api_key_env
        if env and not os.environ.get(env):
            raise LLMUnavailable(f"backbone '{self.spec.name}' ({self.spec.model}) needs the environment variable "
                                 f"{env}: export {env}=... or use backbone=local")

    # ---- internals
    def _build_request(self, messages, *, max_tokens, temperature, tools, json_mode, stop) -> dict[str, Any]:
        msgs = _check_messages(messages)
        if tools and not self.spec.supports_function_calling:
            raise LLMError(f"backbone '{self.spec.name}' has supports_function_calling: false; "
                           "cannot pass tools= (use a JSON-mode protocol instead)")
        max_out = int(max_tokens if max_tokens is not None else self.spec.max_output_tokens)
        if max_out < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_out}")
        request: dict[str, Any] = {
            "model": self.spec.model,
            "messages": msgs,
            "max_tokens": max_out,
            "temperature": float(self.spec.temperature if temperature is None else temperature),
            "tools": [dict(t) for t in tools] if tools else None,
            "json_mode": bool(json_mode),
            "stop": [stop] if isinstance(stop, str) else (list(stop) if stop else None),
            "api_base": self.spec.api_base,
        }
        for key, value in self.spec.extra.items():
            request.setdefault(key, value)
        return request

    def _check_context(self, request: dict[str, Any]) -> int | None:
        """Raise ContextLengthExceeded when the prompt cannot fit; clamp max_tokens to the room left."""
        window = self.context_window
        try:
            prompt_tokens = self.count_tokens(request["messages"])
        except LLMError:
            raise
        except Exception as exc:  # noqa: BLE001 - counting is advisory for API models
            log.debug("token counting failed for %s: %s", self.spec.model, exc)
            return None
        limit = window if self._exact_token_counts else int(window * 1.15)
        if prompt_tokens >= limit:
            raise ContextLengthExceeded(f"prompt of {prompt_tokens} tokens does not fit the context window of "
                                        f"{window} tokens ({self.spec.name}: {self.spec.model})")
        if self._exact_token_counts and prompt_tokens + request["max_tokens"] > window:
            request["max_tokens"] = window - prompt_tokens
        return prompt_tokens

    def _call_with_retries(self, request: dict[str, Any], purpose: str) -> Completion:
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                with self._semaphore:
                    return self._transport(request, purpose=purpose)
            except Exception as exc:  # noqa: BLE001 - classified below
                kind = classify_error(exc)
                where = f"{self.spec.name} ({self.spec.model}), purpose={purpose}"
                if kind == "context":
                    if isinstance(exc, ContextLengthExceeded):
                        raise
                    raise ContextLengthExceeded(f"{where}: context window exceeded: {_short(exc)}") from exc
                if kind == "auth":
                    if isinstance(exc, LLMUnavailable):
                        raise
                    hint = (f"check the environment variable {self.spec.api_key_env}" if self.spec.api_key_env
                            else "set backbone.api_key_env to the variable holding the key")
                    raise LLMUnavailable(f"{where}: authentication failed ({hint}): {_short(exc)}") from exc
                if kind == "fatal":
                    if isinstance(exc, LLMError):
                        raise
                    raise LLMError(f"{where}: {type(exc).__name__}: {_short(exc)}") from exc
                if attempt + 1 >= attempts:
                    raise LLMError(f"{where}: giving up after {attempts} attempts: {type(exc).__name__}: "
                                   f"{_short(exc)}") from exc
                delay = self._backoff(attempt)
                log.warning("%s: %s (attempt %d/%d), retrying in %.2fs", where, type(exc).__name__,
                            attempt + 1, attempts, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with full jitter in [0.5, 1.5) x base x 2^attempt, capped."""
        return min(self.retry_max_delay, self.retry_base_delay * (2 ** attempt)) * (0.5 + random.random())

    def _json_failure(self, purpose: str, reason: str, text: str) -> None:
        with self._lock:
            self.json_failures[purpose] += 1
        log.warning("chat_json[%s] on %s: %s; output starts %r", purpose, self.spec.name, reason, text[:200])

    def _supports_response_format(self, litellm: Any) -> bool:
        if self.spec.is_local:
            return True
        try:
            params = litellm.get_supported_openai_params(model=self.spec.model) or []
        except Exception:  # noqa: BLE001 - unknown model: do not send it
            return False
        return "response_format" in params


# token overhead of one chat message in ChatML-style templates (<|im_start|>role\n ... <|im_end|>\n)
MESSAGE_OVERHEAD_TOKENS = 4
REPLY_PRIMING_TOKENS = 3  # <|im_start|>assistant\n


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "\n".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
    text = f"{message.get('role', '')}\n{content or ''}"
    if message.get("tool_calls"):
        text += "\n" + json.dumps(message["tool_calls"], ensure_ascii=False, default=str)
    return text


def _check_messages(messages: Any) -> list[dict[str, Any]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or "role" not in m:
            raise ValueError(f"messages[{i}] must be a dict with a 'role' (got {type(m).__name__})")
        out.append(dict(m))
    return out


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _response_to_cache(response: LLMResponse) -> dict[str, Any]:
    data = dataclasses.asdict(response)
    data.pop("cached", None)
    return data


def _response_from_cache(data: Mapping[str, Any]) -> LLMResponse:
    usage = data.get("usage") or {}
    return LLMResponse(text=data.get("text", ""), usage=Usage(int(usage.get("input_tokens", 0)),
                                                            int(usage.get("output_tokens", 0))),
                       tool_calls=list(data.get("tool_calls") or []), cached=True, model=data.get("model", ""),
                       raw=dict(data.get("raw") or {}), finish_reason=data.get("finish_reason"))


# ------------------------------------------------------------------------------------- litellm
_LITELLM_LOCK = threading.Lock()


def import_litellm() -> Any:
    """Import litellm lazily, with the offline price map (no network fetch at import)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with _LITELLM_LOCK:
        import warnings

        # pydantic complains about litellm's own TypedDicts when provider modules load lazily
        warnings.filterwarnings("ignore", message=r".*ReadOnly. qualifier", category=UserWarning)
        import litellm

        litellm.suppress_debug_info = True
        if not os.environ.get("LITELLM_LOG"):  # one INFO line per call otherwise, when the app logs at INFO
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
                logging.getLogger(name).setLevel(logging.WARNING)
    return litellm


def completion_from_litellm(response: Any) -> Completion:
    """Normalise a litellm ModelResponse (or an OpenAI-shaped dict) into a :class:`Completion`."""
    data = response if isinstance(response, Mapping) else _model_dump(response)
    choices = data.get("choices") or [{}]
    choice = choices[0] or {}
    message = choice.get("message") or {}
    tool_calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError:
                try:
                    arguments = parse_json_lenient(arguments)
                except JSONRepairError:
                    arguments = {"_raw": arguments}
        tool_calls.append({"id": call.get("id"), "name": function.get("name"), "arguments": arguments or {}})
    usage_data = data.get("usage") or {}
    usage = None
    if usage_data.get("prompt_tokens") is not None or usage_data.get("completion_tokens") is not None:
        usage = Usage(int(usage_data.get("prompt_tokens") or 0), int(usage_data.get("completion_tokens") or 0))
    return Completion(text=message.get("content") or "", tool_calls=tool_calls, usage=usage,
                      model=str(data.get("model") or ""), finish_reason=choice.get("finish_reason"),
                      raw=_jsonable(data))


def _model_dump(obj: Any) -> dict[str, Any]:
    for attr in ("model_dump", "dict", "to_dict"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            try:
                return dict(fn())
            except Exception:  # noqa: BLE001
                continue
    return dict(obj)


def _jsonable(data: Any) -> Any:
    try:
        return json.loads(json.dumps(data, default=str))
    except (TypeError, ValueError):
        return {}


def approx_token_count(text: str) -> int:
    """Deterministic approximation: ceil(characters / 4) (0 for empty text)."""
    return math.ceil(len(text) / 4) if text else 0
