"""Scripted backbone replies (not a model's) that keep every method's memory path busy, for cheap
record-level measurements (scripts.judging_hits on the demo samples) and the tiny-window test.

``backbone.model=scripted/scripted_methods:reply`` (with tests/trust on PYTHONPATH).
"""

from __future__ import annotations

import json
import re
from typing import Any

_PATHISH = re.compile(r"[A-Za-z_][\w/]*\.py|\b[a-z_]+\([^)]*\)")


def _last_user(messages: list[dict[str, Any]]) -> str:
    return next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")


def _anchors(text: str) -> list[str]:
    found = []
    for m in _PATHISH.findall(text):
        name = m.split("(")[0]
        if name not in found:
            found.append(name)
    return found[:3]


def reply(messages: list[dict[str, Any]], purpose: str) -> str:
    text = _last_user(messages)
    snippet = " ".join(text.split())[:160]
    if purpose == "memory_sketching":
        return json.dumps({"memories": [{"text": snippet or "nothing", "anchors": _anchors(text)}]})
    if purpose == "memory_update":
        if "Existing memories:" in text:  # Mem0 / Mem0^R decision
            return json.dumps({"memory": [{"id": "new", "text": snippet, "event": "ADD", "paths": _anchors(text)}]})
        return json.dumps({"action": "INSERT", "target": None, "text": None, "keep_new": True, "relations": []})
    if purpose == "memory_extraction":
        return json.dumps({"facts": [{"text": snippet, "paths": _anchors(text)}]})
    if purpose == "persona":
        return json.dumps({"user_traits": ["works on boltons"], "agent_traits": []})
    if purpose == "memory_summarisation":
        return "Summary: " + snippet
    system = str(messages[0].get("content") or "") if messages else ""
    if "send_message" in system:  # MemGPT's JSON function-call protocol
        body = "```python\ndef f(*args, **kwargs):\n    return None\n```" if purpose == "task_generation" else "Noted."
        return json.dumps({"inner_thoughts": "answer", "function": "send_message", "arguments": {"message": body}})
    if purpose == "task_generation":
        return "```python\ndef f(*args, **kwargs):\n    return None\n```"
    return "Noted."
