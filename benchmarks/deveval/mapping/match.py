"""Which sdist version holds DevEval's functions at DevEval's lines.

A task matches a tree when its file exists, its function is found by qualified name either at
DevEval's exact lines (``position``) or as the only same-named definition with the same span
(``name``, every line shifted by one offset), the body starts after the signature or docstring
and no later than the first real statement, and every test file the task names exists. Within
a project the version with the most matches wins; ties go to more ``position`` matches, then to
the upload nearest the snapshots' collection date.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

from benchmarks.deveval.providers import FINGERPRINT_NAME, definitions_for
from benchmarks.deveval.tasks import DevEvalTask
from reconmem.platform import pyast


@dataclass(frozen=True)
class TaskMatch:
    """Where one task sits in one tree, or why it does not."""

    namespace: str
    located_by: str | None              # "position" | "name" | None
    signature_line: int | None
    body_start: int | None
    body_end: int | None
    tests_present: bool
    unmatched_reason: str | None = None

    @property
    def matched(self) -> bool:
        return self.located_by is not None and self.tests_present

    def to_dict(self) -> dict:
        return asdict(self)


def project_root_in(unpacked: Path, tasks: list[DevEvalTask]) -> tuple[str, Path]:
    """``(path_prefix_in_sdist, root)``: the directory under ``unpacked`` holding most task files."""
    tops = [p for p in unpacked.iterdir() if p.name != FINGERPRINT_NAME]
    base = tops[0] if len(tops) == 1 and tops[0].is_dir() else unpacked
    candidates = [base] + [d for d in sorted(base.iterdir()) if d.is_dir()]
    files = {t.file_in_project for t in tasks}
    best = max(candidates, key=lambda d: (sum((d / f).is_file() for f in files), d == base))
    prefix = best.relative_to(unpacked).as_posix()
    return ("" if prefix == "." else prefix + "/"), best


def pythonpath_for(tasks: list[DevEvalTask]) -> str:
    """The tree directory a task's module is imported from (``.`` or e.g. ``src``), by majority."""
    votes: dict[str, int] = {}
    for t in tasks:
        parts = Path(t.file_in_project).with_suffix("").parts
        mod = t.namespace.split(".")
        for k in range(len(parts), 0, -1):        # the longest path tail that is a prefix of the namespace
            tail = list(parts[len(parts) - k:])
            if tail[-1] == "__init__":
                tail = tail[:-1]
            if tail and mod[:len(tail)] == tail:
                root = "/".join(parts[:len(parts) - k]) or "."
                votes[root] = votes.get(root, 0) + 1
                break
    return max(votes, key=votes.get) if votes else "."


def _first_statement(node) -> tuple[int, int]:
    """``(header_end, first_statement_line)``: the last line of the signature or docstring, and the first real statement."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[0].end_lineno, (body[1].lineno if len(body) > 1 else body[0].end_lineno + 1)
    return body[0].lineno - 1, body[0].lineno


def _body_fits(node, body_start: int) -> bool:
    header_end, first = _first_statement(node)
    return node.lineno < body_start and header_end < body_start <= first


def match_task(root: Path, task: DevEvalTask, trees: dict | None = None) -> TaskMatch:
    """Match one task against the project tree ``root`` (``trees`` memoises parsed files)."""
    tests_present = all((root / tid.split("::")[0]).is_file() for tid in task.tests)
    none = dict(namespace=task.namespace, located_by=None, signature_line=None, body_start=None, body_end=None,
                tests_present=tests_present)
    path = root / task.file_in_project
    if not path.is_file():
        return TaskMatch(**none, unmatched_reason="file_missing")
    trees = {} if trees is None else trees
    if path not in trees:
        try:
            trees[path] = pyast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            trees[path] = None
    tree = trees[path]
    if tree is None:
        return TaskMatch(**none, unmatched_reason="syntax_error")
    nodes = definitions_for(tree, task.namespace)
    if not nodes:
        return TaskMatch(**none, unmatched_reason="not_found")
    sig0, (b0, b1) = task.signature_position[0], task.body_position
    found = None
    for node in nodes:
        if node.lineno == sig0 and node.end_lineno == b1:
            found = ("position", 0, node)
            break
    if found is None:
        same = [n for n in nodes if n.end_lineno - n.lineno == b1 - sig0]
        if len(same) != 1:
            return TaskMatch(**none, unmatched_reason="length_mismatch" if not same else "ambiguous")
        found = ("name", same[0].lineno - sig0, same[0])
    how, off, node = found
    if not _body_fits(node, b0 + off):
        return TaskMatch(**none, unmatched_reason="body_start_mismatch")
    reason = None if tests_present else "tests_missing_in_sdist"
    return TaskMatch(task.namespace, how, sig0 + off, b0 + off, b1 + off, tests_present, reason)


def match_version(root: Path, tasks: list[DevEvalTask]) -> tuple[dict, list[TaskMatch]]:
    """Counts for ``versions_compared`` and the per-task matches of one tree."""
    trees: dict = {}
    matches = [match_task(root, t, trees) for t in tasks]
    counts = {"by_position": sum(m.located_by == "position" for m in matches),
              "by_name": sum(m.located_by == "name" for m in matches),
              "tests_exist": sum(m.tests_present for m in matches),
              "full_match": sum(m.matched for m in matches)}
    return counts, matches


def days_between(upload_time: str, day: str) -> int:
    """Whole days between an ISO upload time and an ISO date (``YYYY-MM-DD``), either direction."""
    return abs((date.fromisoformat(upload_time[:10]) - date.fromisoformat(day[:10])).days)


def best_version(compared: dict[str, dict], collected: str | None = None) -> str | None:
    """The key of ``compared`` with the most full matches, then the most by-position matches, then
    (when ``collected`` is given and entries carry ``upload_time``) the upload nearest ``collected``;
    None if nothing matches."""
    if not compared:
        return None

    def rank(k: str):
        c = compared[k]
        near = -days_between(c["upload_time"], collected) if collected and c.get("upload_time") else 0
        return c["full_match"], c["by_position"], near, c.get("upload_time") or ""

    key = max(compared, key=rank)
    return key if compared[key]["full_match"] > 0 else None
