"""The catalogue of fork changes: plausible decisions a team might make about one function.

Each kind finds its sites in a reference body (Python ``ast`` over the module text) and proposes
one fork value per site:

| kind | site | fork value |
|---|---|---|
| ``scale`` | a number (not 0 / 1, not a unit factor) that is a setting: the whole value assigned or returned, a keyword or positional argument (never an operand of arithmetic, an index, a comparison bound, or a position / size argument such as ``m.group(3)``, ``split(sep, 2)``, ``read(4)``, ``to_bytes(4)``) | x2 (ints and floats), /2 (even ints), x10 (limits: ``timeout``, ``max``, ``limit``, ``retries`` ... in the fragment) |
| ``bound`` | an int that is the bound of an ordering comparison (``len(x) > 3``) | the bound shifted by one (away from 0) |
| ``strictness`` | an ordering comparison with a number or ``len(...)`` on one side | ``<`` <-> ``<=``, ``>`` <-> ``>=`` |
| ``separator`` | a short punctuation string the function builds output with (``sep.join``, ``a + sep + b``; never one it splits input on) | a conventional alternative (``,`` -> ``;``, ``&`` -> ``;``, ``:`` -> ``=``, ``-`` -> ``_`` ...) |
| ``format`` | a date format (``%Y-%m-%d`` -> ``%d/%m/%Y``, ``T`` -> space), a float precision (``%.2f`` -> ``%.3f``), a zero-padded width of 3 or more (``%05d`` -> ``%06d``), the separator between two placeholders (``': '`` -> ``' - '``) | the variant |
| ``default`` | the fallback of ``d.get(k, v)`` / ``d.pop(k, v)`` / ``d.setdefault(k, v)`` / ``getattr(o, n, v)`` | a number x2, a bool flipped (not for ``getattr``: a feature probe) |
| ``flag`` | a ``True`` / ``False`` keyword argument | flipped |
| ``membership`` | a literal collection of two or more constants tested with ``in`` / ``not in`` | its last element left out |
| ``case`` | ``.lower()`` / ``.upper()`` whose result is the whole value assigned or returned | the other case |
| ``sort`` | ``sorted(x)`` / ``x.sort()`` without ``reverse`` | ``reverse=True`` |
| ``side`` | ``.split(sep, 1)`` / ``.partition`` / ``.find`` / ``.index`` | from the other end (``rsplit``, ``rpartition``, ``rfind``, ``rindex``) and back |
| ``encoding`` | a text encoding name (``'utf-8'``, ``'ascii'``, ``'latin-1'`` ...) | another common one |
| ``exception`` | the class a ``raise`` uses | a sibling class: same direct base, defined in the project and reachable from the module; builtins only ``ValueError`` -> ``TypeError`` under a type check |
| ``order`` | two adjacent one-line call statements on different receivers, neither adding to an output (``append``, ``write``, ``add`` ...), with no data dependency between them | the two swapped |
| ``missing`` | a ``None`` test of a name or attribute in a one-line ``if`` / ``elif`` / ``while`` header (also inside ``and`` / ``or`` / ``not``), a comprehension's filter, a conditional expression's test or a returned value | every empty value counts as missing: ``x is None`` -> ``not x``, ``x is not None`` -> ``x`` (``bool(x)`` returned) |
| ``empty`` | the value a one-statement guard (``if ...: return v``) returns: an empty value (``[]``, ``{}``, ``()``, ``''``, ``set()`` ...); ``True`` / ``False`` when the guard tests a parameter for an empty or missing value (``not x``, ``x is None``, ``len(x) == 0``) | ``None``; the other bool |
| ``strip`` | ``.strip()`` / ``.rstrip()`` / ``.lstrip()`` (no argument or a string) | ``.strip()`` -> ``.rstrip()``; ``.rstrip()`` / ``.lstrip()`` -> ``.strip()`` |
| ``key`` | a ``snake_case`` / ``camelCase`` string key of a dict the function builds and returns (a returned dict literal, one assigned to a returned name, ``d['k'] = v`` on a returned name), named nowhere else in the function | the other convention (``'user_id'`` <-> ``'userId'``) |
| ``base`` | the start of ``enumerate`` | ``enumerate(x)`` -> ``enumerate(x, 1)``, ``enumerate(x, 1)`` -> ``enumerate(x)`` |
| ``rounding`` | ``floor`` / ``ceil``, ``round(x, n)``, ``int(a / b)`` | ``ceil`` / ``floor``, ``round(x, n + 1)``, ``round(a / b)`` |
| ``absent`` | the empty fallback (``[]``, ``{}``, ``()``, ``''``, ``set()`` ..., ``0``) of ``d.get(k, v)`` / ``d.pop(k, v)`` / ``getattr(o, n, v)`` whose result the function returns as it is (the whole value returned, or assigned to a name used only in ``return name``) | ``None``: an absent key or attribute gives ``None`` |
| ``collection`` | a one-line literal collection of two or more constants (no bools) assigned to a local name that the function uses only as the right side of ``in`` / ``not in`` | its last element left out (``membership`` for a collection named first; ``notes[-1]``: the element left out) |
| ``errors`` | the error handler of a text codec: ``errors='...'`` of any call, the second argument of ``.encode`` / ``.decode`` | ``'strict'`` -> ``'replace'``, ``'replace'`` -> ``'ignore'``, ``'ignore'``, ``'surrogateescape'``, ``'backslashreplace'`` ... -> ``'replace'`` (never to ``'strict'``: no fork raises where the release gave a value) |
| ``affix`` | a one-line literal tuple of two or more strings passed to ``.startswith`` / ``.endswith`` | its last element left out (``notes[-1]``: the element left out) |

``format`` also covers an f-string that is no message: the separator between two placeholders
(``f'{k}: {v}'`` -> ``f'{k} - {v}'``). ``exception`` also gives ``TypeError`` -> ``ValueError``.
Version 7 only added sites: for every screened task its proposals contain version 6's (checked over
the 1,010 located tasks), which lets the screening carry version-6 rows forward (``screen``).
Version 8 only adds the kinds ``absent``, ``collection``, ``errors`` and ``affix`` (for the targets of
the version-7 screening with no site: a returned fallback that is empty, a local set of accepted or
refused values, a codec's error handler, the accepted prefixes or suffixes);
their proposers run after every older one and their sites never take an older kind's span, so every
older kind proposes exactly its version-7 changes (keys, fork texts, sentences) and a task whose
proposals are unchanged can be carried forward.

Nothing else: no change to a docstring, message, log text, f-string part (but the separator above), annotation or subscript,
no change that does not parse, no second change on the same line. Every change has a one-sentence
**statement** of the decision as the user would say it (naming the fork's value and the code, never
the public value), a **public statement** (the library's behaviour, for the distractor "stated
early, revised later") and a **revision** (names both).

**Differs from every release.** :func:`propose` guarantees only fork value != public value; the
screening (``screen``) also requires that the fork's fragment occurs nowhere in the snapshot, and
``releases`` that it occurs in the target function of none of the project's other releases checked
(the release rule there); ``ship --releases`` leaves out the tasks that fail it.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.locoeval.verified.distractors import module_bindings, skip_constant
from benchmarks.locoeval.verified.source import (FRAGMENT_CHARS, SourceText, dedent_body, fragment_node, one_line,
                                                 parents_of)
from reconmem.platform import pyast

KINDS = ("scale", "bound", "strictness", "separator", "format", "default", "flag", "membership", "case", "sort",
         "side", "encoding", "exception", "order", "missing", "empty", "strip", "key", "base", "rounding", "absent",
         "collection", "errors", "affix")
CATALOGUE_VERSION = 9          # screening rows of an older catalogue are screened again
UNIT_FACTORS = {7, 8, 12, 16, 24, 32, 60, 64, 100, 128, 256, 255, 365, 1000, 1024, 3600, 86400, 1e3, 1e6, 1e9,
                1000000, 1000000000, 0x7F, 0xFF, 0xFFFF, 65535, 65536}
LIMIT_WORDS = re.compile(r"timeout|limit|max|min|retr|attempt|size|count|depth|width|length|len\b|"
                         r"threshold|interval|delay|wait|buffer|chunk|batch|capacity", re.I)
LIMIT_NAME = re.compile(r"(^|_)(n|num|total|end|start|stop|pos|offset|index|idx|level|version|port|age|"
                        r"ttl|expires?|quota|cutoff|rate|priority|score|percent)($|_)", re.I)
SEPARATORS = {",": ";", ", ": "; ", ";": ",", "; ": ", ", ":": "=", ": ": " = ", "=": ":", "|": ",",
              "-": "_", "_": "-", "&": ";", "\t": ",", " | ": " / ", " - ": " : ", "; ": ", "}
_ORDER_SWAP = {ast.Lt: ("<=", "<"), ast.LtE: ("<", "<="), ast.Gt: (">=", ">"), ast.GtE: (">", ">=")}
_POSITIONS = {"group", "groups", "span", "start", "end", "split", "rsplit", "pop", "insert", "index", "get", "getattr",
              "int", "to_bytes", "from_bytes", "pack", "unpack", "unpack_from", "chr", "ord", "seek", "read", "readline",
              "recv", "bytes", "bytearray", "islice", "nth", "setdefault", "divmod", "pow", "round"}
_RICH_COMPARISONS = {"__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__cmp__"}
_ENCODINGS = {"utf-8": "latin-1", "utf8": "latin-1", "UTF-8": "ISO-8859-1", "ascii": "utf-8", "latin-1": "utf-8",
              "latin1": "utf-8", "iso-8859-1": "utf-8", "ISO-8859-1": "UTF-8", "utf-16": "utf-8", "cp1252": "utf-8"}
_DEFAULT_CALLS = {"get": 1, "pop": 1, "setdefault": 1}
_DATE_FORMATS = [("%Y-%m-%d", "%d/%m/%Y"), ("%d/%m/%Y", "%Y-%m-%d"), ("%m/%d/%Y", "%d.%m.%Y"),
                 ("%d-%m-%Y", "%Y.%m.%d"), ("%H:%M:%S", "%H.%M.%S"), ("%Y%m%d", "%Y-%m-%d")]
_PLACEHOLDER = r"(?:%[-#0 +]*\d*(?:\.\d+)?[sdrifxXeEgGc]|\{[^{}]*\})"
_BETWEEN = re.compile(rf"({_PLACEHOLDER})(: |, |=|:|-| - )({_PLACEHOLDER})")
_PLACEHOLDER_SEP = {": ": " - ", ", ": "; ", "=": ":", ":": "=", "-": "_", " - ": ": "}


class CatalogueError(ValueError):
    """A change cannot be applied (overlapping spans, a body that does not parse)."""


@dataclass
class ForkChange:
    """One fork change: a replaced span of the module text and what the user says about it."""

    kind: str
    key: str                        # "<kind>:<line>:<col>" of the site (one change per site)
    lines: list[int]                # first and last file line of the replaced span
    start: int                      # character offsets of the replaced span in the module text
    end: int
    public_text: str                # the span's text in the release
    fork_text: str                  # its text in the fork
    public_value: str               # the value as a user would name it
    fork_value: str
    fragment: str                   # the one-line code fragment around the span, as released
    fork_fragment: str              # the same fragment in the fork
    statement: str = ""             # the user's decision (names the fork value only)
    public_statement: str = ""      # the library's behaviour (the distractor, revised later)
    revision: str = ""              # the correction naming both
    notes: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The JSON record of this change."""
        return asdict(self)

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> "ForkChange":
        return cls(**{k: rec[k] for k in cls.__dataclass_fields__ if k in rec})


