"""Prompt templates kept as text files inside a package (one helper for every prompt directory).

Templates use :class:`string.Template` syntax (``$name`` / ``${name}``; ``$$`` is a literal dollar),
so JSON braces in prompts need no escaping. A missing file or placeholder is an error naming the
template file and the placeholder.
"""

from __future__ import annotations

import functools
import string
from importlib import resources


class TemplateDir:
    """The ``*.txt`` templates of one package, e.g. ``TemplateDir("baselines.prompts")``."""

    def __init__(self, package: str) -> None:
        self.package = package

    def path_of(self, filename: str) -> str:
        """A readable location for messages: ``package/dir/filename``."""
        return f"{self.package.replace('.', '/')}/{filename}"

    def text(self, filename: str) -> str:
        """The raw text of ``filename`` (cached per directory and file)."""
        return _read(self.package, filename)

    def render(self, filename: str, /, **values: object) -> str:
        """Fill ``filename`` with ``values``; a missing placeholder raises KeyError naming it and the file."""
        return fill(self.text(filename), self.path_of(filename), **values)


def fill(text: str, where: str, /, **values: object) -> str:
    """Substitute ``values`` into template ``text``; KeyError names ``where`` and the missing placeholder."""
    try:
        return string.Template(text).substitute({k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise KeyError(f"prompt template {where} needs a value for ${exc.args[0]}") from None


@functools.lru_cache(maxsize=None)
def _read(package: str, filename: str) -> str:
    ref = resources.files(package).joinpath(filename)
    if not ref.is_file():
        raise FileNotFoundError(f"prompt template not found: {package.replace('.', '/')}/{filename}")
    return ref.read_text(encoding="utf-8")
