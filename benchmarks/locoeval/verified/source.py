"""Source text helpers: ast positions to text, whitespace normalisation, parent maps."""

from __future__ import annotations

import ast
import re
import textwrap

FRAGMENT_CHARS = 110  # the longest one-line fragment a fact or a fork change shows around its edit
_SIMPLE_STMT = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)


class SourceText:
    """A file's text with ast positions (utf-8 byte columns) mapped to character offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for ln in self.lines:
            self.starts.append(self.starts[-1] + len(ln))

    def offset(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1]
        if line.isascii():
            return self.starts[lineno - 1] + col
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        a, b = self.span(node)
        return self.text[a:b]


def one_line(s: str) -> str:
    """Whitespace runs collapsed to single spaces."""
    return " ".join(s.split())


def norm(s: str) -> str:
    """All whitespace removed (how fragments are compared with turns and files)."""
    return re.sub(r"\s+", "", s)


def dedent_body(text: str) -> str:
    """A function body as the splicer takes it: dedented, tabs expanded, no surrounding blank lines."""
    return textwrap.dedent(text.expandtabs(4)).strip("\n")


def parents_of(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """Child -> parent map of a syntax tree."""
    out: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[child] = node
    return out


def fragment_node(src: SourceText, parents: dict[ast.AST, ast.AST], node: ast.AST) -> ast.AST | None:
    """The largest single-line expression around ``node`` of at most FRAGMENT_CHARS, widened to its
    simple statement when that fits too (None: ``node`` spans lines). ``parents``: :func:`parents_of`."""
    if node.lineno != node.end_lineno:
        return None
    best = node
    while best in parents:
        par = parents[best]
        if isinstance(par, ast.expr) and not isinstance(par, (ast.Lambda, ast.JoinedStr)):
            if par.lineno != par.end_lineno or len(src.segment(par)) > FRAGMENT_CHARS:
                return best
            best = par
            continue
        if isinstance(par, _SIMPLE_STMT) and par.lineno == par.end_lineno and len(src.segment(par)) <= FRAGMENT_CHARS:
            return par
        return best
    return best
