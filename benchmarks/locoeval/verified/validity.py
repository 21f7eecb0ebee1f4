"""What a method could guess: the static validity measures of a task, shared by the generator
(as filters) and the validator (as figures).

- **literal in snapshot**: a fact's literal or counter-literal (``facts.Fact``) occurs, whitespace
  removed, in a file of the snapshot the method sees (every file its repository index reads) (the blanked copy: targets blanked, with
  ``target_docstrings: remove`` their docstrings gone, the judging test files removed);
- **token in requirement**: the fact's or the counterfactual's token occurs in the requirement turn
  (then the requirement, not the info turn, would decide the fact);
- **docstring overlap**: the share of the requirement turn's content words found in the target's
  docstring as the method sees it (0 when the docstring is removed);
- **sibling similarity**: the highest token similarity (``difflib`` ratio over the name, number,
  string and operator tokens) between the reference body and any other function body of the snapshot;
- **distractor edit distance**: Levenshtein distance between a fact's token and its counterfactual.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.locoeval.verified.source import norm
from reconmem.platform import pyast

SIBLING_LIMIT = 0.7
MAX_FILE_BYTES = 2_000_000
_SKIP_PARTS = {".git", "__pycache__", ".tox", ".mypy_cache", ".pytest_cache"}
_STOP = set("the and for with from that this into when then than are its has have not but all any "
            "each which will can may also only None none true false return returns value values given "
            "function method argument arguments object instance self".split())


def text_files(root: Path) -> Iterable[tuple[str, str]]:
    """(repository-relative path, text) of every UTF-8 text file of a tree (binary, huge and cache files skipped)."""
    for p in sorted(root.rglob("*")):
        if not p.is_file() or _SKIP_PARTS & set(p.relative_to(root).parts):
            continue
        try:
            if p.stat().st_size > MAX_FILE_BYTES:
                continue
            data = p.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue
        try:
            yield p.relative_to(root).as_posix(), data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def indexed(rel: str) -> bool:
    """Would the repository index read this file (a source file of a supported language outside
    hidden, vendored and virtualenv-like folders; ``reconmem.platform.code.index``)?"""
    from reconmem.platform.code.index import SKIP_DIRS
    from reconmem.platform.code.languages import language_for

    parts = rel.split("/")
    return language_for(parts[-1]) is not None and not any(
        p.startswith(".") or p in SKIP_DIRS or p.endswith(".egg-info") for p in parts[:-1])


class SnapshotText:
    """Every file of a tree the repository index reads, whitespace removed, in one searchable string."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.names = sorted(f for f in files if indexed(f))
        parts, self.starts, pos = [], [], 0
        for name in self.names:
            t = norm(files[name]) + "\x00"
            self.starts.append(pos)
            parts.append(t)
            pos += len(t)
        self.blob = "".join(parts)

    @classmethod
    def of_tree(cls, root: Path) -> "SnapshotText":
        return cls(dict(text_files(root)))

    def files_with(self, fragment: str, *, exclude: Iterable[str] = (), limit: int = 3) -> list[str]:
        """Files (not in ``exclude``) whose whitespace-free text contains ``fragment``'s."""
        needle, skip, out, at = norm(fragment), set(exclude), [], 0
        if not needle:
            return []
        while len(out) < limit:
            at = self.blob.find(needle, at)
            if at < 0:
                break
            name = self.names[bisect.bisect_right(self.starts, at) - 1]
            if name not in skip and name not in out:
                out.append(name)
            at += 1
        return out


_STRING = r"""[rRbBuUfF]{0,2}(?:'{3}[\s\S]*?'{3}|"{3}[\s\S]*?"{3}|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")"""
_TOKEN = re.compile(r"(?P<comment>#[^\n]*)|(?P<tok>" + _STRING
                    + r"|[A-Za-z_]\w*|\d[\w.]*|\*\*=?|//=?|<<=?|>>=?|->|[-+*/%@&|^=<>!:]=|[^\w\s])")


