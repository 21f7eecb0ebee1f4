"""SCRIPTED replies to the demo's calls and a scripted evaluator (not a model's result), shared by the
scripted backbones of the export tests (``scripted_demo``) and the exchange tests (``scripted_exchange``).

ReConMem's memory calls get well-formed JSON (a sketch of the last user message, an INSERT update),
other turns a short acknowledgement; :func:`fake_evaluate` passes a reply containing ``return a + b``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def last_user(messages: list[dict[str, Any]]) -> str:
    """The content of the last user message ('' when there is none)."""
    return next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")


def snippet(text: str) -> str:
    """``text`` on one line, at most 160 characters."""
    return " ".join(text.split())[:160]


def memory_reply(text: str, purpose: str) -> str | None:
    """ReConMem's sketch / update reply to a call whose last user message is ``text`` (None: another purpose)."""
    if purpose == "memory_sketching":
        return json.dumps({"memories": [{"text": snippet(text) or "nothing", "anchors": []}]})
    if purpose == "memory_update":
        return json.dumps({"action": "INSERT", "target": None, "text": None, "keep_new": True, "relations": []})
    return None


def acknowledgement(text: str) -> str:
    """The reply to a conversation turn."""
    return "Noted: " + snippet(text)[:40]


def answer(messages: list[dict[str, Any]], purpose: str, *, task: Callable[[str], str],
           turn: Callable[[list[dict[str, Any]]], Any] | None = None) -> Any:
    """The scripted reply: memory calls as :func:`memory_reply`, a task call ``task(last user message)``,
    a conversation turn ``turn(messages)`` when that gives one, else :func:`acknowledgement`."""
    text = last_user(messages)
    memory = memory_reply(text, purpose)
    if memory is not None:
        return memory
    if purpose == "task_generation":
        return task(text)
    special = turn(messages) if turn is not None else None
    return special if special is not None else acknowledgement(text)


def fake_evaluate(namespace: str, reply_text: str, **_: Any) -> dict[str, Any]:
    """A task passes when the reply contains ``return a + b``."""
    passed = "return a + b" in reply_text
    return {"outcome": "pass" if passed else "fail", "passed": passed, "seconds": 0.0,
            "log": "scripted evaluator: " + ("1 passed" if passed else "AssertionError: 1 failed"),
            "completion": reply_text}
