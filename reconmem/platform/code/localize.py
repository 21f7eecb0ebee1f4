"""Code entity localization L(a) — paper §2.2.1 (Eq. 5–7).

Stage 1: exact lookup of the (normalised) anchor among all repository paths (directories included).
Stage 2: candidates are the non-directory entities whose terminal path component equals the
anchor's terminal component; the highest-ranked one is returned, by

  (a) the longer run of consecutively matching trailing components,
  (b) then the longer run of consecutively matching leading components,
  (c) then the shorter path string,
  (d) finally the lexicographically smallest path (a deterministic tie-break; not in the paper).

Unresolvable anchors give ``None``.

Normalisation of the anchor (before both stages): surrounding whitespace, quotes and backticks are
stripped; ``\\`` becomes ``/``; leading ``./`` and ``/`` and trailing ``/`` are removed; empty
components (``a//b``) are dropped; a trailing call suffix ``()`` / ``(...)`` on the last component
is removed.

Component equality: exact string equality; in addition a *file* component ``mod.py`` matches an
anchor component ``mod`` (its name without the source extension), and a duplicate-name component
``f#2`` (see ``reconmem.platform.code.extract``) has terminal name ``f``. The terminal component of a
candidate always counts as matched (it is how candidates are chosen).

Dotted module paths (``pkg.mod.Class.method``): when the anchor has no ``/`` and its last
``.``-part is not a source-file extension, it is also read as a dotted path. Mapping: for every
split point, longest module prefix first, ``a.b.c.D.m`` -> ``a/b/c.py/D/m`` and
``a/b/c/__init__.py/D/m`` (any supported source extension is tried for the file, ``.py`` first);
the first of these that exists is returned. If none exists, stage 2 ranks with the components
``[a, b, c, D, m]`` (the file-stem rule above lets ``c`` match ``c.py``). An anchor that is itself
an existing path (e.g. a file ``setup.py``) is always resolved by stage 1 first.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from reconmem.platform.code.entities import DIRECTORY, DUPLICATE_MARK, CodeEntity
from reconmem.platform.code.languages import LANGUAGE_EXTENSIONS, SOURCE_EXTENSIONS

_CALL_SUFFIX = re.compile(r"\(.*\)$")
_DOTTED_FILE_EXTENSIONS = (".py",) + tuple(sorted({e for exts in LANGUAGE_EXTENSIONS.values() for e in exts} - {".py"}))


def normalise_anchor(anchor: str) -> str:
    """Canonical ``/``-separated form of an anchor (see the module docstring)."""
    a = str(anchor).strip().strip("`'\"").strip().replace("\\", "/")
    while a.startswith("./") or a.startswith("/"):
        a = a[2:] if a.startswith("./") else a[1:]
    parts = [p for p in a.split("/") if p and p != "."]
    if parts:
        last = _CALL_SUFFIX.sub("", parts[-1]).strip()
        parts[-1] = last
        parts = [p for p in parts if p]
    return "/".join(parts)


def terminal_name(component: str) -> str:
    """A path component without its duplicate-occurrence suffix (``f#2`` -> ``f``)."""
    base, mark, number = component.rpartition(DUPLICATE_MARK)
    return base if mark and number.isdigit() else component


def _file_stem(component: str) -> str | None:
    dot = component.rfind(".")
    if dot > 0 and component[dot:].lower() in SOURCE_EXTENSIONS:
        return component[:dot]
    return None


def components_match(anchor_part: str, path_part: str) -> bool:
    """Equality of one anchor component and one path component (module docstring rules)."""
    if anchor_part == path_part or anchor_part == terminal_name(path_part):
        return True
    return _file_stem(path_part) == anchor_part


def trailing_run(anchor_parts: list[str], path_parts: list[str]) -> int:
    """Number of consecutively matching components counted from the end (terminal included)."""
    run = 1
    n = min(len(anchor_parts), len(path_parts))
    while run < n and components_match(anchor_parts[-1 - run], path_parts[-1 - run]):
        run += 1
    return run


def leading_run(anchor_parts: list[str], path_parts: list[str]) -> int:
    """Number of consecutively matching components counted from the start."""
    run = 0
    n = min(len(anchor_parts), len(path_parts))
    while run < n and components_match(anchor_parts[run], path_parts[run]):
        run += 1
    return run


def rank_key(anchor_parts: list[str], path: str) -> tuple[int, int, int, str]:
    """Sort key (smaller is better) implementing rules (a)-(d)."""
    parts = path.split("/")
    return (-trailing_run(anchor_parts, parts), -leading_run(anchor_parts, parts), len(path), path)


def dotted_variants(anchor: str) -> list[str]:
    """Slash paths a dotted anchor ``pkg.mod.Class.method`` may denote, most specific module first."""
    if "/" in anchor or "." not in anchor:
        return []
    if _file_stem(anchor) is not None:  # "cacheutils.py" is a file name, not a dotted path
        return []
    parts = [p for p in anchor.split(".") if p]
    if len(parts) < 2:
        return []
    out: list[str] = []
    for split in range(len(parts), 0, -1):
        module, rest = parts[:split], parts[split:]
        for ext in _DOTTED_FILE_EXTENSIONS:
            out.append("/".join(["/".join(module) + ext, *rest]))
            if ext == ".py":
                out.append("/".join(["/".join(module), "__init__.py", *rest]))
    return out


class Localizer:
    """Resolves anchors against a fixed set of entities (built once per repository index)."""

    def __init__(self, entities: Mapping[str, CodeEntity]):
        self.entities = entities
        self._by_terminal: dict[str, list[str]] = {}
        for path, e in entities.items():
            if e.kind == DIRECTORY:
                continue
            names = {path.rsplit("/", 1)[-1], e.name, terminal_name(path.rsplit("/", 1)[-1])}
            for n in names:
                self._by_terminal.setdefault(n, []).append(path)

    def candidates(self, terminal: str) -> list[str]:
        """Non-directory entity paths whose terminal component is ``terminal``."""
        return sorted(set(self._by_terminal.get(terminal, ())))

    def localize(self, anchor: str) -> str | None:
        """L(anchor): an entity path, or None when unresolved."""
        a = normalise_anchor(anchor)
        if not a:
            return None
        if a in self.entities:
            return a
        variants = dotted_variants(a)
        for v in variants:
            if v in self.entities:
                return v
        parts = a.split("/") if not variants else [p for p in a.split(".") if p]
        best = self.best(parts, self.candidates(parts[-1]))
        if best is None and variants:  # e.g. "ftfy.badness.py": ranking on the literal form too
            parts = a.split("/")
            best = self.best(parts, self.candidates(parts[-1]))
        return best

    @staticmethod
    def best(anchor_parts: list[str], candidates: Iterable[str]) -> str | None:
        ranked = sorted(candidates, key=lambda p: rank_key(anchor_parts, p))
        return ranked[0] if ranked else None
