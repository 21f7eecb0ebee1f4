"""Prompt templates of the baselines, one text file each (``string.Template`` syntax: ``$name``)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from string import Template


@lru_cache(maxsize=None)
def _template(name: str) -> Template:
    try:
        text = resources.files(__name__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"baselines/prompts/{name}.txt: no such prompt template") from exc
    return Template(text)


def render(name: str, **values: object) -> str:
    """Fill ``baselines/prompts/<name>.txt``; a missing placeholder raises KeyError naming it."""
    try:
        return _template(name).substitute({k: str(v) for k, v in values.items()}).strip()
    except KeyError as exc:
        raise KeyError(f"baselines/prompts/{name}.txt: no value for placeholder ${exc.args[0]}") from exc
