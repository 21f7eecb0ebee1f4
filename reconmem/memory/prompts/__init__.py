"""Versioned prompt templates of ReConMem (``<name>.v<version>.txt``, ``$field`` placeholders).

Templates use :class:`string.Template` syntax so JSON braces in them need no escaping. A missing
field is an error naming the template and the field.
"""

from __future__ import annotations

from reconmem.platform.templates import TemplateDir

_PROMPTS = TemplateDir(__name__)

# The versions ReConMem uses; recorded in the method's state() so runs say which prompts they used.
PROMPT_VERSIONS = {
    "memory_sketching": 1,
    "memory_update": 1,
    "semantic_context": 1,
    "structural_context": 1,
}


def _filename(name: str, version: int | None) -> str:
    version = PROMPT_VERSIONS.get(name) if version is None else version
    if version is None:
        raise KeyError(f"unknown prompt template {name!r}; known: {sorted(PROMPT_VERSIONS)}")
    return f"{name}.v{version}.txt"


def load_prompt(name: str, version: int | None = None) -> str:
    """The raw text of template ``name`` at ``version`` (default: the version in PROMPT_VERSIONS)."""
    return _PROMPTS.text(_filename(name, version))


def render_prompt(name: str, version: int | None = None, **fields: object) -> str:
    """Fill template ``name`` with ``fields``; raises KeyError naming a missing field."""
    return _PROMPTS.render(_filename(name, version), **fields)
