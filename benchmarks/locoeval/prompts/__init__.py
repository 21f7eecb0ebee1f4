"""Prompt templates of the LoCoEval benchmark (``str.format`` placeholders; ``{{``/``}}`` are literal braces)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=None)
def load(name: str) -> str:
    """The text of template ``<name>.txt`` in this package."""
    ref = resources.files(__name__).joinpath(f"{name}.txt")
    if not ref.is_file():
        raise FileNotFoundError(f"no LoCoEval prompt template {name!r} ({ref})")
    return ref.read_text(encoding="utf-8").rstrip("\n")


def render(template: str, /, **values: object) -> str:
    """Fill template ``template``; a missing placeholder raises KeyError naming it."""
    try:
        return load(template).format(**values)
    except KeyError as exc:
        raise KeyError(f"prompt template {template!r} needs value {exc.args[0]!r}") from exc
