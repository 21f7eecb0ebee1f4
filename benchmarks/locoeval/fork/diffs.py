"""Unified diffs of the fork's test files, applied to the snapshot's files (``ship``, the screening's
revalidation): :func:`apply_diff` / :func:`apply_diffs`; every inconsistency is a one-line
:class:`ForkDataError` naming where."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


def snapshot_text(root: Path, rel: str) -> str:
    """A snapshot file as the fork's tests are derived from and rebuilt on (universal newlines: a test
    file's diff and sha256 in ``forks.jsonl`` are of this text)."""
    return (root / rel).read_text(encoding="utf-8")


class ForkDataError(ValueError):
    """The fork data is inconsistent with itself or with the snapshot; the message names where."""


@dataclass(frozen=True)
class Block:
    """One change of a diff against the public text: lines ``[start, end)`` (0-based) become ``new``."""

    start: int
    end: int
    new: tuple[str, ...]


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def diff_blocks(public: str, diff: str, *, where: str = "diff") -> list[Block]:
    """The change blocks of a unified diff (as ``difflib.unified_diff`` writes them) against
    ``public``; every context and removed line must be the public text's line at its place."""
    lines = public.splitlines(keepends=True)
    dl = diff.splitlines(keepends=True)
    i, blocks = 0, []
    while i < len(dl) and not dl[i].startswith("@@"):
        if not dl[i].startswith(("---", "+++")):
            raise ForkDataError(f"{where}: line {i + 1}: expected a file header or a hunk, got {dl[i][:40]!r}")
        i += 1
    while i < len(dl):
        m = _HUNK.match(dl[i])
        if not m:
            raise ForkDataError(f"{where}: line {i + 1}: expected a hunk header, got {dl[i][:40]!r}")
        old_n = int(m.group(2)) if m.group(2) is not None else 1
        new_n = int(m.group(4)) if m.group(4) is not None else 1
        pos = int(m.group(1)) - (1 if old_n else 0)
        i += 1
        seen_old = seen_new = 0
        start, new = None, []
        while seen_old < old_n or seen_new < new_n:
            if i >= len(dl):
                raise ForkDataError(f"{where}: the diff ends inside a hunk")
            tag, text = dl[i][:1], dl[i][1:]
            if tag in (" ", "-"):
                if pos >= len(lines) or lines[pos] != text:
                    raise ForkDataError(f"{where}: line {i + 1}: does not match line {pos + 1} of the file")
            if tag == " ":
                if start is not None:
                    blocks.append(Block(start, pos, tuple(new)))
                    start, new = None, []
                pos += 1
                seen_old += 1
                seen_new += 1
            elif tag == "-":
                start = pos if start is None else start
                pos += 1
                seen_old += 1
            elif tag == "+":
                start = pos if start is None else start
                new.append(text)
                seen_new += 1
            else:
                raise ForkDataError(f"{where}: line {i + 1}: unexpected {dl[i][:40]!r} inside a hunk")
            i += 1
        if start is not None:
            blocks.append(Block(start, pos, tuple(new)))
    return blocks


def apply_diffs(public: str, diffs: Iterable[str], *, where: str = "diff") -> str:
    """``public`` with the change blocks of every diff (each made against ``public``) applied;
    the same block in two diffs counts once, overlapping different blocks are an error."""
    blocks: list[Block] = []
    for d in diffs:
        for b in diff_blocks(public, d, where=where):
            if b not in blocks:
                blocks.append(b)
    blocks.sort(key=lambda b: (b.start, b.end))
    for a, b in zip(blocks, blocks[1:]):
        if b.start < a.end or (b.start == a.end == a.start):
            raise ForkDataError(f"{where}: two diffs change the same lines ({a.start + 1}-{a.end}, {b.start + 1}-{b.end})")
    lines = public.splitlines(keepends=True)
    for b in reversed(blocks):
        lines[b.start:b.end] = list(b.new)
    return "".join(lines)


def apply_diff(public: str, diff: str, *, where: str = "diff") -> str:
    """``public`` with one unified diff applied."""
    return apply_diffs(public, [diff], where=where)


