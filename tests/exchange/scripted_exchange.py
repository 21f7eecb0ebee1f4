"""SCRIPTED backbone replies for the exchange tests (not a model's result): the same function answers a
direct run (``backbone.model=scripted/scripted_exchange:reply``) and the requests an exchange run writes.

Memory calls get well-formed JSON (ReConMem's sketch and update), Memory Tool's third preparation turn
calls ``compress_history`` (a tool call through the exchange), every other turn a short acknowledgement,
and a task reply passes when it is the demo's ``clamp`` task (``fake_evaluate``).
"""

from __future__ import annotations

import json
from typing import Any

PASSING = "```python\ndef clamp(x, lower=float('-inf'), upper=float('inf')):\n    return a + b\n```"


def _last_user(messages: list[dict[str, Any]]) -> str:
    return next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")


def reply(messages: list[dict[str, Any]], purpose: str) -> Any:
    text = _last_user(messages)
    snippet = " ".join(text.split())[:160]
    if purpose == "memory_sketching":
        return json.dumps({"memories": [{"text": snippet or "nothing", "anchors": []}]})
    if purpose == "memory_update":
        return json.dumps({"action": "INSERT", "target": None, "text": None, "keep_new": True, "relations": []})
    if purpose == "task_generation":
        return PASSING if "clamp" in text else "```python\ndef f():\n    return None\n```"
    system = str(messages[0].get("content") or "") if messages else ""
    already = any(m.get("role") == "tool" for m in messages)
    if "compress_history" in system and "[turn 2]" in json.dumps(messages) and not already:
        return {"text": "", "tool_calls": [{"id": "call_1", "name": "compress_history",
                                            "arguments": {"span": "1-2", "summary": "clamp questions"}}]}
    return "Noted: " + snippet[:40]


def fake_evaluate(namespace: str, reply_text: str, **_: Any) -> dict[str, Any]:
    passed = "return a + b" in reply_text
    return {"outcome": "pass" if passed else "fail", "passed": passed, "seconds": 0.0,
            "log": "scripted evaluator: " + ("1 passed" if passed else "1 failed"), "completion": reply_text}
