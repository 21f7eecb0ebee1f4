"""The errors of the LLM client and the classifier that maps any transport exception onto them.

This module imports nothing from the project (the local model imports it; no cycle).
"""

from __future__ import annotations

import re


class LLMError(Exception):
    """A backbone call failed (after retries where retrying made sense)."""


class ContextLengthExceeded(LLMError):
    """The prompt does not fit the backbone's context window. Never retried as is; methods may catch it.

    ``limit_tokens`` / ``prompt_tokens``: the window and the prompt size the provider's error reported
    (None when its wording names no number); the client re-fits once to that limit before raising.
    """

    def __init__(self, message: str, *, limit_tokens: int | None = None, prompt_tokens: int | None = None) -> None:
        super().__init__(message)
        self.limit_tokens = limit_tokens
        self.prompt_tokens = prompt_tokens


class LLMUnavailable(LLMError):
    """The backbone cannot be used: missing API key, model file or package. The message says which."""


class TransientLLMError(LLMError):
    """A failure worth retrying (custom transports raise it for rate limits, overload, timeouts)."""


class CostLimitReached(LLMError):
    """The run's spend limit is reached: raised *before* a paid, non-cached call (cached calls stay free)."""


class ExchangePending(LLMError):
    """An exchange backbone's request waits for its answer (written to the run's exchange folder):
    the run loop records the sample ``pending`` and a re-run continues it once answered."""

    def __init__(self, message: str, *, request_ids: list[str] | None = None, folder: str | None = None) -> None:
        super().__init__(message)
        self.request_ids = list(request_ids or [])
        self.folder = folder


class ExchangeConflict(LLMError):
    """A replayed exchange conversation asked, at a call position already answered, another prompt."""


_RETRY_CLASS_NAMES = {
    "RateLimitError", "APIConnectionError", "Timeout", "APITimeoutError", "InternalServerError",
    "ServiceUnavailableError", "BadGatewayError", "TimeoutError", "ConnectionError", "ReadTimeout",
    "ConnectTimeout", "RemoteProtocolError",
}
_AUTH_CLASS_NAMES = {"AuthenticationError", "PermissionDeniedError"}
_CONTEXT_CLASS_NAMES = {"ContextWindowExceededError"}
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
# Provider wordings of "the prompt is too long" (OpenAI, Anthropic, Gemini/Vertex, DeepSeek, vLLM,
# llama.cpp server); tests/http/fault_server.py serves each of them.
_CONTEXT_PHRASES = ("context length", "context window", "maximum context", "context_length_exceeded",
                    "too many tokens", "exceeds the context", "exceed_context_size", "prompt is too long",
                    "input token count", "exceeds the maximum number of tokens", "maximum input length",
                    "longer than the model's context", "input is too long")


_N = r"(\d[\d,]*)"
# (pattern, group of the limit, group of the prompt tokens) for each provider's wording
_LIMIT_PATTERNS: tuple[tuple[re.Pattern[str], int, int | None], ...] = (
    # OpenAI, DeepSeek, vLLM: "maximum context length is L tokens. However, you requested T tokens
    # (P in the messages, C in the completion)" / "... your messages resulted in P tokens"
    (re.compile(r"maximum context length is " + _N + r" tokens.*?" + _N + r" in the messages", re.I | re.S), 1, 2),
    (re.compile(r"maximum context length is " + _N + r" tokens.*?(?:resulted in|requested) " + _N + r" tokens",
                re.I | re.S), 1, 2),
    (re.compile(r"prompt is too long: " + _N + r" tokens > " + _N + r" maximum", re.I), 2, 1),  # Anthropic
    (re.compile(r"input token count \(" + _N + r"\) exceeds the maximum number of tokens allowed \(" + _N + r"\)",
                re.I), 2, 1),  # Gemini / Vertex
    (re.compile(r"n_prompt_tokens\W+" + _N + r".*?n_ctx\W+" + _N, re.I | re.S), 2, 1),  # llama.cpp server
    (re.compile(r"n_ctx\W+" + _N + r".*?n_prompt_tokens\W+" + _N, re.I | re.S), 1, 2),
    (re.compile(r"maximum context length is " + _N + r" tokens", re.I), 1, None),
    (re.compile(r"context (?:length|window|size) (?:of|is) " + _N + r" tokens", re.I), 1, None),
)


def reported_limits(message: str) -> tuple[int | None, int | None]:
    """(window, prompt tokens) a provider's context-length error names, each None when absent."""
    for pattern, limit_group, prompt_group in _LIMIT_PATTERNS:
        m = pattern.search(message or "")
        if m:
            limit = int(m.group(limit_group).replace(",", ""))
            prompt = int(m.group(prompt_group).replace(",", "")) if prompt_group else None
            return (limit if limit > 0 else None), (prompt if prompt else None)
    return None, None


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


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` (seconds or HTTP date) carried by an exception, if any."""
    import email.utils
    import time

    candidates = []
    for attr in ("litellm_response_headers", "headers"):
        candidates.append(getattr(exc, attr, None))
    response = getattr(exc, "response", None)
    candidates.append(getattr(response, "headers", None))
    for headers in candidates:
        if not headers:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except AttributeError:
            continue
        if value in (None, ""):
            continue
        try:
            return max(0.0, float(value))
        except (TypeError, ValueError):
            parsed = email.utils.parsedate_tz(str(value))
            if parsed is not None:
                return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None
