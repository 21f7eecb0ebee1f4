"""Turn a model reply into a function body and splice it into a file (DevEval's body replacement).

:func:`extract_completion` accepts fenced or bare code, prose around it, a whole function (with
decorators, as a method inside a class, with nested functions, or copied with its first decorator
left of its ``def``) or a body only. When the reply holds the whole function, its body is taken;
module-level imports of the reply (except ``from __future__``) and top-level helper functions the
body calls are moved into the body as local statements, so the splice stays a body-only
replacement. :func:`splice_body` re-indents the body to the task's indent and replaces the body lines.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field

from reconmem.platform import pyast

BLANK_BODY = "raise NotImplementedError"

_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.S | re.M)
_DECORATOR_LINE = re.compile(r"^([ \t]*)@")
_DEF_LINE = re.compile(r"^([ \t]*)(async[ \t]+)?(def|class)[ \t]")
_CODE_START = re.compile(r"^\s*(@|def |async def |class |import |from \S+ import |return\b|if |for |while |"
                         r"try:|with |raise |[A-Za-z_][\w.]*\s*(=|\(|\+=|-=))")


class ExtractionError(ValueError):
    """No code could be extracted from a reply."""


@dataclass
class Completion:
    """A body extracted from a reply: ``body`` is dedented (indent 0)."""

    body: str
    source: str                         # "function" | "body"
    block: str = ""                     # the code block it came from
    moved: list[str] = field(default_factory=list)   # names of imports / helpers moved into the body


def code_blocks(reply: str) -> list[str]:
    """Fenced code blocks (python-like or unlabeled first); else the reply's code region."""
    blocks = []
    for m in _FENCE.finditer(reply):
        lang = m.group(2).lower()
        if lang in ("", "python", "py", "python3", "py3"):
            blocks.append(m.group(3))
    if blocks:
        return blocks
    return [_code_region(reply)]


def _parses(text: str) -> bool:
    try:
        pyast.parse(text)
        return True
    except SyntaxError:
        return False


def _parses_as_body(text: str) -> bool:
    return _parses("def _f():\n" + textwrap.indent(textwrap.dedent(text), "    ") + "\n")


