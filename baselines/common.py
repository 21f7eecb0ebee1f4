"""Small helpers shared by the baselines: turn rendering, token budgets, JSON-shape checks."""

from __future__ import annotations

from typing import Any

from reconmem.platform.context import ContextItem, Session, Turn


def turn_messages(turn: Turn) -> list[dict[str, str]]:
    """A completed turn as two chat messages (user, assistant)."""
    return [{"role": "user", "content": turn.user}, {"role": "assistant", "content": turn.assistant}]


def turn_item(turn: Turn, *, source: str, score: float | None = None) -> ContextItem:
    """A whole history turn as a context item (id = turn index)."""
    meta: dict[str, Any] = {"turn": turn.index}
    if score is not None:
        meta["score"] = round(float(score), 6)
    return ContextItem(kind="history_turn", id=str(turn.index), text=f"User: {turn.user}\nAssistant: {turn.assistant}",
                       source=source, meta=meta)


def transcript(turn: Turn) -> str:
    """A turn as plain text for memory-management prompts."""
    return f"User: {turn.user}\nAssistant: {turn.assistant}"


def answer_reserve(session: Session, override: int | None = None) -> int:
    """Tokens kept free for the answer: ``override`` or the backbone's ``max_output_tokens``."""
    if override is not None:
        return int(override)
    spec = getattr(session.llm, "spec", None)
    return int(getattr(spec, "max_output_tokens", 0) or 0)


def prompt_budget(session: Session, reserve: int | None = None) -> int:
    """Largest prompt (tokens) that still leaves room for the answer in the context window."""
    return int(session.context_window) - answer_reserve(session, reserve)


def string_list(value: Any) -> list[str]:
    """Non-empty stripped strings of a list (anything else is dropped)."""
    if not isinstance(value, list):
        return []
    return [v.strip() for v in value if isinstance(v, str) and v.strip()]


def supports_function_calling(session: Session) -> bool:
    """True when the backbone takes litellm ``tools=`` (function calling)."""
    spec = getattr(session.llm, "spec", None)
    return bool(getattr(spec, "supports_function_calling", False))
