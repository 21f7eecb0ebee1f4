"""Small helpers shared by the baselines: turn rendering, token budgets, JSON-shape checks."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

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


T = TypeVar("T")


def memory_call(call: Callable[[], T], log: list[dict[str, Any]], turn: int | None) -> T | None:
    """Run a memory-management LLM call; a prompt that cannot fit the window is skipped and logged
    (``{"turn", "reason": "context_length"}`` in ``log``) instead of erroring the sample."""
    from reconmem.platform.llm import ContextLengthExceeded

    try:
        return call()
    except ContextLengthExceeded as exc:
        log.append({"turn": turn, "reason": "context_length", "error": str(exc)[:200]})
        return None


def string_list(value: Any) -> list[str]:
    """Non-empty stripped strings of a list (anything else is dropped)."""
    if not isinstance(value, list):
        return []
    return [v.strip() for v in value if isinstance(v, str) and v.strip()]


def supports_function_calling(session: Session) -> bool:
    """True when the backbone takes litellm ``tools=`` (function calling)."""
    spec = getattr(session.llm, "spec", None)
    return bool(getattr(spec, "supports_function_calling", False))
