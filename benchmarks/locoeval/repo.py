"""Repository snapshots for LoCoEval samples, with the sample's target functions blanked.

Why blank: the repository index every method retrieves from is built over the snapshot, and the
snapshot contains the reference implementation of every target function. Left as is, repository
retrieval (ReConMem's structural search, the baselines' unified top-k adaptation) would hand the
reference solution to the model and Pass@1 would measure retrieval, not context management. So the
runner indexes a COPY of the snapshot in which each target's body (after its docstring) is
replaced by ``raise NotImplementedError`` -- the same blanking DevEval's oracle uses. Signatures
and docstrings stay, as they would in a real repository where the function is still to be
written, unless ``strip_docstrings`` is set (a sample's ``target_docstrings: remove``): then the
target's docstring goes too and the requirement reaches a method only through the conversation.
Tests are judged on the pristine snapshot by the Pass@1 layer, not on this copy.

Blanked copies are cached under ``<cache>/locoeval/blanked/<key>`` (key = snapshot path + target
namespaces), built atomically, and never modified afterwards.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reconmem.platform import pyast

log = logging.getLogger(__name__)

BLANK_STATEMENT = "raise NotImplementedError"
BLANKED_RECORD = "blanked.json"  # beside the blanked tree, never inside it
_BUILD_LOCK = threading.Lock()
_IGNORE = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".tox", ".mypy_cache", ".pytest_cache")


class BlankingError(ValueError):
    """A target function could not be located for blanking; the message names file and namespace."""


def snapshot_root(repo_spec: Mapping[str, Any]) -> Path:
    """The pristine repository tree of a sample (never modified)."""
    from benchmarks.deveval.providers import get_snapshot

    return Path(get_snapshot(dict(repo_spec)))


def files_of_tests(root: Path, test_ids: Iterable[str], project_path: str = "") -> list[str]:
    """Root-relative paths of the files holding these pytest node ids (files not in the tree left out)."""
    out = []
    for t in test_ids:
        try:
            out.append(resolve_file(root, t.split("::", 1)[0], project_path).relative_to(root).as_posix())
        except FileNotFoundError:
            continue
    return sorted(set(out))


def resolve_file(root: Path, completion_path: str, project_path: str = "") -> Path:
    """The target file in the tree: ``completion_path`` relative to the repository root; a
    DevEval-style path (``<Topic>/<Project>/...``, relative to Source_Code) is accepted too."""
    rel = completion_path.lstrip("/")
    candidates = [rel]
    if project_path and rel.startswith(project_path.rstrip("/") + "/"):
        candidates.append(rel[len(project_path.rstrip("/")) + 1:])
    parts = Path(rel).parts
    candidates += [str(Path(*parts[i:])) for i in range(1, len(parts))]
    for cand in candidates:
        p = root / cand
        if p.is_file():
            return p
    raise FileNotFoundError(f"completion_path {completion_path!r} not found under {root}")


def _qualname(namespace: str, file_rel: str) -> list[str]:
    """``boltons.mathutils.clamp`` + ``boltons/mathutils.py`` -> ``["clamp"]`` (Class.method -> 2 parts)."""
    mod_parts = list(Path(file_rel).with_suffix("").parts)
    if mod_parts and mod_parts[-1] == "__init__":
        mod_parts = mod_parts[:-1]
    ns = namespace.split(".")
    for start in range(len(mod_parts)):
        module = mod_parts[start:]
        if ns[: len(module)] == module and len(ns) > len(module):
            return ns[len(module):]
    return ns[-2:] if len(ns) > 2 else ns[-1:]


def find_function(tree: ast.Module, qual: list[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The (possibly nested in classes) function definition named by ``qual``; last one wins."""
    scope: list[ast.stmt] = list(tree.body)
    node: ast.AST | None = None
    for i, name in enumerate(qual):
        want = (ast.FunctionDef, ast.AsyncFunctionDef) if i == len(qual) - 1 else (ast.ClassDef,)
        found = [n for n in _walk_defs(scope) if isinstance(n, want) and n.name == name]
        if not found:
            return None
        node = found[-1]
        scope = list(node.body)  # type: ignore[attr-defined]
    return node  # type: ignore[return-value]


