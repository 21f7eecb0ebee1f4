"""Scripted-reply helpers for the ReConMem tests (scripted LLM replies, not a model's)."""

from __future__ import annotations

import json
from typing import Any


class PurposeScript:
    """Scripted LLM replies keyed by purpose (consumed in order); unexpected calls fail loudly."""

    def __init__(self, **replies: list[Any]) -> None:
        self.replies = {purpose: list(items) for purpose, items in replies.items()}

    def __call__(self, messages: list[dict[str, Any]], purpose: str) -> Any:
        queue = self.replies.get(purpose)
        if not queue:
            raise AssertionError(f"unexpected scripted LLM call for purpose {purpose!r}")
        reply = queue.pop(0)
        return reply if isinstance(reply, str) else json.dumps(reply)

    def add(self, purpose: str, *items: Any) -> "PurposeScript":
        self.replies.setdefault(purpose, []).extend(items)
        return self


def sketch(*memories: tuple[str, list[str]]) -> dict[str, Any]:
    """A scripted memory_sketching reply."""
    return {"memories": [{"text": text, "anchors": anchors} for text, anchors in memories]}


def decision(action: str, target: str | None = None, text: str | None = None, relations: list[str] | None = None) -> dict:
    """A scripted memory_update reply."""
    return {"action": action, "target": target, "text": text, "relations": relations or []}