def body_tokens(body: str) -> list[str]:
    """The name, number, string and operator tokens of a body, comments dropped (a regular
    expression: ``tokenize`` is too slow for every function of a project)."""
    return [m.group("tok") for m in _TOKEN.finditer(body) if m.group("tok")]


def _function_bodies(text: str) -> list[tuple[int, list[str]]]:
    """(def line, body tokens) of every function in a module (docstrings excluded)."""
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.splitlines()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        if not body:
            continue
        start = min([body[0].lineno, *(d.lineno for d in getattr(body[0], "decorator_list", []))])
        out.append((node.lineno, body_tokens("\n".join(lines[start - 1:node.end_lineno]))))
    return out


class SiblingIndex:
    """The function bodies of a tree's Python files, for sibling-similarity queries."""

    def __init__(self, bodies: list[tuple[str, int, list[str]]]) -> None:
        self.bodies = bodies

    @classmethod
    def of_tree(cls, root: Path, files: Mapping[str, str] | None = None) -> "SiblingIndex":
        items = files.items() if files is not None else text_files(root)
        bodies = [(name, line, toks) for name, text in items if name.endswith(".py")
                  for line, toks in _function_bodies(text)]
        return cls(bodies)

    def most_similar(self, body: str, *, skip: Iterable[tuple[str, int]] = (),
                     exclude_files: Iterable[str] = ()) -> tuple[float, str]:
        """(highest similarity, ``file:line`` of that function) of ``body`` against every body but the
        ``skip`` ones (``(file, def line)``: the function itself, targets blanked in the snapshot)."""
        toks = body_tokens(body)
        excluded, skip = set(exclude_files), set(skip)
        best, where = 0.0, ""
        if not toks:
            return best, where
        sm = difflib.SequenceMatcher(None, autojunk=False)
        sm.set_seq2(toks)
        n = len(toks)
        for name, line, other in self.bodies:
            if (name, line) in skip or name in excluded or not other:
                continue
            m = len(other)
            if 2.0 * min(n, m) / (n + m) <= best:
                continue
            sm.set_seq1(other)
            if sm.quick_ratio() <= best:
                continue
            r = sm.ratio()
            if r > best:
                best, where = r, f"{name}:{line}"
        return best, where


def content_words(text: str) -> set[str]:
    """Lower-case words of three or more characters, without common function words."""
    return {w for w in re.findall(r"[a-z][a-z0-9_]{2,}", text.lower()) if w not in _STOP}


def docstring_overlap(requirement_text: str, docstring: str) -> float:
    """Share of the requirement's content words that the docstring contains (0..1)."""
    req = content_words(requirement_text)
    if not req or not docstring:
        return 0.0
    return len(req & content_words(docstring)) / len(req)


def token_in_text(token: str, text: str) -> bool:
    """Does ``token`` (an identifier, number, operator or string literal) occur in prose ``text``?"""
    t = token.strip()
    if len(t) >= 2 and t[0] in "'\"" and t[-1] == t[0]:
        try:
            value = pyast.literal_eval(t)
        except (ValueError, SyntaxError):
            value = t[1:-1]
        if not isinstance(value, str) or len(value.strip()) < 2:
            return t in text
        return value in text
    if re.fullmatch(r"[\w.]+", t):
        short = t.rsplit(".", 1)[-1]
        return re.search(rf"(?<![\w.]){re.escape(t)}(?!\w)|(?<!\w){re.escape(short)}(?!\w)", text) is not None
    return False  # operators: prose mentions of "<" or "in" say nothing


def mentioned(item: Mapping[str, Any], literal: str, counter_literal: str, token: str, counter: str, text: str) -> bool:
    """Does prose ``text`` mention the fact: its tokens, or for ``bool`` / ``compare`` facts (whose
    tokens say nothing in prose) its fragments?"""
    if item.get("kind") in ("bool", "compare"):
        return bool(literal and literal in text) or bool(counter_literal and counter_literal in text)
    return token_in_text(token, text) or token_in_text(counter, text)


