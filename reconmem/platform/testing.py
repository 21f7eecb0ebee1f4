"""Test doubles for the backbone. Anything produced with them is a *scripted* reply, not a model's.

:class:`ScriptedLLM` is an :class:`~reconmem.platform.llm.LLMClient` whose transport
(:class:`ScriptedTransport`) returns scripted replies. Everything else -- request building, the context-window check, JSON repair, the response
cache, the usage ledger, ``json_failures`` -- is the real client's code.

Token counting is a deterministic approximation (no tokenizer is loaded): a text costs
``ceil(len(text) / 4)`` tokens; a chat message costs the tokens of ``"role\\ncontent"`` plus 4, and a
message list 3 more for the reply priming -- the same per-message overheads the real client uses.
A reply's usage is counted the same way unless the script supplies ``usage``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reconmem.platform.llm import (
    MESSAGE_OVERHEAD_TOKENS,
    REPLY_PRIMING_TOKENS,
    BackboneSpec,
    Completion,
    LLMClient,
    LLMError,
    Usage,
    UsageLedger,
    approx_token_count,
    message_text,
)

Reply = str | Mapping[str, Any] | BaseException
ReplyScript = Sequence[Reply] | Callable[[list[dict[str, Any]], str], Reply]

_SPEC_REPLY_KEYS = {"text", "tool_calls", "usage", "finish_reason"}


class ScriptExhausted(LLMError):
    """A ScriptedLLM was called more often than its script has replies."""


class ScriptedTransport:
    """The transport of scripted replies: ``replies`` consumed in order, or ``replies(messages, purpose)``;
    counts tokens by the deterministic approximation (which is then this backbone's exact tokenizer)."""

    def __init__(self, replies: ReplyScript, *, model: str, name: str = "scripted") -> None:
        self.model = model
        self.name = name
        self._script = replies if callable(replies) else list(replies)
        self._position = 0
        self._lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []

    @property
    def remaining(self) -> int | None:
        """Replies left in a list script (None for a callable script)."""
        return None if callable(self._script) else len(self._script) - self._position

    def send(self, request: dict[str, Any], *, purpose: str, key: str) -> Completion:
        messages = [dict(m) for m in request["messages"]]
        params = {k: v for k, v in request.items() if k != "messages"}
        with self._lock:
            self.calls.append({"purpose": purpose, "messages": messages, "params": params})
            if callable(self._script):
                reply = self._script(messages, purpose)
            else:
                if self._position >= len(self._script):
                    last_user = next((str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
                    raise ScriptExhausted(
                        f"ScriptedLLM '{self.name}': script exhausted after {len(self._script)} replies; "
                        f"call {len(self.calls)} (purpose={purpose}) asked: {last_user[:120]!r}")
                reply = self._script[self._position]
                self._position += 1
        return _completion_from_reply(reply, self.model)

    def note_call(self, key: str) -> None:
        return None

    def count_text(self, text: str) -> int:
        return approx_token_count(text)

    def count_messages(self, messages: list[Mapping[str, Any]]) -> int:
        return sum(approx_token_count(message_text(m)) + MESSAGE_OVERHEAD_TOKENS for m in messages) + REPLY_PRIMING_TOKENS

    def cache_identity(self) -> dict[str, Any]:
        return {}

    @property
    def exact_counts(self) -> bool:
        return True  # the approximation *is* this backbone's tokenizer

    def context_window(self, configured: int) -> int:
        return configured

    def check_available(self) -> None:
        return None


def scripted_spec(name: str = "scripted", *, context_window: int = 32768, max_output_tokens: int = 1024,
                  supports_function_calling: bool = True) -> BackboneSpec:
    """The backbone spec of a scripted backbone named ``name`` (model ``scripted/<name>``)."""
    return BackboneSpec(name=name, model=f"scripted/{name}", context_window=int(context_window),
                        max_output_tokens=int(max_output_tokens), temperature=0.0,
                        supports_function_calling=supports_function_calling)


class ScriptedLLM(LLMClient):
    """An LLMClient that answers from a script instead of a model (unit tests only).

    ``replies`` is either a list consumed in order or a callable ``(messages, purpose) -> reply``.
    A reply is one of:

    - a string: the reply text;
    - a dict with only the keys ``text``, ``tool_calls`` (``[{"id", "name", "arguments"}]``),
      ``usage`` (``{"input_tokens", "output_tokens"}``) and ``finish_reason``: a structured reply;
    - any other dict or list: JSON-encoded as the reply text (handy for ``chat_json``; pass
      ``json.dumps(...)`` yourself if your payload has exactly the structured-reply keys);
    - an exception instance: raised by the transport (e.g. ``TransientLLMError`` to exercise retries).

    ``calls`` records every transport call as ``{"purpose", "messages", "params"}``.
    """

    def __init__(self, replies: ReplyScript, *, context_window: int = 32768, ledger: UsageLedger | None = None,
                 name: str = "scripted", max_output_tokens: int = 1024, supports_function_calling: bool = True,
                 cache_path: str | Path | None = None, max_retries: int = 2, retry_base_delay: float = 0.0) -> None:
        spec = scripted_spec(name, context_window=context_window, max_output_tokens=max_output_tokens,
                             supports_function_calling=supports_function_calling)
        self.script = ScriptedTransport(replies, model=spec.model, name=name)
        super().__init__(spec, ledger=ledger, cache_path=cache_path, max_concurrency=8, max_retries=max_retries,
                         retry_base_delay=retry_base_delay, retry_max_delay=retry_base_delay, transport=self.script)

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Every transport call: ``{"purpose", "messages", "params"}``."""
        return self.script.calls

    @property
    def remaining(self) -> int | None:
        """Replies left in a list script (None for a callable script)."""
        return self.script.remaining


def _completion_from_reply(reply: Any, model: str) -> Completion:
    if isinstance(reply, BaseException):
        raise reply
    if isinstance(reply, str):
        return Completion(text=reply, model=model, finish_reason="stop")
    if isinstance(reply, Mapping) and set(reply) <= _SPEC_REPLY_KEYS and ("text" in reply or "tool_calls" in reply):
        usage = reply.get("usage")
        tool_calls = [{"id": c.get("id") or f"call_{i}", "name": c["name"], "arguments": dict(c.get("arguments") or {})}
                      for i, c in enumerate(reply.get("tool_calls") or [])]
        return Completion(text=str(reply.get("text") or ""), tool_calls=tool_calls,
                          usage=Usage(int(usage["input_tokens"]), int(usage["output_tokens"])) if usage else None,
                          model=model, finish_reason=reply.get("finish_reason") or ("tool_calls" if tool_calls else "stop"))
    if isinstance(reply, (Mapping, list)):
        return Completion(text=json.dumps(reply, ensure_ascii=False), model=model, finish_reason="stop")
    raise TypeError(f"ScriptedLLM: unsupported scripted reply of type {type(reply).__name__}: {reply!r}")
