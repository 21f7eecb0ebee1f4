"""Value types of one call: token ``Usage``, the client's ``LLMResponse`` and a transport's ``Completion``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Usage:
    """Token usage of one call."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int | None = None  # of output_tokens, the hidden reasoning (None: not reported)

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


@dataclass
class Completion:
    """What a transport returns. ``usage`` None means the client counts tokens itself. ``deferred``: an
    exchange placeholder for an answer still to come (neither cached nor recorded). ``cost_usd``: what
    the provider billed for this answer when the transport knows it (a batch answer, at the batch
    rate); None = the client prices it at the backbone's standard rate."""

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage | None = None
    model: str = ""
    finish_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    deferred: bool = False
    cost_usd: float | None = None


def response_to_cache(response: LLMResponse) -> dict[str, Any]:
    """The cache entry of a response (everything but ``cached``)."""
    data = dataclasses.asdict(response)
    data.pop("cached", None)
    return data


def response_from_cache(data: Mapping[str, Any]) -> LLMResponse:
    """A response replayed from a cache entry (``cached=True``, the original usage)."""
    usage = data.get("usage") or {}
    reasoning = usage.get("reasoning_tokens")
    return LLMResponse(text=data.get("text", ""), usage=Usage(int(usage.get("input_tokens", 0)),
                                                            int(usage.get("output_tokens", 0)),
                                                            None if reasoning is None else int(reasoning)),
                       tool_calls=list(data.get("tool_calls") or []), cached=True, model=data.get("model", ""),
                       raw=dict(data.get("raw") or {}), finish_reason=data.get("finish_reason"))


def prefill_counts(raw: Mapping[str, Any]) -> dict[str, int]:
    """llama.cpp servers' ``timings``: prompt tokens evaluated (``prefilled_tokens``) and restored from
    the prompt cache (``restored_tokens``) for this call; ``{}`` for providers that do not report them."""
    timings = raw.get("timings") if isinstance(raw, Mapping) else None
    if not isinstance(timings, Mapping) or timings.get("prompt_n") is None:
        return {}
    return {"prefilled_tokens": int(timings.get("prompt_n") or 0), "restored_tokens": int(timings.get("cache_n") or 0)}