@dataclass
class ExceptionFamily:
    """Exception classes defined in a project: name -> (defining file, direct base names)."""

    classes: dict[str, list[tuple[str, tuple[str, ...]]]] = field(default_factory=dict)

    @classmethod
    def of_files(cls, files: Mapping[str, str]) -> "ExceptionFamily":
        fam = cls()
        for rel, text in files.items():
            if not rel.endswith(".py"):
                continue
            try:
                tree = pyast.parse(text)
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.bases:
                    bases = tuple(b.id if isinstance(b, ast.Name) else b.attr for b in node.bases
                                  if isinstance(b, (ast.Name, ast.Attribute)))
                    fam.classes.setdefault(node.name, []).append((rel, bases))
        return fam

    def is_exception(self, name: str, _seen: frozenset = frozenset()) -> bool:
        builtin = getattr(builtins, name, None)
        if isinstance(builtin, type) and issubclass(builtin, BaseException):
            return True
        if name in _seen or name not in self.classes:
            return False
        return any(self.is_exception(b, _seen | {name}) for _, bases in self.classes[name] for b in bases)

    def siblings(self, name: str) -> list[tuple[str, str]]:
        """``[(sibling name, defining file)]``: project exception classes with the same first base
        (when that base is a builtin such as ``Exception``, only classes of the same file)."""
        if name not in self.classes or len(self.classes[name]) != 1:
            return []
        rel, bases = self.classes[name][0]
        if not bases:
            return []
        out = []
        for other, defs in sorted(self.classes.items()):
            if other == name or len(defs) != 1:
                continue
            o_rel, o_bases = defs[0]
            if hasattr(builtins, bases[0]) and o_rel != rel:
                continue
            if o_bases[:1] == bases[:1] and self.is_exception(other):
                out.append((other, o_rel))
        out.sort(key=lambda s: (s[1] != rel, s[0]))     # same file first
        return out


@dataclass
class Target:
    """A function of a module whose body the catalogue changes."""

    text: str                       # the module's source
    func: ast.FunctionDef | ast.AsyncFunctionDef
    body_start: int                 # 1-based lines of the body (after the docstring)
    body_end: int
    module_rel: str = ""            # the module's path in the project
    exceptions: ExceptionFamily = field(default_factory=ExceptionFamily)

    def __post_init__(self) -> None:
        self.src = SourceText(self.text)
        self.parents = parents_of(self.func)
        self.bindings = module_bindings(pyast.parse(self.text))
        self.lo, self.hi = self.src.starts[self.body_start - 1], self.src.starts[self.body_end]

    @classmethod
    def of_function(cls, text: str, qualname: str, **kw: Any) -> "Target":
        """The target named ``qualname`` (``Class.method`` or ``func``) of a module text; its body
        starts after the docstring."""
        tree = pyast.parse(text)
        node: ast.AST = tree
        for part in qualname.split("."):
            node = next((n for n in ast.iter_child_nodes(node)
                         if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == part), None)
            if node is None:
                raise CatalogueError(f"no function {qualname!r} in the module (at {part!r})")
        body = node.body
        first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) and \
            isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str) else body[0]
        return cls(text, node, first.lineno, node.end_lineno, **kw)

    @property
    def name(self) -> str:
        return self.func.name

    def body(self) -> str:
        """The public body, dedented (what the splicer takes)."""
        return dedent_body(self.text[self.lo:self.hi])

    def inside(self, node: ast.AST) -> bool:
        return self.body_start <= getattr(node, "lineno", 0) and getattr(node, "end_lineno", 10**9) <= self.body_end

    def fragment_node(self, node: ast.AST) -> ast.AST | None:
        """:func:`benchmarks.locoeval.verified.source.fragment_node` around ``node`` in this target."""
        return fragment_node(self.src, self.parents, node)


