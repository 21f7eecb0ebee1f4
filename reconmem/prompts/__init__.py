"""Versioned prompt templates of ReConMem (``<name>.v<version>.txt``, ``$field`` placeholders).

Templates use :class:`string.Template` syntax so JSON braces in them need no escaping. A missing
field is an error naming the template and the field.
"""

from __future__ import annotations

import functools
import string
from pathlib import Path

PROMPT_DIR = Path(__file__).resolve().parent

# The versions ReConMem uses; recorded in the method's state() so runs say which prompts they used.
PROMPT_VERSIONS = {
    "memory_sketching": 1,
    "memory_update": 1,
    "semantic_context": 1,
    "structural_context": 1,
}


@functools.lru_cache(maxsize=None)
def load_prompt(name: str, version: int | None = None) -> str:
    """The raw text of template ``name`` at ``version`` (default: the version in PROMPT_VERSIONS)."""
    version = PROMPT_VERSIONS.get(name) if version is None else version
    if version is None:
        raise KeyError(f"unknown prompt template {name!r}; known: {sorted(PROMPT_VERSIONS)}")
    path = PROMPT_DIR / f"{name}.v{version}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"prompt template not found: {path}")
    return path.read_text(encoding="utf-8")


def render_prompt(name: str, version: int | None = None, **fields: object) -> str:
    """Fill template ``name`` with ``fields``; raises KeyError naming a missing field."""
    template = string.Template(load_prompt(name, version))
    try:
        return template.substitute({k: str(v) for k, v in fields.items()})
    except KeyError as exc:
        raise KeyError(f"prompt template {name}.v{version or PROMPT_VERSIONS[name]} needs field {exc}") from None
