"""SCRIPTED backbone replies for the exchange tests (not a model's result): the same function answers a
direct run (``backbone.model=scripted/scripted_exchange:reply``) and the requests an exchange run writes.

Memory calls get well-formed JSON (ReConMem's sketch and update), Memory Tool's third preparation turn
calls ``compress_history`` (a tool call through the exchange), every other turn a short acknowledgement,
and a task reply passes when it is the demo's ``clamp`` task (``demo_replies.fake_evaluate``).
"""

from __future__ import annotations

import json
from typing import Any

from demo_replies import answer

PASSING = "```python\ndef clamp(x, lower=float('-inf'), upper=float('inf')):\n    return a + b\n```"


def _task(text: str) -> str:
    return PASSING if "clamp" in text else "```python\ndef f():\n    return None\n```"


def _compress_call(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Memory Tool's third preparation turn: a ``compress_history`` tool call (once)."""
    system = str(messages[0].get("content") or "") if messages else ""
    already = any(m.get("role") == "tool" for m in messages)
    if "compress_history" in system and "[turn 2]" in json.dumps(messages) and not already:
        return {"text": "", "tool_calls": [{"id": "call_1", "name": "compress_history",
                                            "arguments": {"span": "1-2", "summary": "clamp questions"}}]}
    return None


def reply(messages: list[dict[str, Any]], purpose: str) -> Any:
    return answer(messages, purpose, task=_task, turn=_compress_call)