def _change(t: Target, kind: str, node: ast.AST, new: str, public_value: str, fork_value: str,
            span: tuple[int, int] | None = None, context: ast.AST | None = None,
            around: tuple[int, int] | None = None) -> ForkChange | None:
    """The change replacing ``node``'s span (or ``span``) by ``new``, with its fragments (the text of
    ``context``, or of the span ``around``)."""
    a, b = span or t.src.span(node)
    if around is not None:
        ca, cb = around
    else:
        ctx = context or t.fragment_node(node)
        if ctx is None:
            return None
        ca, cb = t.src.span(ctx)
    if not (ca <= a and b <= cb):
        ca, cb = min(ca, a), max(cb, b)
    fragment = t.text[ca:cb]
    fork_fragment = t.text[ca:a] + new + t.text[b:cb]
    if "\n" in new:
        return None
    return ForkChange(kind=kind, key=f"{kind}:{node.lineno}:{node.col_offset}",
                      lines=[node.lineno, node.end_lineno], start=a, end=b, public_text=t.text[a:b], fork_text=new,
                      public_value=public_value, fork_value=fork_value, fragment=one_line(fragment),
                      fork_fragment=one_line(fork_fragment))


def _number_text(v: int | float) -> str:
    return repr(v) if not isinstance(v, float) or v != int(v) or abs(v) >= 1e16 else repr(float(v))


def _setting(t: Target, node: ast.AST) -> bool:
    """Is the number a setting: the whole value assigned or returned, a keyword argument, or a
    positional argument of a call (not an operand of arithmetic, an index or a comparison)?"""
    par = t.parents.get(node)
    if isinstance(par, (ast.Assign, ast.AnnAssign, ast.Return, ast.keyword)):
        return getattr(par, "value", None) is node
    if not (isinstance(par, ast.Call) and node in par.args):
        return False
    f = par.func
    name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
    return name not in _POSITIONS


def _is_index(t: Target, node: ast.AST) -> bool:
    par = t.parents.get(node)
    while isinstance(par, (ast.UnaryOp, ast.BinOp)):
        node, par = par, t.parents.get(par)
    return isinstance(par, (ast.Subscript, ast.Slice)) or (isinstance(par, ast.Subscript) and par.slice is node)


