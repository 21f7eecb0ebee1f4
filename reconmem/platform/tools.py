"""The one tool-calling protocol of the agentic loops (MemGPT, Memory Tool, both CAB maintainer hosts).

A loop offers tools, reads the reply's calls, runs them and sends the results back in the next
request. What every loop shares is defined here; what a loop decides for itself (which tools a step
offers, when its chain ends, its handlers) stays with the loop and is passed in as parameters:

* **schemas**: :func:`function_tool`, one OpenAI/litellm ``tools=`` entry;
* **a reply's calls**: :func:`reply_tool_calls` (function calling; a call without an id gets
  ``<id_prefix><i>``, ``names`` keeps only the named tools);
* **the exchange as chat messages**: :func:`tool_call_message` (the assistant's calls) and
  :func:`tool_result_message` (one result) for function calling; for backbones without it, the strict
  JSON protocol of :func:`parse_json_tool_call` (a reply that is exactly one ``{"tool", "arguments"}``
  object), answered by :func:`json_tool_result` or :func:`json_protocol_error`;
* **dispatch under limits**: :class:`ToolDispatch` runs one response's calls through a handler with
  results clipped to ``max_result_chars``, at most ``max_calls_per_step`` calls per round (later
  calls answered with an error, not run) and an identical repeated call answered from its earlier
  result plus :data:`REPEATED_CALL_NOTE` (not run again);
* **an answer that is a tool call**: :func:`looks_like_tool_call` detects it, :func:`reask_messages`
  is the request that asks for the answer again without tools.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

REPEATED_CALL_NOTE = ("NOTE: you already made this exact call in this response; above is its earlier result. "
                      "Use it instead of calling again.")
_FENCE_RE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.DOTALL)


def function_tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """One OpenAI/litellm ``tools=`` entry (``parameters`` is the arguments' JSON schema)."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


@dataclass(frozen=True)
class ToolCall:
    """One call of a reply: its id, the tool's name and the arguments as the reply gave them."""

    id: Any
    name: Any
    arguments: Any


def reply_tool_calls(resp: Any, *, id_prefix: str = "call_", names: Sequence[str] | None = None) -> list[ToolCall]:
    """The function calls of a reply (``resp.tool_calls``), in order; with ``names`` only those tools'.
    A call without an id gets ``<id_prefix><i>``, ``i`` its place among the calls kept."""
    calls = [c for c in resp.tool_calls or [] if names is None or c.get("name") in names]
    return [ToolCall(c.get("id") or f"{id_prefix}{i}", c.get("name"), c.get("arguments")) for i, c in enumerate(calls)]


def tool_call_message(content: Any, calls: Sequence[ToolCall], *, ensure_ascii: bool = True) -> dict[str, Any]:
    """The assistant message that made ``calls`` (their ``arguments`` JSON-encoded as given)."""
    return {"role": "assistant", "content": content, "tool_calls": [
        {"id": c.id, "type": "function",
         "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=ensure_ascii)}}
        for c in calls]}


def tool_result_message(call_id: Any, name: Any, content: str) -> dict[str, Any]:
    """The ``role: tool`` message answering the call ``call_id``."""
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def parse_json_tool_call(text: str, names: Sequence[str]) -> tuple[str, dict[str, Any]] | str | None:
    """The JSON protocol (backbones without function calling): ``(tool, arguments)`` for a tool call,
    an error string for a malformed attempt, ``None`` for an answer.

    Strict: the whole reply (optionally in one ```json fence) must be one JSON object with a
    ``tool`` naming one of ``names`` and an optional ``arguments`` object.
    """
    s = text.strip()
    m = _FENCE_RE.match(s)
    if m:
        s = m.group(1).strip()
    if not s.startswith("{"):
        return None
    attempt = bool(re.match(r"\{\s*[\"']tool[\"']\s*:", s))
    try:
        obj = json.loads(s)
    except json.JSONDecodeError as exc:
        return f"your tool call is not valid JSON ({exc.msg} at column {exc.colno})" if attempt else None
    if not isinstance(obj, dict) or "tool" not in obj:
        return None
    name = obj.get("tool")
    args = obj.get("arguments", {})
    if name not in names:
        return f"unknown tool {name!r}; available tools: {', '.join(names)}"
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return "'arguments' must be a JSON object"
    extra = set(obj) - {"tool", "arguments"}
    if extra:
        return f"unexpected keys {sorted(extra)}; use exactly {{\"tool\": ..., \"arguments\": {{...}}}}"
    return name, args


def json_tool_result(name: str, text: str) -> str:
    """The JSON protocol's user message holding one tool result."""
    return f"TOOL RESULT ({name}):\n{text}"


def json_protocol_error(message: str) -> str:
    """The JSON protocol's answer to a malformed tool call."""
    return (f"ERROR: {message}. To call a tool reply with exactly one JSON object "
            '{"tool": "<name>", "arguments": {...}}; to answer, reply in plain text.')


def looks_like_tool_call(text: str, names: Sequence[str]) -> bool:
    """Whether an answer is really a tool call: the JSON protocol's ``{"tool": ...}`` (even malformed),
    or a function call written as text (``{"name": <one of names>, "arguments": ...}``, ``<tool_call>`` tags)."""
    if parse_json_tool_call(text, names) is not None:
        return True
    s = re.sub(r"</?tool_call>", "", text.strip()).strip()
    m = _FENCE_RE.match(s)
    if m:
        s = m.group(1).strip()
    if not s.startswith("{"):
        return False
    try:
        obj = json.loads(s)
    except json.JSONDecodeError:
        return False
    return isinstance(obj, dict) and obj.get("name") in names and ("arguments" in obj or "parameters" in obj)


def reask_messages(messages: Sequence[dict[str, Any]], answer: str, prompt: str) -> list[dict[str, Any]]:
    """The request asking again for an answer that was a tool call: ``messages``, that answer, ``prompt``."""
    return [dict(m) for m in messages] + [{"role": "assistant", "content": answer}, {"role": "user", "content": prompt}]


class HasText(Protocol):
    text: str


R = TypeVar("R", bound=HasText)


class ToolDispatch(Generic[R]):
    """Runs one response's tool calls through ``handler(name, arguments) -> result`` (a result has the
    ``text`` the model sees) under the protocol's limits: see the module docstring. ``results`` holds
    every result that ran, in order; ``repeated`` / ``over_cap`` count the calls answered without running."""

    def __init__(self, handler: Callable[[str, Any], R], *, max_calls_per_step: int = 4,
                 max_result_chars: int = 12_000) -> None:
        self.handler = handler
        self.max_calls_per_step = int(max_calls_per_step)
        self.max_result_chars = int(max_result_chars)
        self._lock = threading.Lock()
        self.new_response()

    def new_response(self) -> None:
        """Forget the previous response's results and repeated-call cache."""
        self.results: list[R] = []
        self.repeated = 0
        self.over_cap = 0
        self._seen: dict[str, str] = {}

    def execute(self, name: str, args: Any, *, position: int = 0) -> tuple[str, bool]:
        """(text for the model, whether the call ran) of the ``position``-th call of a round."""
        if position >= self.max_calls_per_step:
            with self._lock:
                self.over_cap += 1
            return f"ERROR: at most {self.max_calls_per_step} tool calls per step; this call was not executed", False
        key = json.dumps([name, args], sort_keys=True, default=str)
        with self._lock:
            if key in self._seen:
                self.repeated += 1
                return self._seen[key] + "\n\n" + REPEATED_CALL_NOTE, False
            result = self.handler(name, args)
            self.results.append(result)
            text = self.clip(result.text)
            self._seen[key] = text
            return text, True

    def clip(self, text: str) -> str:
        """``text`` cut to ``max_result_chars`` (with a note when cut)."""
        if len(text) <= self.max_result_chars:
            return text
        return text[: self.max_result_chars] + "\n[tool output clipped]"
