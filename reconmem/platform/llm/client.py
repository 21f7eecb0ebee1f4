"""``LLMClient``: the single path to a backbone.

``LLMClient.chat`` builds the request, looks it up in the response cache (temperature-0 calls
only), checks the run's spend limit (paid, non-cached calls only), checks the prompt against the
context window, calls the transport under a concurrency cap with retries (exponential backoff +
jitter, or the server's ``Retry-After`` when it sends one, on rate limits, 5xx, timeouts,
connection errors and empty choices; never on context-length errors), and records every call --
cached or not -- in the :class:`~reconmem.platform.llm.ledger.UsageLedger` under its ``purpose``
tag (registered in :mod:`reconmem.platform.llm.purposes`) with tokens, seconds, retries and ``cost_usd``.

The request goes out through a :class:`~reconmem.platform.llm.transport.Transport` (litellm, the
in-process local model, scripted replies, the exchange folder; :func:`~reconmem.platform.llm.transport.default_transport`
picks litellm or the local model from the model string); everything above stays in the client.

Token counts: usage fields reported by the provider are recorded as is; when a provider reports
none, the transport's tokenizer counts prompt and reply (the GGUF model's own tokenizer for ``local/``
models, ``litellm.token_counter`` otherwise: OpenAI models use litellm's bundled tiktoken files;
other providers fall back to tiktoken ``cl100k_base``, an approximation of their own tokenizers).
"""

from __future__ import annotations

import collections
import json
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reconmem.platform.jsonio import JSONRepairError, parse_json_lenient
from reconmem.platform.llm.cache import open_cache, request_key
from reconmem.platform.llm.defaults import CallDefaults, DefaultedClient
from reconmem.platform.llm.errors import (
    ContextLengthExceeded,
    CostLimitReached,
    LLMError,
    LLMUnavailable,
    classify_error,
    reported_limits,
    retry_after_seconds,
)
from reconmem.platform.llm.ledger import UsageLedger
from reconmem.platform.llm.margins import default_count_margin
from reconmem.platform.llm.pricing import Price, Pricing, default_pricing
from reconmem.platform.llm.purposes import call_purpose
from reconmem.platform.llm.response import (Completion, LLMResponse, Usage, prefill_counts, response_from_cache,
                                             response_to_cache)
from reconmem.platform.llm.spec import BackboneSpec
from reconmem.platform.llm.transport import (MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS, Transport,
                                              default_transport, message_text)

log = logging.getLogger(__name__)
# The ledger event of the last call this thread made (chat_json marks it json_ok).
_LAST_EVENT = threading.local()