def _scale_values(v: int | float, limitish: bool) -> list[int | float]:
    out: list[int | float] = [v * 2]
    if isinstance(v, int) and v % 2 == 0 and abs(v) >= 4:
        out.append(v // 2)
    elif isinstance(v, float):
        out.append(v / 2)
    if limitish:
        out.append(v * 10)
    return out


def scale_changes(t: Target) -> list[ForkChange]:
    """``scale``: numbers assigned, passed or compared, x2 / /2 / x10."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Constant) and type(n.value) in (int, float) and t.inside(n)):
            continue
        v = n.value
        if v in (0, 1, -1) or v in UNIT_FACTORS or skip_constant(t.parents, n, t.func) or not _setting(t, n):
            continue
        text = t.src.segment(n)
        if text.lower().startswith(("0x", "0o", "0b")) or "e" in text.lower() or "_" in text:
            continue
        ctx = t.fragment_node(n)
        if ctx is None:
            continue
        limitish = bool(LIMIT_WORDS.search(t.src.segment(ctx)))
        for new in _scale_values(v, limitish)[:1]:
            ch = _change(t, "scale", n, _number_text(new), text, _number_text(new))
            if ch:
                out.append(ch)
    return out


def _ordering(cmp: ast.Compare) -> bool:
    return len(cmp.ops) == 1 and type(cmp.ops[0]) in _ORDER_SWAP


def _numeric_side(t: Target, node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    name = node.attr if isinstance(node, ast.Attribute) else (node.id if isinstance(node, ast.Name) else "")
    return bool(name) and bool(LIMIT_WORDS.search(name) or LIMIT_NAME.search(name))


def bound_changes(t: Target) -> list[ForkChange]:
    """``bound``: the int bound of an ordering comparison shifted by one (away from zero)."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Compare) and _ordering(n) and t.inside(n)):
            continue
        for side in (n.left, n.comparators[0]):
            if isinstance(side, ast.Constant) and type(side.value) is int and side.value not in UNIT_FACTORS:
                v = side.value
                new = v + 1 if v >= 0 else v - 1
                ch = _change(t, "bound", side, str(new), str(v), str(new), context=t.fragment_node(n))
                if ch:
                    out.append(ch)
    return out


def strictness_changes(t: Target) -> list[ForkChange]:
    """``strictness``: ``<`` <-> ``<=`` (and ``>``) in a comparison with a number or a length."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Compare) and _ordering(n) and t.inside(n)):
            continue
        if not (_numeric_side(t, n.left) or _numeric_side(t, n.comparators[0])) or t.name in _RICH_COMPARISONS:
            continue
        gap_a, gap_b = t.src.span(n.left)[1], t.src.span(n.comparators[0])[0]
        gap = t.text[gap_a:gap_b]
        new_op, old_op = _ORDER_SWAP[type(n.ops[0])]
        at = gap.find(old_op)
        if at < 0 or (old_op in ("<", ">") and gap[at:at + 2] in ("<=", ">=")):
            continue
        new_gap = gap[:at] + new_op + gap[at + len(old_op):]
        ch = _change(t, "strictness", n, new_gap, old_op, new_op, span=(gap_a, gap_b), context=t.fragment_node(n))
        if ch:
            ch.key = f"strictness:{n.lineno}:{n.col_offset}"
            out.append(ch)
    return out


def _string_role(t: Target, n: ast.Constant) -> str | None:
    """``separator`` when the function builds output with the string (``sep.join(...)``, ``a + sep + b``);
    else None. Splitting input on it is no decision of the fork: the input's format is given."""
    par = t.parents.get(n)
    if isinstance(par, ast.Attribute) and par.attr == "join" and isinstance(t.parents.get(par), ast.Call):
        return "separator"
    if isinstance(par, ast.BinOp) and isinstance(par.op, ast.Add):
        return "separator"
    return None


def _quote(text: str, value: str) -> str:
    """``value`` as a string literal with the same prefix and quotes as ``text``."""
    m = re.match(r"^([rRbBuU]{0,2})('''|\"\"\"|'|\")", text)
    prefix, q = (m.group(1), m.group(2)) if m else ("", "'")
    body = value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n") if "r" not in prefix.lower() \
        else value
    return f"{prefix}{q}{body}{q}"


def string_changes(t: Target) -> list[ForkChange]:
    """``separator`` and ``format`` changes of string constants."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Constant) and isinstance(n.value, str) and t.inside(n)):
            continue
        if n.lineno != n.end_lineno or skip_constant(t.parents, n, t.func) or _is_index(t, n) \
                or isinstance(t.parents.get(n), ast.Compare):
            continue
        text, v = t.src.segment(n), n.value
        if text.lstrip("rRbBuU")[:1] not in ("'", '"') or text.lstrip("rRbBuU").startswith(("'''", '"""')):
            continue
        if v in SEPARATORS and _string_role(t, n) == "separator":
            new = SEPARATORS[v]
            ch = _change(t, "separator", n, _quote(text, new), repr(v), repr(new))
            if ch:
                out.append(ch)
            continue
        new = _format_variant(v)
        if new is not None and new != v:
            ch = _change(t, "format", n, _quote(text, new), repr(v), repr(new))
            if ch:
                out.append(ch)
    return out


def _format_variant(v: str) -> str | None:
    """A format-string variant of ``v`` (date format, precision, width, placeholder separator)."""
    for old, new in _DATE_FORMATS:
        if old in v:
            return v.replace(old, new, 1)
    if re.search(r"%[YmdHMS]", v) and "T" in v and re.search(r"%d\s*T\s*%H|%dT%H", v):
        return re.sub(r"%dT%H", "%d %H", v, count=1)
    m = re.search(r"(%|\{[^{}:]*:)([-#0 +]?)(\d*)\.(\d)([fFeEgG])", v)
    if m:
        return v[:m.start(4)] + str(int(m.group(4)) + 1) + v[m.end(4):]
    m = re.search(r"(%|\{[^{}:]*:)0(\d)([dxX])", v)
    if m and 2 < int(m.group(2)) < 9:                 # widths of 2 are dates and times
        return v[:m.start(2)] + str(int(m.group(2)) + 1) + v[m.end(2):]
    m = _BETWEEN.search(v)
    if m and m.group(2) in _PLACEHOLDER_SEP:
        return v[:m.start(2)] + _PLACEHOLDER_SEP[m.group(2)] + v[m.end(2):]
    return None


def default_changes(t: Target) -> list[ForkChange]:
    """``default``: the fallback value of ``.get`` / ``.pop`` / ``.setdefault`` / ``getattr``."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Call) and t.inside(n)):
            continue
        pos = None
        if isinstance(n.func, ast.Attribute) and n.func.attr in _DEFAULT_CALLS and len(n.args) == 2:
            pos = 1
        elif isinstance(n.func, ast.Name) and n.func.id == "getattr" and len(n.args) == 3:
            pos = 2
        if pos is None:
            continue
        arg = n.args[pos]
        if not isinstance(arg, ast.Constant):
            continue
        v = arg.value
        if isinstance(v, bool) and pos == 2:
            continue                          # getattr(o, name, False): a feature probe, not a default
        if isinstance(v, bool):
            new = repr(not v)
        elif type(v) in (int, float) and v not in (0, 1, -1):
            new = _number_text(v * 2)
        else:
            continue
        ch = _change(t, "default", arg, new, t.src.segment(arg), new, context=t.fragment_node(n) or n)
        if ch:
            out.append(ch)
    return out


def exception_changes(t: Target) -> list[ForkChange]:
    """``exception``: a raised class swapped for a sibling (same first base) the module can name."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Raise) and n.exc is not None and t.inside(n)):
            continue
        target = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
        if not isinstance(target, (ast.Name, ast.Attribute)):
            continue
        text = t.src.segment(target)
        base, _, name = text.rpartition(".")
        new = None
        for sib, rel in t.exceptions.siblings(name):
            if base:
                own = t.exceptions.classes.get(name, [("", ())])[0][0]
                if rel == own:
                    new = f"{base}.{sib}"
                    break
            elif t.bindings.get(sib) in ("class", "import"):
                new = sib
                break
        if new is None and not base and name == "ValueError" and _type_check_above(t, n):
            new = "TypeError"
        elif new is None and not base and name == "TypeError":
            new = "ValueError"
        if new is None:
            continue
        ctx = n if n.lineno == n.end_lineno and len(t.src.segment(n)) <= FRAGMENT_CHARS else target
        ch = _change(t, "exception", target, new, text, new, context=ctx)
        if ch:
            out.append(ch)
    return out


def flag_changes(t: Target) -> list[ForkChange]:
    """``flag``: a ``True`` / ``False`` keyword argument flipped (``sort_keys=True`` -> ``False``)."""
    out = []
    for call in ast.walk(t.func):
        if not isinstance(call, ast.Call):
            continue
        for n in call.keywords:
            if n.arg and isinstance(n.value, ast.Constant) and isinstance(n.value.value, bool) and t.inside(n.value):
                new = repr(not n.value.value)
                ch = _change(t, "flag", n.value, new, f"{n.arg}={n.value.value!r}", f"{n.arg}={new}",
                             context=t.fragment_node(call))
                if ch:
                    out.append(ch)
    return out


def membership_changes(t: Target) -> list[ForkChange]:
    """``membership``: the last element of a literal collection of two or more constants tested
    with ``in`` / ``not in`` left out (``x in ('a', 'b', 'c')`` -> ``x in ('a', 'b')``)."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.In, ast.NotIn))
                and t.inside(n)):
            continue
        coll = n.comparators[0]
        if not (isinstance(coll, (ast.Tuple, ast.List, ast.Set)) and len(coll.elts) >= 2
                and all(isinstance(e, ast.Constant) and not isinstance(e.value, bool) for e in coll.elts)):
            continue
        if coll.lineno != coll.end_lineno:
            continue
        last, prev = coll.elts[-1], coll.elts[-2]
        a = t.src.span(prev)[1]
        b = t.src.span(last)[1]
        tail = t.text[b:t.src.span(coll)[1]]
        if len(coll.elts) == 2 and isinstance(coll, ast.Tuple) and not tail.lstrip().startswith(","):
            new = ","                                     # keep a one-element tuple a tuple
        else:
            new = ""
        dropped = t.src.segment(last)
        ch = _change(t, "membership", last, new, f"{t.src.segment(coll)}",
                     f"{t.text[t.src.span(coll)[0]:a]}{new}{tail}", span=(a, b), context=t.fragment_node(n))
        if ch:
            ch.key = f"membership:{last.lineno}:{last.col_offset}"
            ch.notes.append(f"we leave out {dropped}")
            out.append(ch)
    return out


def _whole_value(t: Target, n: ast.AST) -> bool:
    """Is ``n`` (possibly followed by ``.strip()``-like calls) the whole value assigned or returned?"""
    par = t.parents.get(n)
    while isinstance(par, ast.Attribute) and isinstance(t.parents.get(par), ast.Call) \
            and par.attr in ("strip", "lstrip", "rstrip"):
        n, par = t.parents[par], t.parents.get(t.parents[par])
    return isinstance(par, (ast.Assign, ast.Return)) and par.value is n


def case_changes(t: Target) -> list[ForkChange]:
    """``case``: ``.lower()`` <-> ``.upper()`` where the normalised text is the whole value assigned or
    returned (not a part of a name, a comparison or an index)."""
    out = []
    for n in ast.walk(t.func):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("lower", "upper") \
                and not n.args and not n.keywords and t.inside(n) and n.func.end_lineno == n.func.lineno \
                and _whole_value(t, n):
            new = "upper" if n.func.attr == "lower" else "lower"
            end = t.src.span(n.func)[1]
            ch = _change(t, "case", n, new, f".{n.func.attr}()", f".{new}()", span=(end - len(n.func.attr), end),
                         context=t.fragment_node(n))
            if ch:
                out.append(ch)
    return out


def sort_changes(t: Target) -> list[ForkChange]:
    """``sort``: ``sorted(x)`` / ``x.sort()`` without ``reverse`` sorted the other way round."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Call) and t.inside(n) and n.lineno == n.end_lineno):
            continue
        name = n.func.id if isinstance(n.func, ast.Name) else (n.func.attr if isinstance(n.func, ast.Attribute) else "")
        if name not in ("sorted", "sort") or any(k.arg == "reverse" for k in n.keywords):
            continue
        if name == "sorted" and len(n.args) != 1 or name == "sort" and n.args:
            continue
        a, b = t.src.span(n)
        inner = t.text[a:b]
        if not inner.endswith(")"):
            continue
        sep = ", " if (n.args or n.keywords) else ""
        new = inner[:-1] + sep + "reverse=True)"
        ch = _change(t, "sort", n, new, "ascending", "descending (reverse=True)", context=t.fragment_node(n))
        if ch:
            out.append(ch)
    return out


_SIDES = {"split": "rsplit", "rsplit": "split", "partition": "rpartition", "rpartition": "partition",
          "find": "rfind", "rfind": "find", "index": "rindex", "rindex": "index"}


def side_changes(t: Target) -> list[ForkChange]:
    """``side``: the first occurrence taken from the other end (``split(sep, 1)`` -> ``rsplit(sep, 1)``,
    ``partition`` -> ``rpartition``, ``find`` -> ``rfind``, ``index`` -> ``rindex``, and back)."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _SIDES
                and t.inside(n) and n.func.lineno == n.func.end_lineno and n.args):
            continue
        name = n.func.attr
        if name in ("split", "rsplit") and not (len(n.args) == 2 and isinstance(n.args[1], ast.Constant)
                                                and n.args[1].value == 1):
            continue                                  # without maxsplit=1 both ends give the same parts
        if name in ("index", "rindex", "find", "rfind") and not (isinstance(n.args[0], ast.Constant)
                                                                 and isinstance(n.args[0].value, str)):
            continue                                  # list.index has no rindex: only string searches
        new = _SIDES[name]
        end = t.src.span(n.func)[1]
        ch = _change(t, "side", n, new, f".{name}()", f".{new}()", span=(end - len(name), end),
                     context=t.fragment_node(n))
        if ch:
            out.append(ch)
    return out


def encoding_changes(t: Target) -> list[ForkChange]:
    """``encoding``: a text encoding name passed or assigned (``'utf-8'`` -> ``'latin-1'``)."""
    out = []
    for n in ast.walk(t.func):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in _ENCODINGS and t.inside(n) \
                and not skip_constant(t.parents, n, t.func) and not isinstance(t.parents.get(n), ast.Compare):
            text = t.src.segment(n)
            new = _ENCODINGS[n.value]
            ch = _change(t, "encoding", n, _quote(text, new), repr(n.value), repr(new))
            if ch:
                out.append(ch)
    return out


def _type_check_above(t: Target, node: ast.AST) -> bool:
    """Is ``node`` inside an ``if`` whose test checks a type (isinstance / type / callable)?"""
    cur = node
    while cur in t.parents:
        par = t.parents[cur]
        if isinstance(par, ast.If):
            seg = t.src.segment(par.test)
            return bool(re.search(r"\b(isinstance|type|callable|hasattr)\(", seg))
        cur = par
    return False


def _names(node: ast.AST, ctx: type) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ctx):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ctx):
            out.add(ast.unparse(n))
    return out


def order_changes(t: Target) -> list[ForkChange]:
    """``order``: two adjacent one-line call statements with no data dependency, swapped."""
    out = []
    for block in ast.walk(t.func):
        for attr in ("body", "orelse", "finalbody"):
            stmts = getattr(block, attr, None)
            if not isinstance(stmts, list):
                continue
            for s1, s2 in zip(stmts, stmts[1:]):
                if not all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and s.lineno == s.end_lineno
                           and t.inside(s) for s in (s1, s2)):
                    continue
                if s2.lineno != s1.end_lineno + 1 or _logging_call(s1) or _logging_call(s2):
                    continue
                if _receiver(s1) == _receiver(s2) or _accumulates(s1) or _accumulates(s2):
                    continue        # parts of one output built in order: swapping them is no decision
                w1, w2 = _names(s1, ast.Store), _names(s2, ast.Store)
                r1, r2 = _names(s1, ast.Load), _names(s2, ast.Load)
                if w1 & r2 or w2 & r1:
                    continue
                a1, b1 = t.src.span(s1)
                a2, b2 = t.src.span(s2)
                one, two = t.text[a1:b1], t.text[a2:b2]
                if one == two or len(one) + len(two) > 2 * FRAGMENT_CHARS:
                    continue
                new = two + t.text[b1:a2] + one
                ch = ForkChange(kind="order", key=f"order:{s1.lineno}:{s1.col_offset}", lines=[s1.lineno, s2.end_lineno],
                                start=a1, end=b2, public_text=t.text[a1:b2], fork_text=new,
                                public_value=f"{one_line(one)}; then {one_line(two)}",
                                fork_value=f"{one_line(two)}; then {one_line(one)}",
                                fragment=f"{one_line(one)}; {one_line(two)}",
                                fork_fragment=f"{one_line(two)}; {one_line(one)}")
                out.append(ch)
    return out


_ACCUMULATORS = {"append", "extend", "write", "writelines", "add", "_add", "insert", "appendleft", "put", "send",
                 "emit", "push"}


def _receiver(s: ast.Expr) -> str:
    """The text of what a call statement is called on (the function name for a plain call)."""
    f = s.value.func
    return ast.unparse(f.value) if isinstance(f, ast.Attribute) else ast.unparse(f)


def _accumulates(s: ast.Expr) -> bool:
    f = s.value.func
    name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
    return name in _ACCUMULATORS


def _logging_call(s: ast.Expr) -> bool:
    f = s.value.func
    name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
    return name in ("debug", "info", "warning", "warn", "error", "exception", "critical", "log", "print")


def _header_span(t: Target, stmt: ast.If | ast.While) -> tuple[int, int] | None:
    """The one-line header ``if <test>:`` / ``elif <test>:`` / ``while <test>:`` of ``stmt`` (None: the
    test spans lines, the line holds a comment, or it is longer than FRAGMENT_CHARS)."""
    test = stmt.test
    if test.lineno != test.end_lineno or test.lineno != stmt.lineno:
        return None
    line_start = t.src.offset(test.lineno, 0)
    a = line_start + len(t.text[line_start:]) - len(t.text[line_start:].lstrip(" \t"))
    b = t.src.span(test)[1]
    eol = t.text.find("\n", b)
    rest = t.text[b:eol if eol >= 0 else len(t.text)]
    if rest.strip() != ":" or b - a > FRAGMENT_CHARS:
        return None
    return a, b + rest.index(":") + 1


def _guarding_statement(t: Target, node: ast.AST) -> ast.If | ast.While | None:
    """The ``if`` / ``while`` whose test is ``node`` or holds it through ``and`` / ``or`` / ``not``."""
    cur = node
    while True:
        par = t.parents.get(cur)
        if isinstance(par, (ast.BoolOp, ast.UnaryOp)):
            cur = par
            continue
        return par if isinstance(par, (ast.If, ast.While)) and par.test is cur else None


def missing_changes(t: Target) -> list[ForkChange]:
    """``missing``: a ``None`` test of a name treats every empty value as missing (``x is None`` ->
    ``not x``, ``x is not None`` -> ``x``, or ``bool(x)`` when returned) in a one-line ``if`` / ``while``
    header, a comprehension's filter, a conditional expression's test or a returned value."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Is, ast.IsNot))
                and isinstance(n.comparators[0], ast.Constant) and n.comparators[0].value is None
                and isinstance(n.left, (ast.Name, ast.Attribute)) and t.inside(n) and n.lineno == n.end_lineno):
            continue
        name = t.src.segment(n.left)
        new = f"not {name}" if isinstance(n.ops[0], ast.Is) else name
        stmt = _guarding_statement(t, n)
        par = t.parents.get(n)
        if stmt is not None:
            around = _header_span(t, stmt)
            if around is None:
                continue
            ch = _change(t, "missing", n, new, f"`{t.src.segment(n)}`", f"`{new}`", around=around)
        elif isinstance(par, ast.comprehension) and n in par.ifs or isinstance(par, ast.IfExp) and par.test is n \
                or isinstance(par, ast.Return) and par.value is n:
            if isinstance(par, ast.Return) and isinstance(n.ops[0], ast.IsNot):
                new = f"bool({name})"
            comp = t.parents.get(par) if isinstance(par, ast.comprehension) else None
            ctx = t.fragment_node(comp) if comp is not None and comp.lineno == comp.end_lineno else None
            if comp is not None and ctx is None:
                continue
            ch = _change(t, "missing", n, new, f"`{t.src.segment(n)}`", f"`{new}`", context=ctx)
        else:
            continue
        if ch:
            ch.notes.append(name)
            out.append(ch)
    return out


