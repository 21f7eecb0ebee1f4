"""Call defaults of one role's client: a default ``max_tokens`` per purpose and a default temperature.

A benchmark's per-role settings (LoCoEval's ``turn_max_tokens`` / ``task_max_tokens`` /
``purpose_max_tokens`` for the backbone; a CAB judge retry's sampling temperature) are applied here,
once, and a call's own value always wins. :meth:`reconmem.platform.llm.LLMClient.with_defaults`
returns a :class:`DefaultedClient` over the client: the same cache, ledger, concurrency cap and
transport, so a call through it has the cache key the same call with these values spelled out has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CallDefaults:
    """``max_tokens`` per purpose (a purpose without a positive value keeps the client's own default)
    and ``temperature`` (None: the client's own, 0)."""

    max_tokens: Mapping[str, int | None] = field(default_factory=dict)
    temperature: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_tokens", {str(k): int(v) for k, v in self.max_tokens.items() if v})

    def merged(self, other: "CallDefaults") -> "CallDefaults":
        """These defaults with ``other``'s set on top."""
        return CallDefaults({**self.max_tokens, **other.max_tokens},
                            self.temperature if other.temperature is None else other.temperature)

    def apply(self, purpose: str, kw: dict[str, Any]) -> dict[str, Any]:
        """``kw`` of one call with the defaults filled in where the call left them unset."""
        if kw.get("max_tokens") is None and purpose in self.max_tokens:
            kw["max_tokens"] = self.max_tokens[purpose]
        if kw.get("temperature") is None and self.temperature is not None:
            kw["temperature"] = self.temperature
        return kw


class DefaultedClient:
    """An LLM client with :class:`CallDefaults`: ``chat`` / ``chat_json`` fill them in; every other
    attribute (ledger, cache, spec, context_window, count_tokens ...) is the client's."""

    def __init__(self, client: Any, defaults: CallDefaults) -> None:
        self.client = client
        self.defaults = defaults

    def chat(self, messages: Sequence[Mapping[str, Any]], *, purpose: str, **kw: Any) -> Any:
        return self.client.chat(messages, purpose=purpose, **self.defaults.apply(purpose, kw))

    def chat_json(self, messages: Sequence[Mapping[str, Any]], *, purpose: str, **kw: Any) -> Any:
        return self.client.chat_json(messages, purpose=purpose, **self.defaults.apply(purpose, kw))

    def with_defaults(self, defaults: CallDefaults) -> "DefaultedClient":
        """The same client with ``defaults`` set on top of these."""
        return DefaultedClient(self.client, self.defaults.merged(defaults))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.client, name)