def _indent_width(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _realigned(block: str) -> str:
    """``block`` with every decorated definition whose ``def`` sits right of its first decorator moved back.

    Code copied from an entity shown without its first line's indentation has the decorator at
    column 0 and the ``def`` and body one level deeper (``@classmethod`` / ``    def f(cls):`` /
    ``        return 1``), which does not parse. The lines after such a decorator, down to the next
    line at or left of the decorator's column, move left by the distance between the decorator and
    the ``def``, so the definition lines up with its decorator and keeps its body's indentation.
    """
    lines = block.split("\n")
    i = 0
    while i < len(lines):
        deco = _DECORATOR_LINE.match(lines[i])
        if deco is None:
            i += 1
            continue
        column = len(deco.group(1))
        j = i + 1
        while j < len(lines) and _DEF_LINE.match(lines[j]) is None:
            stray = lines[j].strip() and _indent_width(lines[j]) <= column and _DECORATOR_LINE.match(lines[j]) is None
            if stray:
                break
            j += 1
        definition = _DEF_LINE.match(lines[j]) if j < len(lines) else None
        shift = len(definition.group(1)) - column if definition is not None else 0
        if shift <= 0:
            i = j if j > i + 1 else i + 1
            continue
        k = i + 1
        while k < len(lines) and (k <= j or not lines[k].strip() or _indent_width(lines[k]) > column):
            if lines[k].strip():
                cut = min(shift, max(_indent_width(lines[k]) - column, 0))
                lines[k] = lines[k][cut:]
            k += 1
        i = k
    return "\n".join(lines)


def _code_region(reply: str) -> str:
    """The largest parseable run of lines in unfenced text (prose before and after removed)."""
    lines = reply.splitlines()
    starts = [i for i, ln in enumerate(lines) if _CODE_START.match(ln)]
    for i in starts:
        for j in range(len(lines), i, -1):
            chunk = "\n".join(lines[i:j])
            if not chunk.strip():
                continue
            if (_parses(textwrap.dedent(chunk)) or _parses_as_body(chunk)
                    or _parses(textwrap.dedent(_realigned(chunk)))):
                return chunk
    return reply


def _find_defs(tree: ast.AST, name: str) -> list[tuple[int, ast.AST]]:
    """Definitions named ``name`` with their depth in functions (0 = module or class level)."""
    found = []

    def walk(node, depth):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if child.name == name:
                    found.append((depth, child))
                walk(child, depth + 1)
            else:
                walk(child, depth)

    walk(tree, 0)
    return found


def _def_body_text(source: str, node) -> str:
    lines = source.splitlines()
    first = node.body[0]
    if first.lineno == node.lineno:           # `def f(x): return x`
        return "\n".join(ast.get_source_segment(source, stmt) or "" for stmt in node.body)
    # start right after the signature (keeps comments between the colon and the first statement)
    sig_end = first.lineno - 1
    for i in range(node.lineno, first.lineno):
        text = "\n".join(lines[node.lineno - 1:i])
        if _parses(textwrap.dedent(text) + "\n    pass\n"):
            sig_end = i
            break
    return "\n".join(lines[sig_end:node.end_lineno])


def _parse_block(block: str) -> ast.Module | None:
    try:
        return pyast.parse(textwrap.dedent(block))
    except SyntaxError:
        return None


def _definition(block: str, name: str) -> tuple[str, ast.Module, ast.AST] | None:
    """(dedented source, tree, shallowest definition of ``name``) of a parseable ``block``, else None."""
    tree = _parse_block(block)
    if tree is None:
        return None
    defs = sorted(_find_defs(tree, name), key=lambda d: d[0])
    return (textwrap.dedent(block), tree, defs[0][1]) if defs else None


def extract_completion(reply: str, function_name: str) -> Completion:
    """Extract the body for ``function_name`` from a model reply (see the module docstring)."""
    if not reply or not reply.strip():
        raise ExtractionError("empty reply")
    blocks = code_blocks(reply)
    # Prefer a block that defines the function (as written, else with its decorators realigned).
    for block in blocks:
        found = _definition(block, function_name) or _definition(_realigned(block), function_name)
        if found is None:
            continue
        src, tree, node = found
        body = textwrap.dedent(_def_body_text(src, node))
        moved, prefix = _moved_statements(src, tree, node)
        if prefix:
            body = prefix + "\n" + body
        return Completion(body=body, source="function", block=block, moved=moved)
    # Otherwise a body only: the first block that parses as a function body.
    for block in blocks:
        if _parses_as_body(block):
            return Completion(body=textwrap.dedent(block).strip("\n"), source="body", block=block)
    raise ExtractionError(f"no parseable code for {function_name!r} in the reply")


def _moved_statements(src: str, tree: ast.Module, target) -> tuple[list[str], str]:
    """Module-level imports and helper functions the target uses, as text to prepend to its body."""
    if target not in tree.body:           # target is a method or nested: only imports move
        helpers_allowed = False
    else:
        helpers_allowed = True
    used = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    parts, names = [], []
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            continue
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            parts.append(ast.get_source_segment(src, stmt))
            names.extend(a.asname or a.name.split(".")[0] for a in stmt.names)
        elif helpers_allowed and stmt is not target and isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and stmt.name in used:
            start = min([d.lineno for d in stmt.decorator_list] + [stmt.lineno])
            parts.append("\n".join(src.splitlines()[start - 1:stmt.end_lineno]))
            names.append(stmt.name)
    return names, "\n".join(textwrap.dedent(p) for p in parts if p)


def is_trivial_body(body: str) -> bool:
    """True for an empty body or one that only holds ``pass`` / ``...`` / a docstring."""
    try:
        tree = pyast.parse(textwrap.dedent(body))
    except SyntaxError:
        return False
    for stmt in tree.body:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and \
                (stmt.value.value is Ellipsis or isinstance(stmt.value.value, str)):
            continue
        return False
    return True


def reindent(body: str, indent: int) -> list[str]:
    """Dedent ``body`` and indent every non-blank line by ``indent`` spaces."""
    pad = " " * indent
    out = []
    for line in textwrap.dedent(body.expandtabs(4)).strip("\n").splitlines():
        out.append(pad + line if line.strip() else "")
    return out


def splice_body(file_text: str, body_start: int, body_end: int, body: str, indent: int) -> str:
    """Replace lines ``body_start..body_end`` (1-based, inclusive) of ``file_text`` with ``body``."""
    lines = file_text.splitlines(keepends=True)
    if not (1 <= body_start <= body_end <= len(lines)):
        raise ValueError(f"body lines {body_start}..{body_end} outside a file of {len(lines)} lines")
    new = [ln + "\n" for ln in reindent(body, indent)] or [" " * indent + "pass\n"]
    tail = lines[body_end:]
    return "".join(lines[:body_start - 1] + new + tail)


def check_syntax(text: str, filename: str = "<spliced>") -> str | None:
    """None when ``text`` compiles, else the error message."""
    try:
        compile(text, filename, "exec", dont_inherit=True)
        return None
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg} ({filename}, line {exc.lineno})"