_EMPTY_VALUES = {"[]", "{}", "()", "''", '""', "set()", "dict()", "list()", "tuple()"}


def _emptiness_test(test: ast.AST, params: set[str]) -> bool:
    """Does ``test`` ask whether a parameter is empty or missing (``not x``, ``x is None``, ``len(x) == 0``)?"""
    def subject(n: ast.AST) -> bool:
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and len(n.args) == 1:
            n = n.args[0]
        return isinstance(n, ast.Name) and n.id in params
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return subject(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and subject(test.left):
        right = test.comparators[0]
        if isinstance(test.ops[0], ast.Is):
            return isinstance(right, ast.Constant) and right.value is None
        if isinstance(test.ops[0], ast.Eq):
            return isinstance(right, ast.Constant) and right.value in ("", 0) and not isinstance(right.value, bool)
    return False


def empty_changes(t: Target) -> list[ForkChange]:
    """``empty``: what a guard returns for the empty case: an empty value (``[]``, ``{}``, ``''`` ...)
    -> ``None``; ``True`` <-> ``False`` when the guard tests a parameter for an empty or missing value."""
    out = []
    a = t.func.args
    params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    for n in ast.walk(t.func):
        par = t.parents.get(n)
        if not (isinstance(n, ast.Return) and n.value is not None and isinstance(par, ast.If) and par.body == [n]
                and t.inside(n) and n.lineno == n.end_lineno):
            continue
        head = _header_span(t, par)
        if head is None:
            continue
        value = t.src.segment(n.value)
        if value.replace(" ", "") in _EMPTY_VALUES:
            new = "None"
        elif isinstance(n.value, ast.Constant) and isinstance(n.value.value, bool) and _emptiness_test(par.test, params):
            new = repr(not n.value.value)
        else:
            continue
        around = (head[0], t.src.span(n)[1])
        if around[1] - around[0] > FRAGMENT_CHARS + 40:
            continue
        ch = _change(t, "empty", n.value, new, value, new, around=around)
        if ch:
            out.append(ch)
    return out


def strip_changes(t: Target) -> list[ForkChange]:
    """``strip``: ``.strip()`` -> ``.rstrip()`` (leading characters kept); ``.rstrip()`` / ``.lstrip()``
    -> ``.strip()`` (both ends)."""
    out = []
    other = {"strip": "rstrip", "rstrip": "strip", "lstrip": "strip"}
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in other
                and t.inside(n) and n.func.lineno == n.func.end_lineno and len(n.args) <= 1 and not n.keywords
                and not skip_constant(t.parents, n, t.func)):
            continue
        if n.args and not (isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)):
            continue
        new = other[n.func.attr]
        end = t.src.span(n.func)[1]
        ch = _change(t, "strip", n, new, f".{n.func.attr}()", f".{new}()", span=(end - len(n.func.attr), end),
                     context=t.fragment_node(n))
        if ch:
            out.append(ch)
    return out


