"""Prompt templates of the CAB agents (string.Template files, ``${name}`` placeholders)."""

from __future__ import annotations

from reconmem.platform.templates import TemplateDir

_PROMPTS = TemplateDir(__name__)
render_prompt = _PROMPTS.render  # render_prompt("<name>.txt", **values); a missing placeholder is a KeyError naming it


def numbered(items: list[str]) -> str:
    """``1. a`` / ``2. b`` lines (how the satisfaction conditions are shown to the user and the judge)."""
    return "\n".join(f"{i}. {c}" for i, c in enumerate(items, start=1))
