"""Prompt templates kept as text files inside a package: the one helper every prompt directory uses.

Templates use :class:`string.Template` syntax (``$name`` / ``${name}``; ``$$`` is a literal dollar),
so JSON braces in prompts need no escaping. A missing file or placeholder is an error naming the
template file and the placeholder.

A prompt package binds its functions to one :class:`TemplateDir` instead of wrapping it, e.g.::

    _PROMPTS = TemplateDir(__name__, strip="rendered")
    render = _PROMPTS.render          # render("mem0_recall", memories=...)

Names resolve to files as ``<name>.txt`` (a name already ending in ``.txt`` is used as is) or, with
``versions``, ``<name>.v<version>.txt`` (the version from ``versions`` unless one is passed).
``strip`` says what whitespace a directory's prompts drop: ``"none"``, ``"template"`` (trailing
newlines of the template file, before filling) or ``"rendered"`` (surrounding whitespace of the
filled text).
"""

from __future__ import annotations

import functools
import string
from collections.abc import Mapping
from importlib import resources

STRIP_MODES = ("none", "template", "rendered")


class TemplateDir:
    """The ``*.txt`` templates of one package, e.g. ``TemplateDir("baselines.prompts")``."""

    def __init__(self, package: str, *, strip: str = "none", versions: Mapping[str, int] | None = None) -> None:
        if strip not in STRIP_MODES:
            raise ValueError(f"TemplateDir({package!r}): strip must be one of {STRIP_MODES}, got {strip!r}")
        self.package = package
        self.strip = strip
        self.versions = versions

    def filename(self, name: str, version: int | None = None) -> str:
        """The file holding template ``name`` (see the module docstring)."""
        if self.versions is None:
            if version is not None:
                raise KeyError(f"prompt templates of {self.package} are not versioned (asked for {name} v{version})")
            return name if name.endswith(".txt") else f"{name}.txt"
        version = self.versions.get(name) if version is None else version
        if version is None:
            raise KeyError(f"unknown prompt template {name!r}; known: {sorted(self.versions)}")
        return f"{name}.v{version}.txt"

    def path_of(self, filename: str) -> str:
        """A readable location for messages: ``package/dir/filename``."""
        return f"{self.package.replace('.', '/')}/{filename}"

    def text(self, name: str, version: int | None = None, /) -> str:
        """The template text of ``name`` (cached per directory and file; ``strip="template"`` applied)."""
        text = _read(self.package, self.filename(name, version))
        return text.rstrip("\n") if self.strip == "template" else text

    def render(self, name: str, version: int | None = None, /, **values: object) -> str:
        """Fill template ``name`` with ``values``; a missing placeholder raises KeyError naming it and the file."""
        rendered = fill(self.text(name, version), self.path_of(self.filename(name, version)), **values)
        return rendered.strip() if self.strip == "rendered" else rendered


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