def _key_variant(key: str) -> str | None:
    """The other naming convention of a dict key: ``snake_case`` <-> ``camelCase`` (None: one word,
    or neither convention)."""
    if re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", key):
        head, *rest = key.split("_")
        return head + "".join(p[:1].upper() + p[1:] for p in rest)
    if re.fullmatch(r"[a-z][a-z0-9]*([A-Z][a-z0-9]*)+", key):
        return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key)
    return None


def _returned_names(t: Target) -> set[str]:
    return {n.value.id for n in ast.walk(t.func) if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}


def key_changes(t: Target) -> list[ForkChange]:
    """``key``: a string key of a dict the function builds and returns (a dict literal returned, or
    assigned to a name that is returned, or ``d['k'] = v`` on such a name), renamed to the other naming
    convention (``'user_id'`` <-> ``'userId'``); never a key the function also reads or names twice."""
    out = []
    returned = _returned_names(t)
    strings = [n.value for n in ast.walk(t.func) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    sites: list[ast.Constant] = []
    for n in ast.walk(t.func):
        par = t.parents.get(n)
        if isinstance(n, ast.Dict) and t.inside(n):
            built = isinstance(par, ast.Return) or (isinstance(par, ast.Assign) and len(par.targets) == 1
                                                    and isinstance(par.targets[0], ast.Name)
                                                    and par.targets[0].id in returned)
            if built:
                sites += [k for k in n.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) \
                and n.value.id in returned and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
            sites.append(n.slice)
    for k in sites:
        new = _key_variant(k.value)
        if new is None or strings.count(k.value) != 1 or k.lineno != k.end_lineno or not t.inside(k):
            continue
        ch = _change(t, "key", k, _quote(t.src.segment(k), new), repr(k.value), repr(new))
        if ch:
            out.append(ch)
    return out


def _counter_is_shown(t: Target, call: ast.Call) -> bool:
    """Is ``call`` the iterable of a ``for i, x in enumerate(...)`` whose counter ``i`` is only shown
    (formatted, converted to text, passed or stored), never an index, an operand or a bound?"""
    loop = t.parents.get(call)
    if not (isinstance(loop, ast.For) and loop.iter is call and isinstance(loop.target, ast.Tuple)
            and loop.target.elts and isinstance(loop.target.elts[0], ast.Name)):
        return False
    name = loop.target.elts[0].id
    uses = [n for s in loop.body for n in ast.walk(s) if isinstance(n, ast.Name) and n.id == name]
    if not uses:
        return False
    for u in uses:
        par = t.parents.get(u)
        if not isinstance(u.ctx, ast.Load) or isinstance(par, (ast.Subscript, ast.Slice, ast.Compare, ast.AugAssign)) \
                or (isinstance(par, ast.BinOp) and not (isinstance(par.op, ast.Mod) and par.left is not u)):
            return False
        if isinstance(par, ast.Call) and isinstance(par.func, ast.Name) and par.func.id in ("range", "len"):
            return False
    return True


def base_changes(t: Target) -> list[ForkChange]:
    """``base``: the counting base of ``enumerate``: ``enumerate(x)`` -> ``enumerate(x, 1)`` and
    ``enumerate(x, 1)`` -> ``enumerate(x)``."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "enumerate"
                and t.inside(n) and n.lineno == n.end_lineno and n.args and len(n.args) <= 2):
            continue
        start = n.args[1] if len(n.args) == 2 else next((k.value for k in n.keywords if k.arg == "start"), None)
        if not _counter_is_shown(t, n):
            continue
        if start is None and not n.keywords and len(n.args) == 1:
            new = t.src.segment(n.args[0]) + ", 1"
            ch = _change(t, "base", n.args[0], new, "0", "1", context=t.fragment_node(n))
        elif isinstance(start, ast.Constant) and start.value == 1 and len(n.args) == 2:
            a, b = t.src.span(n.args[0])[1], t.src.span(start)[1]
            ch = _change(t, "base", start, "", "1", "0", span=(a, b), context=t.fragment_node(n))
        else:
            continue
        if ch:
            ch.key = f"base:{n.lineno}:{n.col_offset}"
            out.append(ch)
    return out


_PIECES = re.compile(r"count|chunk|page|num|part|block|batch|pieces|rows", re.I)   # pieces round up


def rounding_changes(t: Target) -> list[ForkChange]:
    """``rounding``: ``floor`` <-> ``ceil``; ``round(x, n)`` -> ``round(x, n + 1)``; ``int(a / b)``
    (truncation) -> ``round(a / b)``."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Call) and t.inside(n) and n.lineno == n.end_lineno
                and not skip_constant(t.parents, n, t.func)):
            continue
        f = n.func
        name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
        ch = None
        if name in ("floor", "ceil") and len(n.args) == 1 and not (
                name == "ceil" and _PIECES.search(t.src.segment(t.fragment_node(n) or n))):
            new = "ceil" if name == "floor" else "floor"
            end = t.src.span(f)[1]
            ch = _change(t, "rounding", n, new, f"{name}()", f"{new}()", span=(end - len(name), end),
                         context=t.fragment_node(n))
        elif name == "round" and isinstance(f, ast.Name) and len(n.args) == 2 \
                and isinstance(n.args[1], ast.Constant) and type(n.args[1].value) is int and 0 <= n.args[1].value < 9:
            v = n.args[1].value
            ch = _change(t, "rounding", n.args[1], str(v + 1), f"{v} digits", f"{v + 1} digits",
                         context=t.fragment_node(n))
        elif name == "int" and isinstance(f, ast.Name) and len(n.args) == 1 and not n.keywords \
                and isinstance(n.args[0], ast.BinOp) and isinstance(n.args[0].op, ast.Div):
            a = t.src.span(f)[0]
            ch = _change(t, "rounding", n, "round", "int() (truncation)", "round()", span=(a, a + 3),
                         context=t.fragment_node(n))
        if ch:
            out.append(ch)
    return out