class LLMClient:
    """The single path to a backbone. Thread-safe; share one per backbone per run.

    ``max_concurrency`` caps the calls in flight through this client (run.workers beyond it wait).
    ``cache_mode`` is 'sqlite' (one machine) or 'sharded' (shared storage; see
    :mod:`reconmem.platform.llm.cache`). ``pricing`` prices calls (default: conf/pricing.yaml over
    litellm's offline map); the ledger's ``cost_limit_usd`` stops paid calls once reached.
    ``transport``: how requests reach the backbone (default: :func:`~reconmem.platform.llm.transport.default_transport`).
    """

    def __init__(self, spec: BackboneSpec, *, ledger: UsageLedger | None = None, cache_path: str | Path | None = None,
                 max_concurrency: int = 4, max_retries: int = 6, timeout: float = 300,
                 retry_base_delay: float = 1.0, retry_max_delay: float = 60.0, cache_mode: str = "sqlite",
                 pricing: Pricing | None = None, cache_salt: Mapping[str, Any] | None = None,
                 transport: Transport | None = None) -> None:
        if not isinstance(spec, BackboneSpec):
            spec = BackboneSpec.from_config(spec)
        if max_concurrency < 1:
            raise ValueError(f"llm.max_concurrency must be >= 1, got {max_concurrency}")
        self.spec = spec
        self.ledger = ledger if ledger is not None else UsageLedger()
        self.cache = open_cache(cache_path, cache_mode) if cache_path else None
        self.cache_salt = dict(cache_salt or {})  # extra cache-key fields, e.g. {"repeat": i} of run.repeat=K
        self.max_concurrency = int(max_concurrency)
        self.max_retries = int(max_retries)
        self.timeout = float(timeout)
        self.retry_base_delay = float(retry_base_delay)
        self.retry_max_delay = float(retry_max_delay)
        self._pricing = pricing
        self._price: Price | None = None
        self._semaphore = threading.BoundedSemaphore(self.max_concurrency)
        self._lock = threading.Lock()
        self.transport: Transport = transport if transport is not None else default_transport(spec, timeout=self.timeout)
        self.transport.check_available()

    # ---- properties
    @property
    def context_window(self) -> int:
        """Usable context window in tokens (the config's, capped by the transport: a local model's n_ctx)."""
        return self.transport.context_window(self.spec.context_window)

    @property
    def price(self) -> Price:
        """Dollars per token of this backbone (``spec.pricing_model`` or the model itself)."""
        if self._price is None:
            pricing = self._pricing or default_pricing()
            self._price = pricing.price(self.spec.pricing_model or self.spec.model)
        return self._price

    @property
    def count_margin(self) -> float:
        """Reserve for this client's token-count error (fraction of a prompt): ``backbone.count_margin``,
        else the measured value of the backbone's family (:mod:`reconmem.platform.llm.margins`)."""
        if self.spec.count_margin is not None:
            return float(self.spec.count_margin)
        if self.transport.exact_counts:
            return 0.0
        return default_count_margin(self.spec.model, self.spec.api_base)

    @property
    def json_failures(self) -> collections.Counter[str]:
        """Unusable ``chat_json`` replies per purpose: this backbone's events in the ledger with
        ``json_ok: false`` (the one rule the run loop counts a sample's failures by)."""
        return collections.Counter(str(e.get("purpose")) for e in self.ledger.events
                                   if e.get("json_ok") is False and e.get("backbone") == self.spec.name)

    def with_defaults(self, defaults: CallDefaults) -> DefaultedClient:
        """This client with call defaults (per-purpose ``max_tokens``, a temperature) that a call's own
        values override (:mod:`reconmem.platform.llm.defaults`)."""
        return DefaultedClient(self, defaults)

    # ---- public API
    def chat(self, messages: Sequence[Mapping[str, Any]], *, purpose: str, max_tokens: int | None = None,
             temperature: float | None = None, tools: Sequence[Mapping[str, Any]] | None = None,
             json_mode: bool = False, stop: str | Sequence[str] | None = None) -> LLMResponse:
        """One backbone call, cached (temperature 0), retried, capped, priced and recorded under ``purpose``
        (one of :data:`reconmem.platform.llm.purposes.PURPOSES`; any other is a ValueError)."""
        call_purpose(purpose)
        request = self._build_request(messages, max_tokens=max_tokens, temperature=temperature, tools=tools,
                                      json_mode=json_mode, stop=stop)
        started = time.perf_counter()
        key = request_key({**request, **self.transport.cache_identity(), **self.cache_salt})
        self.transport.note_call(key)
        cacheable = self.cache is not None and request["temperature"] == 0
        if cacheable:
            hit = self.cache.get(key)
            if hit is not None:
                response = response_from_cache(hit)
                _LAST_EVENT.event = self.ledger.record(
                    purpose, response.usage, cached=True, model=response.model or self.spec.model,
                    seconds=time.perf_counter() - started, backbone=self.spec.name,
                    original_seconds=hit.get("seconds"), **self._output_notes(response, request))
                return response

        price = self.price
        if price.is_paid and self.ledger.limit_reached():
            raise CostLimitReached(f"run.cost_limit_usd={self.ledger.cost_limit_usd:g} reached "
                                   f"(spent ${self.ledger.total_cost_usd:.4f}); not calling {self.spec.name} "
                                   f"({self.spec.model}) for purpose={purpose}; resume with a higher limit")
        prompt_tokens = self._check_context(request)
        refit: dict[str, Any] | None = None
        try:
            completion, retries = self._call_with_retries(request, purpose, key)
        except ContextLengthExceeded as exc:
            refitted = self._refit(request, exc, purpose)
            if refitted is None:
                raise
            request, refit = refitted
            prompt_tokens = refit["tokens_after"]
            try:
                completion, retries = self._call_with_retries(request, purpose, key)
            except ContextLengthExceeded as again:
                raise ContextLengthExceeded(f"{again} (after one re-fit to {refit['prompt_budget']} tokens for the "
                                            f"reported limit of {refit['reported_limit']})",
                                            limit_tokens=again.limit_tokens, prompt_tokens=again.prompt_tokens) from again
        if completion.deferred:  # an exchange placeholder: no reply yet, nothing cached or recorded
            _LAST_EVENT.event = None
            return LLMResponse(text=completion.text, usage=Usage(0, 0), model=completion.model or self.spec.model,
                               finish_reason=completion.finish_reason)
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
        if cacheable:
            self.cache.put(key, {**response_to_cache(response), "seconds": round(seconds, 6)},
                           model=self.spec.model, purpose=purpose)
        extra: dict[str, Any] = {"retries": retries} if retries else {}
        extra.update(prefill_counts(completion.raw))
        extra.update(self._output_notes(response, request))
        if refit is not None:
            extra["refit"] = refit
        _LAST_EVENT.event = self.ledger.record(purpose, usage, cached=False, model=response.model, seconds=seconds,
                                               backbone=self.spec.name,
                                               cost_usd=self._cost(completion, usage, price, extra), **extra)
        return response

    def chat_json(self, messages: Sequence[Mapping[str, Any]], *, purpose: str,
                  validate: Callable[[Any], Any] | None = None, **kw: Any) -> Any | None:
        """Ask for JSON (JSON mode), parse leniently, validate; None (counted + logged) on failure.

        ``validate`` receives the parsed value and returns the value to hand back (returning None
        keeps the parsed value) or raises to reject it. Transport errors (LLMError, including
        ContextLengthExceeded) propagate; malformed output never does.
        """
        kw.setdefault("json_mode", True)
        _LAST_EVENT.event = None
        response = self.chat(messages, purpose=purpose, **kw)
        event = _LAST_EVENT.event  # this call's ledger event: it records whether the JSON was usable
        try:
            value = parse_json_lenient(response.text)
        except JSONRepairError as exc:
            self._json_failure(purpose, f"unparseable JSON ({exc})", response.text, event)
            return None
        if validate is not None:
            try:
                checked = validate(value)
            except Exception as exc:  # noqa: BLE001 - any validator complaint is a rejection
                self._json_failure(purpose, f"validation failed ({type(exc).__name__}: {exc})", response.text, event)
                return None
            if checked is not None:
                value = checked
        if event is not None:
            event["json_ok"] = True
        return value

    def count_tokens(self, text_or_messages: str | Sequence[Mapping[str, Any]]) -> int:
        """Tokens of a string, or of chat messages including per-message template overhead."""
        if isinstance(text_or_messages, str):
            return self.transport.count_text(text_or_messages) if text_or_messages else 0
        return self.transport.count_messages(list(text_or_messages))

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
        if self.spec.reasoning_max_tokens:  # the hidden reasoning counts toward the same cap
            request["max_tokens"] = max_out + int(self.spec.reasoning_max_tokens)
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
        exact = self.transport.exact_counts
        limit = window if exact else int(window * 1.15)
        if prompt_tokens >= limit:
            raise ContextLengthExceeded(f"prompt of {prompt_tokens} tokens does not fit the context window of "
                                        f"{window} tokens ({self.spec.name}: {self.spec.model})")
        if exact and prompt_tokens + request["max_tokens"] > window:
            request["max_tokens"] = window - prompt_tokens
        return prompt_tokens

    def _refit(self, request: dict[str, Any], exc: ContextLengthExceeded,
               purpose: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The request re-fitted (:func:`reconmem.platform.fit.fit_messages`) to the limit the provider's
        error reported, and the trim record; None when the error names no limit or trimming cannot help."""
        from reconmem.platform.trim import fit_messages, window_budget

        limit = exc.limit_tokens
        if not limit:
            return None
        ours = self.count_tokens(request["messages"])
        out = int(request["max_tokens"])
        if exc.prompt_tokens:  # the provider's count of this prompt: convert its limit into our counts
            budget = int(window_budget(limit, out) * ours / exc.prompt_tokens * 0.98)
        else:
            budget = window_budget(limit, out, self.count_margin)
        if budget <= 0 or budget >= ours:
            return None
        messages, meta = fit_messages(request["messages"], limit=budget, count=self.count_tokens)
        if meta["tokens_after"] >= ours:
            return None
        record = {"reported_limit": int(limit), "reported_prompt_tokens": exc.prompt_tokens, **meta}
        log.warning("%s (%s), purpose=%s: the provider reports a context limit of %d tokens (our count of the "
                    "prompt: %d); re-fitted once to %d tokens. Set backbone.context_window / backbone.count_margin "
                    "to match the provider.", self.spec.name, self.spec.model, purpose, limit, ours, meta["tokens_after"])
        return {**request, "messages": messages}, record

    @staticmethod
    def _output_notes(response: LLMResponse, request: dict[str, Any]) -> dict[str, Any]:
        """Ledger fields of a reply's output: reasoning tokens (when reported) and an empty visible output."""
        notes: dict[str, Any] = {}
        if response.usage.reasoning_tokens is not None:
            notes["reasoning_tokens"] = int(response.usage.reasoning_tokens)
        if not response.text.strip() and not response.tool_calls:
            notes["empty_output"] = True
            if response.finish_reason == "length":
                log.warning("%s: empty visible output, the max_tokens of %s ran out (%s reasoning tokens); raise "
                            "backbone.reasoning_max_tokens or the benchmark's max_tokens", response.model,
                            request.get("max_tokens"), response.usage.reasoning_tokens)
        return notes

    def _call_with_retries(self, request: dict[str, Any], purpose: str, key: str) -> tuple[Completion, int]:
        """The transport's completion and the number of retries it took."""
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                with self._semaphore:
                    return self.transport.send(request, purpose=purpose, key=key), attempt
            except Exception as exc:  # noqa: BLE001 - classified below
                kind = classify_error(exc)
                where = f"{self.spec.name} ({self.spec.model}), purpose={purpose}"
                if kind == "context":
                    if isinstance(exc, ContextLengthExceeded):
                        raise
                    limit, reported_prompt = reported_limits(_error_text(exc))
                    raise ContextLengthExceeded(f"{where}: context window exceeded: {_short(exc)}",
                                                limit_tokens=limit, prompt_tokens=reported_prompt) from exc
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
                delay = self._backoff(attempt, retry_after_seconds(exc))
                log.warning("%s: %s (attempt %d/%d), retrying in %.2fs", where, type(exc).__name__,
                            attempt + 1, attempts, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """The server's Retry-After when given (capped at retry_max_delay), else exponential backoff
        with full jitter in [0.5, 1.5) x base x 2^attempt, capped."""
        if retry_after is not None:
            return min(self.retry_max_delay, retry_after)
        return min(self.retry_max_delay, self.retry_base_delay * (2 ** attempt)) * (0.5 + random.random())

    @staticmethod
    def _cost(completion: Completion, usage: Usage, price: Price, extra: dict[str, Any]) -> float:
        """What this call cost: the provider's bill when the transport knows it (a batch answer; the
        event then says ``billed: "transport"``), else the tokens at the backbone's standard rate."""
        if completion.cost_usd is not None:
            extra["billed"] = "transport"
            return completion.cost_usd
        return price.cost(usage.input_tokens, usage.output_tokens)

    def _json_failure(self, purpose: str, reason: str, text: str, event: dict[str, Any] | None) -> None:
        if event is not None:
            event["json_ok"] = False
        log.warning("chat_json[%s] on %s: %s; output starts %r", purpose, self.spec.name, reason, text[:200])



def approx_token_count(text: str) -> int:
    """Deterministic approximation: ceil(characters / 4) (0 for empty text)."""
    return math.ceil(len(text) / 4) if text else 0


def _check_messages(messages: Any) -> list[dict[str, Any]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or "role" not in m:
            raise ValueError(f"messages[{i}] must be a dict with a 'role' (got {type(m).__name__})")
        out.append(dict(m))
    return out


def _error_text(exc: BaseException) -> str:
    """An exception's message plus the HTTP body it carries (llama.cpp puts the numbers only there)."""
    text = str(exc)
    try:
        body = getattr(getattr(exc, "response", None), "text", None)
    except Exception:  # noqa: BLE001 - an unread or closed response: the message alone
        body = None
    return f"{text}\n{body}" if isinstance(body, str) and body else text


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
