"""Prompt templates of the baselines, one text file each (``string.Template`` syntax: ``$name``)."""

from __future__ import annotations

from reconmem.platform.templates import TemplateDir

_PROMPTS = TemplateDir(__name__)


def render(name: str, **values: object) -> str:
    """Fill ``baselines/prompts/<name>.txt`` (surrounding whitespace stripped); KeyError names a missing placeholder."""
    return _PROMPTS.render(f"{name}.txt", **values).strip()