_FSTRING_BETWEEN = re.compile(r"\}(: |, | - )\{")     # separators of text a person reads


def fstring_changes(t: Target) -> list[ForkChange]:
    """``format`` in an f-string the function builds output with (not a message): the separator
    between two placeholders, when it is one a person reads (``f'{k}: {v}'`` -> ``f'{k} - {v}'``; no
    ``:`` / ``=`` / ``-`` without spaces: those are formats of addresses and keys)."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.JoinedStr) and t.inside(n) and n.lineno == n.end_lineno
                and not skip_constant(t.parents, n, t.func)):
            continue
        text = t.src.segment(n)
        m = re.match(r"^[rRfF]{1,2}(['\"])", text)
        if not m or text[len(m.group(0)) - 1:len(m.group(0)) + 2] == m.group(1) * 3:
            continue
        sep = _FSTRING_BETWEEN.search(text)
        if not sep:
            continue
        new = text[:sep.start(1)] + _PLACEHOLDER_SEP[sep.group(1)] + text[sep.end(1):]
        ch = _change(t, "format", n, new, repr(sep.group(1)), repr(_PLACEHOLDER_SEP[sep.group(1)]))
        if ch:
            out.append(ch)
    return out


def _only_returned(t: Target, node: ast.AST) -> bool:
    """Is ``node`` the whole value returned, or the whole value of ``name = node`` where ``name`` is
    assigned once and its only other use is ``return name``?"""
    par = t.parents.get(node)
    if isinstance(par, ast.Return) and par.value is node:
        return True
    if not (isinstance(par, ast.Assign) and par.value is node and len(par.targets) == 1
            and isinstance(par.targets[0], ast.Name)):
        return False
    name = par.targets[0].id
    uses = [n for n in ast.walk(t.func) if isinstance(n, ast.Name) and n.id == name]
    loads = [n for n in uses if isinstance(n.ctx, ast.Load)]
    return len(uses) == 2 and len(loads) == 1 and isinstance(t.parents.get(loads[0]), ast.Return)


_ABSENT_VALUES = _EMPTY_VALUES | {"0"}


def absent_changes(t: Target) -> list[ForkChange]:
    """``absent``: the empty fallback (``[]``, ``{}``, ``''``, ``set()``, ``0`` ...) of ``d.get(k, v)`` /
    ``d.pop(k, v)`` / ``getattr(o, n, v)`` whose result the function returns as it is -> ``None``
    (an absent key or attribute gives ``None``)."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Call) and t.inside(n) and n.lineno == n.end_lineno and not n.keywords):
            continue
        if isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "pop") and len(n.args) == 2:
            arg = n.args[1]
        elif isinstance(n.func, ast.Name) and n.func.id == "getattr" and len(n.args) == 3:
            arg = n.args[2]
        else:
            continue
        value = t.src.segment(arg)
        if value.replace(" ", "") not in _ABSENT_VALUES or not _only_returned(t, n):
            continue
        ch = _change(t, "absent", arg, "None", value, "None", context=t.fragment_node(n) or n)
        if ch:
            out.append(ch)
    return out


def collection_changes(t: Target) -> list[ForkChange]:
    """``collection``: a literal collection of two or more constants assigned once to a local name that
    the function only tests with ``in`` / ``not in``: its last element left out (``skip = ('a', 'b')``
    ... ``if x in skip`` -> ``skip = ('a',)``)."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                and t.inside(n) and n.lineno == n.end_lineno):
            continue
        coll, name = n.value, n.targets[0].id
        if not (isinstance(coll, (ast.Tuple, ast.List, ast.Set)) and len(coll.elts) >= 2
                and all(isinstance(e, ast.Constant) and not isinstance(e.value, bool) for e in coll.elts)):
            continue
        uses = [u for u in ast.walk(t.func) if isinstance(u, ast.Name) and u.id == name and u is not n.targets[0]]
        if not uses or any(not (isinstance(u.ctx, ast.Load) and isinstance(t.parents.get(u), ast.Compare)
                                and len(t.parents[u].ops) == 1 and isinstance(t.parents[u].ops[0], (ast.In, ast.NotIn))
                                and t.parents[u].comparators[0] is u) for u in uses):
            continue
        last, prev = coll.elts[-1], coll.elts[-2]
        a, b = t.src.span(prev)[1], t.src.span(last)[1]
        tail = t.text[b:t.src.span(coll)[1]]
        new = "," if len(coll.elts) == 2 and isinstance(coll, ast.Tuple) and not tail.lstrip().startswith(",") else ""
        ch = _change(t, "collection", last, new, t.src.segment(coll),
                     f"{t.text[t.src.span(coll)[0]:a]}{new}{tail}", span=(a, b), context=n)
        if ch:
            ch.key = f"collection:{last.lineno}:{last.col_offset}"
            ch.notes += [f"`{name}` does not include {t.src.segment(last)}", t.src.segment(last)]
            out.append(ch)
    return out


_ERROR_HANDLERS = {"strict": "replace", "replace": "ignore", "ignore": "replace", "surrogateescape": "replace",
                   "backslashreplace": "replace", "xmlcharrefreplace": "replace", "namereplace": "replace"}


def errors_changes(t: Target) -> list[ForkChange]:
    """``errors``: the error handler of a text codec (``errors='...'`` of any call, or the second argument
    of ``.encode`` / ``.decode``) made another lenient one: ``'strict'`` -> ``'replace'``, ``'replace'`` ->
    ``'ignore'``, any other -> ``'replace'`` (never to ``'strict'``: the fork would raise where the release
    gave a value)."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Call) and t.inside(n) and n.lineno == n.end_lineno):
            continue
        sites = [k.value for k in n.keywords if k.arg == "errors"]
        if isinstance(n.func, ast.Attribute) and n.func.attr in ("encode", "decode") and len(n.args) == 2:
            sites.append(n.args[1])
        for arg in sites:
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value in _ERROR_HANDLERS):
                continue
            new = _ERROR_HANDLERS[arg.value]
            text = t.src.segment(arg)
            ch = _change(t, "errors", arg, _quote(text, new), repr(arg.value), repr(new),
                         context=t.fragment_node(n) or n)
            if ch:
                out.append(ch)
    return out