def _walk_defs(stmts: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Definitions at this level, including inside if/try blocks (e.g. ``if PY3: def f``)."""
    for s in stmts:
        yield s
        for attr in ("body", "orelse", "finalbody"):
            if isinstance(s, (ast.If, ast.Try)) and hasattr(s, attr):
                yield from _walk_defs(getattr(s, attr))
        if isinstance(s, ast.Try):
            for h in s.handlers:
                yield from _walk_defs(h.body)


def body_span(func: ast.FunctionDef | ast.AsyncFunctionDef, *, with_docstring: bool = False,
              lines: Sequence[str] = ()) -> tuple[int, int, int]:
    """(first body line after the docstring, last line, indent column) -- 1-based inclusive.

    With ``with_docstring`` the span starts at the docstring (or the first statement), extended up
    over the comment lines between it and the signature (``lines``: the file's lines).
    """
    body = func.body
    first = body[0]
    has_doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
        and isinstance(first.value.value, str)
    indent = first.col_offset
    if with_docstring:
        start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))])
        while start - 1 > func.lineno and start - 2 < len(lines) and lines[start - 2].lstrip().startswith("#"):
            start -= 1
    elif has_doc and len(body) > 1:
        start = body[1].lineno
        start = min([start, *(d.lineno for d in getattr(body[1], "decorator_list", []))])
    elif has_doc:
        start = first.end_lineno + 1  # type: ignore[operator]
    else:
        start = first.lineno
    return start, func.end_lineno or start, indent  # type: ignore[return-value]


def blank_source(source: str, qualnames: list[list[str]], *, filename: str = "<file>",
                 strip_docstrings: bool = False) -> str:
    """``source`` with each function's body (and, with ``strip_docstrings``, its docstring) replaced
    by ``raise NotImplementedError``."""
    tree = pyast.parse(source, filename=filename)
    lines = source.splitlines(keepends=True)
    spans = []
    for qual in qualnames:
        func = find_function(tree, qual)
        if func is None:
            raise BlankingError(f"{filename}: no function {'.'.join(qual)} to blank")
        spans.append(body_span(func, with_docstring=strip_docstrings, lines=lines))
    for start, end, indent in sorted(spans, reverse=True):
        if start > end:  # docstring-only body: add the raise after it
            lines[end:end] = [" " * indent + BLANK_STATEMENT + "\n"]
        else:
            lines[start - 1:end] = [" " * indent + BLANK_STATEMENT + "\n"]
    out = "".join(lines)
    pyast.parse(out, filename=filename)  # the blanked file must still be valid Python
    return out


def blanked_copy(root: Path, targets: list[tuple[str, str]], *, cache_dir: Path, project_path: str = "",
                 hidden_files: Sequence[str] = (), strip_docstrings: bool = False) -> Path:
    """A cached copy of ``root`` with ``targets`` ``[(namespace, completion_path)]`` blanked.

    ``hidden_files`` (paths like ``completion_path``) are removed from the copy, e.g. the test files
    that judge the targets, so repository retrieval cannot show them to a method; one that is not in
    ``root`` is a :class:`BlankingError` (the sample errors rather than run with its tests visible).
    ``strip_docstrings`` removes the targets' docstrings as well.

    The returned tree holds nothing but the repository: what was blanked (and where the pristine
    snapshot is) is recorded in ``blanked.json`` beside it, outside what a method can read.
    """
    with _BUILD_LOCK:
        return _blanked_copy(root, targets, cache_dir=cache_dir, project_path=project_path,
                             hidden_files=sorted(set(hidden_files)), strip_docstrings=strip_docstrings)


def _blanked_copy(root: Path, targets: list[tuple[str, str]], *, cache_dir: Path, project_path: str,
                  hidden_files: list[str], strip_docstrings: bool) -> Path:
    key_fields: dict[str, Any] = {"root": str(root.resolve()), "targets": sorted(targets), "v": 2}
    if hidden_files:
        key_fields["hidden"] = hidden_files
    if strip_docstrings:
        key_fields["docstrings"] = "removed"
    key_src = json.dumps(key_fields, sort_keys=True)
    key = hashlib.sha256(key_src.encode()).hexdigest()[:16]
    dest = cache_dir / "locoeval" / "blanked" / f"{root.name}-{key}"
    tree = dest / root.name  # the indexed root keeps the snapshot's own name
    if (dest / BLANKED_RECORD).exists():
        return tree
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=dest.name + ".tmp"))
    try:
        work = tmp / root.name
        shutil.copytree(root, work, ignore=_IGNORE, symlinks=True)
        by_file: dict[Path, list[tuple[str, list[str]]]] = {}
        for namespace, completion_path in targets:
            f = resolve_file(work, completion_path, project_path)
            rel = f.relative_to(work).as_posix()
            by_file.setdefault(f, []).append((namespace, _qualname(namespace, rel)))
        for rel_hidden in hidden_files:
            try:
                resolve_file(work, rel_hidden, project_path).unlink()
            except FileNotFoundError as exc:
                raise BlankingError(f"test file to hide {rel_hidden!r} is not in {root}: the sample's judging "
                                    "tests cannot be removed from what the method sees") from exc
        for f, items in by_file.items():
            try:
                new = blank_source(f.read_text(encoding="utf-8"), [q for _, q in items], filename=str(f),
                                   strip_docstrings=strip_docstrings)
            except BlankingError as exc:
                raise BlankingError(f"{exc} (namespaces {[n for n, _ in items]})") from exc
            f.write_text(new, encoding="utf-8")
        (tmp / BLANKED_RECORD).write_text(json.dumps({"root": str(root), "targets": targets,
                                                     "hidden_files": hidden_files,
                                                     "strip_docstrings": strip_docstrings}, indent=1))
        try:
            os.replace(tmp, dest)
        except OSError:
            if not (dest / BLANKED_RECORD).exists():  # a concurrent builder finished first: keep its copy
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tree
