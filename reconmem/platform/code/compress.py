"""Hierarchical code context compression (HCC) — paper §2.3.3, Fig. 4.

- functions / methods: full source;
- variables / fields: the full statement;
- types: a signature-level summary built by recursive traversal: the type header (decorators and
  modifiers included), then each member's header — nested methods as their signature (decorators
  kept, bodies dropped), fields as their declaration line, nested types recursively — with the
  original indentation; brace languages get a closing ``}``;
- files: the same summary for every top-level entity of the file;
- directories: a listing of their children.

``hcc=False`` returns the full source of any entity. Every result starts with one header line that
names the entity path as a comment in the entity's language (``# path: ...`` / ``// path: ...``).
Python types and files also keep the first line of their docstring.
"""

from __future__ import annotations

from reconmem.platform.code.entities import DIRECTORY, FILE, FUNCTION, TYPE, VARIABLE, CodeEntity, EntitySource

COMMENT_PREFIX = {"python": "#"}
NO_BRACES = {"python"}


def header_line(e: CodeEntity) -> str:
    """``# path: pkg/mod.py/Class`` (comment syntax of the entity's language)."""
    prefix = COMMENT_PREFIX.get(e.language or "", "//") if e.kind != DIRECTORY else "#"
    return f"{prefix} path: {e.path}"


def _reindent(text: str, old_prefix: str, new_prefix: str) -> str:
    """Move a (possibly multi-line) signature from its source indentation to ``new_prefix``."""
    lines = text.split("\n")
    out = [new_prefix + lines[0]]
    for line in lines[1:]:
        if old_prefix and line.startswith(old_prefix):
            line = line[len(old_prefix):]
        out.append(new_prefix + line if line.strip() else line)
    return "\n".join(out)


def _indent_unit(e: CodeEntity) -> str:
    return "\t" if e.language == "go" else "    "


def _summary_lines(index: EntitySource, e: CodeEntity, indent: str, out: list[str], *, with_doc: bool) -> None:
    """Append the signature-level summary of ``e`` (and, for types, its members) to ``out``.

    Indentation follows the entity tree (one unit per level), not the source, so definitions
    inside ``if``/``try`` blocks or namespaces line up with their siblings.
    """
    out.append(_reindent(e.signature, index.line_prefix(e), indent))
    if e.kind != TYPE:
        return
    python = e.language in NO_BRACES
    member_indent = indent + _indent_unit(e)
    if with_doc and python and e.doc:
        out.append(f'{member_indent}"""{e.doc}"""')
    children = [index.entities[c] for c in index.children(e.path)]
    inside = [c for c in children if e.start_byte <= c.start_byte < e.end_byte]
    outside = [c for c in children if not (e.start_byte <= c.start_byte < e.end_byte)]  # Go methods, C++ Foo::bar
    braces = not python and bool(inside)
    if braces:
        out[-1] = out[-1] + " {"
    last_span: tuple[int, int] | None = None
    last_function: CodeEntity | None = None
    for c in inside:
        if (c.start_byte, c.end_byte) == last_span:  # `self.a = self.b = 0` binds two attributes in one statement
            continue
        last_span = (c.start_byte, c.end_byte)
        within_method = (
            c.kind == VARIABLE and last_function is not None and last_function.start_byte <= c.start_byte < last_function.end_byte
        )  # `self.x = ...` attributes are shown inside the __init__ signature they come from
        _summary_lines(index, c, member_indent + (_indent_unit(e) if within_method else ""), out, with_doc=False)
        if c.kind == FUNCTION:
            last_function = c
    if python and not inside:
        out.append(member_indent + "...")
    if braces:
        out.append(indent + "}")
    for c in outside:
        _summary_lines(index, c, indent, out, with_doc=False)


def summarize(index: EntitySource, path: str) -> str:
    """Signature-level structured summary of a type or file (no header line)."""
    e = index.entities[path]
    out: list[str] = []
    if e.kind == FILE:
        if e.language in NO_BRACES:
            doc = _module_docstring(index, e)
            if doc:
                out.append(f'"""{doc}"""')
        last_span = None
        for c in index.children(path):
            child = index.entities[c]
            if (child.start_byte, child.end_byte) == last_span:
                continue
            last_span = (child.start_byte, child.end_byte)
            if child.parent == path and child.start_byte >= 0:
                _summary_lines(index, child, "", out, with_doc=False)
        return "\n".join(out)
    _summary_lines(index, e, "", out, with_doc=True)
    return "\n".join(out)


def _module_docstring(index: EntitySource, e: CodeEntity) -> str:
    lines = index.file_text(e.path).split("\n")
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("#")):
        lines.pop(0)  # shebang, encoding line, licence comments
    text = "\n".join(lines).lstrip()
    for q in ('"""', "'''"):
        for p in ("", "r", "u"):
            if text.startswith(p + q):
                body = text[len(p) + 3 :].split(q, 1)[0]
                for line in body.strip().splitlines():
                    if line.strip():
                        return line.strip()
    return ""


def compress_entity(index: EntitySource, path: str, *, hcc: bool = True) -> str:
    """Header line + HCC form (``hcc=True``) or full source (``hcc=False``) of ``path``."""
    e = index.get(path)
    if e is None:
        raise KeyError(f"compress: unknown entity path {path!r}")
    head = header_line(e)
    if e.kind == DIRECTORY:
        listing = [f"{c}/" if index.entities[c].kind == DIRECTORY else c for c in index.children(path)]
        return "\n".join([head, *listing])
    if not hcc or e.kind in (FUNCTION, VARIABLE):
        return f"{head}\n{index.display_source(path)}"
    return f"{head}\n{summarize(index, path)}"
