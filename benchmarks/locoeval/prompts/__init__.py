"""Prompt templates of the LoCoEval benchmark (``string.Template`` syntax: ``$name``)."""

from __future__ import annotations

from reconmem.platform.templates import TemplateDir, fill

_PROMPTS = TemplateDir(__name__)


def load(name: str) -> str:
    """The text of template ``<name>.txt`` in this package (trailing newlines removed)."""
    return _PROMPTS.text(f"{name}.txt").rstrip("\n")


def render(template: str, /, **values: object) -> str:
    """Fill template ``template``; a missing placeholder raises KeyError naming it."""
    return fill(load(template), _PROMPTS.path_of(f"{template}.txt"), **values)