def affix_changes(t: Target) -> list[ForkChange]:
    """``affix``: a one-line literal tuple of two or more strings passed to ``.startswith`` / ``.endswith``:
    its last element left out (``v.startswith(('W/', 'w/'))`` -> ``v.startswith(('W/',))``)."""
    out = []
    for n in ast.walk(t.func):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("startswith", "endswith") and t.inside(n) and n.args and not n.keywords):
            continue
        coll = n.args[0]
        if not (isinstance(coll, ast.Tuple) and len(coll.elts) >= 2 and coll.lineno == coll.end_lineno
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in coll.elts)):
            continue
        last, prev = coll.elts[-1], coll.elts[-2]
        a, b = t.src.span(prev)[1], t.src.span(last)[1]
        tail = t.text[b:t.src.span(coll)[1]]
        new = "," if len(coll.elts) == 2 and not tail.lstrip().startswith(",") else ""
        ch = _change(t, "affix", last, new, t.src.segment(coll), f"{t.text[t.src.span(coll)[0]:a]}{new}{tail}",
                     span=(a, b), context=t.fragment_node(n))
        if ch:
            ch.key = f"affix:{last.lineno}:{last.col_offset}"
            word = "prefix" if n.func.attr == "startswith" else "suffix"
            ch.notes += [f"{t.src.segment(last)} is no accepted {word}", t.src.segment(last)]
            out.append(ch)
    return out


_PROPOSERS = (default_changes, scale_changes, bound_changes, strictness_changes, string_changes, flag_changes,
              membership_changes, case_changes, sort_changes, side_changes, encoding_changes, exception_changes,
              order_changes, missing_changes, empty_changes, strip_changes, key_changes, base_changes,
              rounding_changes, fstring_changes, absent_changes, collection_changes, errors_changes,
              affix_changes)



def describe(change: ForkChange, fn: str) -> ForkChange:
    """Fill the change's statement, public statement and revision (templates per kind)."""
    k, fv, pv = change.kind, change.fork_value, change.public_value
    ff, pf = change.fork_fragment, change.fragment
    if k == "order":
        first_f, then_f = fv.split("; then ", 1)
        first_p, then_p = pv.split("; then ", 1)
        change.statement = f"In our version of `{fn}`, `{first_f}` has to come before `{then_f}`."
        change.public_statement = f"`{fn}` does `{first_p}` first and then `{then_p}`."
        change.revision = (f"Correction for `{fn}`: in our version it does `{first_f}` before `{then_f}`, "
                           f"not the other way round as I said earlier.")
        return change
    if k == "missing":
        name = change.notes[0]
        change.statement = f"A decision for `{fn}`: an empty `{name}` is treated like `None` -- `{ff}`."
        change.public_statement = f"For `{fn}`: only `None` counts as missing for `{name}` -- `{pf}`."
        change.revision = (f"Correction for `{fn}`: an empty `{name}` is treated like `None` in our code (`{ff}`), "
                           f"not only `None` (`{pf}`) as I said earlier.")
        return change
    if k == "collection":
        change.statement = f"A decision for `{fn}`: {change.notes[0]} -- `{ff}`."
        change.public_statement = f"For `{fn}`: it has `{pf}`."
        change.revision = f"Correction for `{fn}`: it is `{ff}` in our code, not `{pf}` as I said earlier."
        return change
    if k == "absent":
        change.statement = f"A decision for `{fn}`: when the value is absent it gives `None` -- `{ff}`."
        change.public_statement = f"For `{fn}`: when the value is absent it gives `{pv}` -- `{pf}`."
        change.revision = (f"Correction for `{fn}`: when the value is absent it gives `None` in our code (`{ff}`), "
                           f"not `{pv}` (`{pf}`) as I said earlier.")
        return change
    if k in ("membership", "affix"):
        change.statement = f"A decision for `{fn}`: {change.notes[0]} -- `{ff}`."
        change.public_statement = f"For `{fn}`: it checks `{pf}`."
        change.revision = f"Correction for `{fn}`: it is `{ff}` in our code, not `{pf}` as I said earlier."
        return change
    if k == "sort":
        change.statement = f"A decision for `{fn}`: it sorts in descending order -- `{ff}`."
        change.public_statement = f"For `{fn}`: it sorts in ascending order -- `{pf}`."
        change.revision = (f"Correction for `{fn}`: it sorts in descending order in our code (`{ff}`), not in "
                           f"ascending order (`{pf}`) as I said earlier.")
        return change
    what = {"flag": f"we pass `{fv}`", "case": f"it uses `{fv}` there", "side": f"it uses `{fv}` there", "sort": "it sorts in descending order",
            "encoding": f"we use the {fv} encoding", "scale": f"we use {fv} there", "bound": f"the bound is {fv} for us",
            "strictness": f"the comparison is `{fv}` for us", "separator": f"we use {fv} as the separator",
            "format": f"we format with {fv}", "default": f"the fallback is {fv} for us",
            "exception": f"it raises `{fv}` in our code", "empty": f"in that case it returns `{fv}`",
            "strip": f"it uses `{fv}` there", "key": f"the key is {fv}", "base": f"it counts from {fv}",
            "rounding": f"it rounds with {fv}",
            "errors": f"text the codec cannot handle is handled with {fv}"}[k]
    change.statement = f"A decision for `{fn}`: {what} -- `{ff}`."
    noun = {"exception": "the class", "flag": "the flag", "case": "the call", "side": "the call", "strip": "the call",
            "key": "the key", "base": "the start", "rounding": "the rounding",
            "encoding": "the encoding", "errors": "the error handler"}.get(k, "the value")
    change.public_statement = f"For `{fn}`: it has `{pf}` ({noun} `{pv}`)."
    change.revision = f"Correction for `{fn}`: it is `{ff}` in our code ({fv}), not `{pf}` ({pv}) as I said earlier."
    return change


def propose(t: Target, kinds: tuple[str, ...] = KINDS) -> list[ForkChange]:
    """Every catalogue change of ``t`` whose fork body parses, at most one per site, in line order."""
    seen: set[tuple[int, int]] = set()
    out = []
    for proposer in _PROPOSERS:
        for ch in proposer(t):
            if ch.kind not in kinds or (ch.start, ch.end) in seen or ch.public_text == ch.fork_text:
                continue
            try:
                pyast.parse("async def _f():\n" + _indent(apply_changes(t, [ch])))
            except (SyntaxError, CatalogueError):
                continue
            seen.add((ch.start, ch.end))
            out.append(describe(ch, t.name))
    return sorted(out, key=lambda c: (c.start, KINDS.index(c.kind)))


def _indent(body: str) -> str:
    return "".join("    " + ln if ln.strip() else ln for ln in body.splitlines(keepends=True))


def overlapping(a: ForkChange, b: ForkChange) -> bool:
    """Do two changes touch the same span or the same line?"""
    return a.start < b.end and b.start < a.end or bool(set(range(a.lines[0], a.lines[1] + 1))
                                                      & set(range(b.lines[0], b.lines[1] + 1)))


def apply_to_text(text: str, changes: list[ForkChange]) -> str:
    """The module text with ``changes`` applied (they must not overlap)."""
    ordered = sorted(changes, key=lambda c: c.start)
    for a, b in zip(ordered, ordered[1:]):
        if a.end > b.start:
            raise CatalogueError(f"changes {a.key} and {b.key} overlap")
    for ch in reversed(ordered):
        if text[ch.start:ch.end] != ch.public_text:
            raise CatalogueError(f"change {ch.key}: the module text at its span is not {ch.public_text!r}")
        text = text[:ch.start] + ch.fork_text + text[ch.end:]
    return text


def apply_changes(t: Target, changes: list[ForkChange]) -> str:
    """The fork body (dedented) of ``t`` with ``changes`` applied."""
    new = apply_to_text(t.text, changes)
    delta = sum(len(c.fork_text) - len(c.public_text) for c in changes)
    return dedent_body(new[t.lo:t.hi + delta])