def target_docstring(file_text: str, qual: list[str]) -> str:
    """The docstring of the function ``qual`` (class path + name) in a module, '' if none or not found."""
    from benchmarks.locoeval.repo import find_function

    try:
        func = find_function(pyast.parse(file_text), qual)
    except SyntaxError:
        return ""
    return (ast.get_docstring(func) or "") if func is not None else ""


def visible_targets(root: Path, sample: Any) -> tuple[dict[str, str], list[str]]:
    """What a sample's blanked copy changes in the tree (``benchmarks.locoeval.repo.blanked_copy``
    as the runner calls it, hide_task_tests on): ``({target file: blanked text}, [removed test files])``."""
    from benchmarks.locoeval.repo import _qualname, blank_source, resolve_file
    from benchmarks.locoeval.runner import task_test_files

    by_file: dict[str, list[list[str]]] = {}
    for r in sample.requirements:
        rel = resolve_file(root, r.completion_path, sample.project_path).relative_to(root).as_posix()
        by_file.setdefault(rel, []).append(_qualname(r.namespace, rel))
    blanked = {rel: blank_source((root / rel).read_text(encoding="utf-8"), quals, filename=rel,
                                 strip_docstrings=sample.target_docstrings == "remove")
               for rel, quals in by_file.items()}
    hidden = []
    for t in task_test_files(sample):
        try:
            hidden.append(resolve_file(root, t, sample.project_path).relative_to(root).as_posix())
        except FileNotFoundError:
            continue
    return blanked, sorted(set(hidden))


@dataclass
class Figures:
    """The validity figures of a set, per fact kind."""

    facts: Counter = field(default_factory=Counter)
    literal_in_snapshot: Counter = field(default_factory=Counter)
    token_in_docstring: Counter = field(default_factory=Counter)
    token_in_requirement: Counter = field(default_factory=Counter)
    sibling_max: dict[str, float] = field(default_factory=dict)
    edits: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    overlaps: list[float] = field(default_factory=list)
    docstrings_visible: int = 0
    tasks: int = 0

    def table(self) -> list[str]:
        kinds = sorted(self.facts, key=lambda k: (-self.facts[k], k))
        out = ["validity figures (per fact kind; literal = the fact's or the counterfactual's code fragment, "
               "token = the fact's or the counterfactual's token):",
               f"  {'kind':<10} {'facts':>5} {'literal-in-snapshot':>19} {'token-in-docstring':>18} "
               f"{'token-in-requirement':>20} {'sibling-max':>11}  distractor edit distance"]
        rows = kinds + ["all"]
        for k in rows:
            pick = (lambda c: sum(c.values())) if k == "all" else (lambda c: c[k])
            edits = [e for v in self.edits.values() for e in v] if k == "all" else self.edits.get(k, [])
            sib = max(self.sibling_max.values(), default=0.0) if k == "all" else self.sibling_max.get(k, 0.0)
            out.append(f"  {k:<10} {pick(self.facts):>5} {pick(self.literal_in_snapshot):>19} "
                       f"{pick(self.token_in_docstring):>18} {pick(self.token_in_requirement):>20} {sib:>11.2f}  "
                       f"{_distribution(edits)}")
        share = self.facts["compare"] / sum(self.facts.values()) if self.facts else 0.0
        mean = statistics.fmean(self.overlaps) if self.overlaps else 0.0
        out.append(f"  tasks {self.tasks}: target docstring visible in {self.docstrings_visible}; requirement-word "
                   f"overlap with the visible docstring mean {mean:.2f}, max {max(self.overlaps, default=0.0):.2f}; "
                   f"comparison share {share:.2f}")
        return out


def _distribution(values: list[int]) -> str:
    if not values:
        return "-"
    buckets = Counter("1" if v <= 1 else "2" if v == 2 else "3-5" if v <= 5 else "6-10" if v <= 10 else ">10"
                      for v in values)
    spread = " ".join(f"{b}:{buckets[b]}" for b in ("1", "2", "3-5", "6-10", ">10") if buckets[b])
    return f"n={len(values)} min {min(values)} median {statistics.median(values):g} max {max(values)} ({spread})"
