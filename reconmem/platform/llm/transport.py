"""The transport: how a built request reaches a backbone, and what only the backbone knows.

:class:`~reconmem.platform.llm.client.LLMClient` keeps the cache, the ledger, purposes, the cost limit,
retries and the context-window guard; a :class:`Transport` sends one request and knows the backbone's
tokenizer and what else names its outputs in the cache key. Implementations:

* :class:`LiteLLMTransport` - API and server backbones through ``litellm.completion``;
* :class:`reconmem.platform.local_model.provider.LocalTransport` - the in-process GGUF model (``local/...``);
* :class:`reconmem.platform.testing.ScriptedTransport` - scripted replies (tests);
* :class:`reconmem.platform.llm.exchange.ExchangeTransport` - requests out as files, answers back.

:func:`default_transport` picks the first two from the backbone's model string.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from reconmem.platform.llm import providers
from reconmem.platform.llm.response import Completion
from reconmem.platform.llm.spec import BackboneSpec

# token overhead of one chat message in ChatML-style templates (<|im_start|>role\n ... <|im_end|>\n)
MESSAGE_OVERHEAD_TOKENS = 4
REPLY_PRIMING_TOKENS = 3  # <|im_start|>assistant\n


@runtime_checkable
class Transport(Protocol):
    """One backbone's side of a call."""

    def send(self, request: dict[str, Any], *, purpose: str, key: str) -> Completion:
        """Send one built request (``key``: its LLM cache key); raise on failure (the client classifies)."""

    def note_call(self, key: str) -> None:
        """Called for every client call, cached or not, before the cache is asked."""

    def count_text(self, text: str) -> int:
        """Tokens of a string."""

    def count_messages(self, messages: list[Mapping[str, Any]]) -> int:
        """Prompt tokens of chat messages, template overhead included."""

    def cache_identity(self) -> dict[str, Any]:
        """Extra cache-key fields naming what stands behind the model string (weights, runtime)."""

    @property
    def exact_counts(self) -> bool:
        """Whether the counts are the backbone's own tokenizer's (then the window check is strict)."""

    def context_window(self, configured: int) -> int:
        """The usable window given the configured one."""

    def check_available(self) -> None:
        """Raise LLMUnavailable (one line naming what is missing) when the backbone cannot be called."""


class LiteLLMTransport:
    """API and server backbones through ``litellm.completion``; counts by ``litellm.token_counter``
    (bundled tiktoken files: exact for OpenAI models, cl100k_base for the others)."""

    def __init__(self, spec: BackboneSpec, *, timeout: float = 300) -> None:
        self.spec = spec
        self.timeout = float(timeout)

    def send(self, request: dict[str, Any], *, purpose: str, key: str) -> Completion:
        if self.spec.api_key_env:
            api_key: str | None = os.environ[self.spec.api_key_env]
        elif self.spec.api_base:
            api_key = "EMPTY"  # never forward an unrelated provider key to a custom server
        else:
            api_key = None
        return providers.litellm_completion(request, api_key=api_key, timeout=self.timeout,
                                            json_mode_supported=self.supports_response_format())

    def note_call(self, key: str) -> None:
        return None

    def count_text(self, text: str) -> int:
        return providers.litellm_count_text(self.spec.model, text) if text else 0

    def count_messages(self, messages: list[Mapping[str, Any]]) -> int:
        try:
            return providers.litellm_count_messages(self.spec.model, messages)
        except Exception:  # noqa: BLE001 - unusual message shapes: fall back to per-message counting
            return (sum(self.count_text(message_text(m)) + MESSAGE_OVERHEAD_TOKENS for m in messages)
                    + REPLY_PRIMING_TOKENS)

    def cache_identity(self) -> dict[str, Any]:
        """A server backbone built from a local GGUF file (``backbone.local``) names its weights."""
        return local_weights_identity(self.spec.local)

    @property
    def exact_counts(self) -> bool:
        return False

    def context_window(self, configured: int) -> int:
        return configured

    def check_available(self) -> None:
        from reconmem.platform.llm.errors import LLMUnavailable

        env = self.spec.api_key_env
        if env and not os.environ.get(env):
            raise LLMUnavailable(f"backbone '{self.spec.name}' ({self.spec.model}) needs the environment variable "
                                 f"{env}: export {env}=... or use backbone=local")

    def supports_response_format(self) -> bool:
        return providers.supports_response_format(self.spec.model)


def local_weights_identity(local: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{"local_weights": {gguf_path, gguf_name, sha256}}`` of a backbone built from a GGUF file, else {}."""
    if not local:
        return {}
    return {"local_weights": {k: local.get(k) for k in ("gguf_path", "gguf_name", "sha256") if local.get(k)}}


def default_transport(spec: BackboneSpec, *, timeout: float = 300) -> Transport:
    """The transport a backbone's model string names: ``local/...`` the in-process model, else litellm."""
    if spec.is_local:
        from reconmem.platform.local_model.provider import LocalTransport

        return LocalTransport(spec, timeout=timeout)
    return LiteLLMTransport(spec, timeout=timeout)


def message_text(message: Mapping[str, Any]) -> str:
    """The text a chat message contributes to the prompt (role, content parts, tool calls)."""
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "\n".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
    text = f"{message.get('role', '')}\n{content or ''}"
    if message.get("tool_calls"):
        text += "\n" + json.dumps(message["tool_calls"], ensure_ascii=False, default=str)
    return text


__all__ = ["MESSAGE_OVERHEAD_TOKENS", "REPLY_PRIMING_TOKENS", "LiteLLMTransport", "Transport", "default_transport",
           "local_weights_identity", "message_text"]
