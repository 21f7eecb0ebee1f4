"""Plausible alternatives for a fact, drawn from the project's own vocabulary.

A distractor states a counterfactual: the fact with one token replaced. The replacement comes
from the code around it, never from a character edit of the token:

- an exception class: another class raised in the same module (else elsewhere in the project);
- a named constant (``UPPER_CASE`` name or ``mod.UPPER_CASE`` attribute): another constant of the
  same kind used in the module (same attribute base; for names, the same literal type);
- a string: another string constant of the module (else the project) with the same shape
  (identifier, dashed word, path, phrase, punctuation; the same placeholder count and letter case);
- a number: another number of the module of the same type, else a neighbouring value (x2, /2,
  x10, /10);
- a called function or method: another function of the module, another method of the class,
  another method called on the same object in the module;
- an attribute of ``self``: another attribute of the class;

and in every case the replacement is at least ``MIN_EDIT`` characters (Levenshtein) away from the
original token, so a one-character edit (``'Cookie'`` -> ``'Cookies'``, ``<`` -> ``<=``) is never
a distractor.
"""

from __future__ import annotations

import ast
import builtins
import math
import re
from collections import Counter
from dataclasses import dataclass, field

from benchmarks.locoeval.verified.source import SourceText, parents_of
from reconmem.platform import pyast

MIN_EDIT = 2
CONSTANT_NAME = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
_LOG_CALLS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log", "print", "_",
              "gettext", "ngettext", "deprecated"}


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def string_shape(s: str) -> tuple[str, int, str]:
    """(shape class, placeholder count, letter case) of a string constant."""
    holders = len(re.findall(r"%[-#0 +]*\d*(?:\.\d+)?[sdrifxXeEgGc]|\{[^{}]*\}", s))
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s):
        cls = "ident-upper" if s.isupper() else ("ident-lower" if s.islower() or "_" in s else "ident")
    elif re.fullmatch(r"[A-Za-z0-9]+(-[A-Za-z0-9]+)+", s):
        cls = "dashed"
    elif "/" in s or "\\" in s:
        cls = "path"
    elif not any(c.isalnum() for c in s):
        cls = "symbol"
    elif " " in s.strip():
        cls = "phrase"
    else:
        cls = "other"
    letters = "".join(c for c in s if c.isalpha())
    case = "lower" if letters.islower() else "upper" if letters.isupper() else "mixed" if letters else "none"
    return cls, holders, case


def _is_docstring(parents: dict[ast.AST, ast.AST], node: ast.Constant) -> bool:
    par = parents.get(node)
    return isinstance(par, ast.Expr)


def skip_constant(parents: dict[ast.AST, ast.AST], node: ast.AST, stop: ast.AST | None = None) -> bool:
    """Constants that are not program facts: docstrings and bare strings, f-string parts,
    annotations, exception and assert messages, logging / printing / translation calls."""
    cur = node
    while cur in parents and cur is not stop:
        par = parents[cur]
        if isinstance(par, (ast.JoinedStr, ast.Raise, ast.Assert)):
            return True
        if isinstance(par, ast.Expr) and isinstance(cur, ast.Constant):
            return True
        if getattr(par, "annotation", None) is cur or getattr(par, "returns", None) is cur:
            return True
        if isinstance(par, ast.Call):
            f = par.func
            name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
            if name in _LOG_CALLS:
                return True
        if isinstance(par, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return False
        cur = par
    return False


def module_bindings(tree: ast.Module) -> dict[str, str]:
    """Names bound at module level (incl. inside top-level if/try): name -> ``import`` | ``def`` |
    ``class`` | the type name of a literal assignment | ``assign``."""
    out: dict[str, str] = {}

    def visit(stmts: list[ast.stmt]) -> None:
        for s in stmts:
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                for a in s.names:
                    out.setdefault((a.asname or a.name).split(".")[0], "import")
            elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.setdefault(s.name, "def")
            elif isinstance(s, ast.ClassDef):
                out.setdefault(s.name, "class")
            elif isinstance(s, (ast.Assign, ast.AnnAssign)):
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                value = s.value
                kind = type(value.value).__name__ if isinstance(value, ast.Constant) else "assign"
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            out.setdefault(n.id, kind)
            elif isinstance(s, ast.If):
                visit(s.body)
                visit(s.orelse)
            elif isinstance(s, ast.Try):
                visit(s.body)
                visit(s.orelse)
                visit(s.finalbody)
                for h in s.handlers:
                    visit(h.body)
    visit(tree.body)
    return out


@dataclass
class Vocabulary:
    """The code vocabulary of one module, with the project's as the fallback tier."""

    exceptions: Counter = field(default_factory=Counter)        # class expression -> times raised
    strings: Counter = field(default_factory=Counter)           # value -> uses
    numbers: Counter = field(default_factory=Counter)           # value -> uses
    constants: Counter = field(default_factory=Counter)         # `NAME` / `base.NAME` -> uses
    calls: dict[str, Counter] = field(default_factory=dict)     # called on a base text -> attribute -> uses
    functions: Counter = field(default_factory=Counter)         # module-level functions -> calls in the module
    classes: dict[str, "ClassVocabulary"] = field(default_factory=dict)
    bindings: dict[str, str] = field(default_factory=dict)      # module-level names
    project: "Vocabulary | None" = None

    @classmethod
    def of_module(cls, text: str, tree: ast.Module | None = None) -> "Vocabulary":
        tree = tree or pyast.parse(text)
        src = SourceText(text)
        voc = cls(bindings=module_bindings(tree))
        parents = parents_of(tree)
        voc.functions.update({s.name: 0 for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))})
        voc.constants.update({n: 0 for n, kind in voc.bindings.items() if CONSTANT_NAME.match(n)})
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                voc.classes.setdefault(node.name, ClassVocabulary.of_class(node))
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Attribute):
                    base = src.segment(f.value)
                    if base and "\n" not in base:
                        voc.calls.setdefault(base, Counter())[f.attr] += 1
                elif isinstance(f, ast.Name) and f.id in voc.functions:
                    voc.functions[f.id] += 1
            if isinstance(node, ast.Raise) and node.exc is not None:
                target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(target, (ast.Name, ast.Attribute)):
                    voc.exceptions[src.segment(target)] += 1
            elif isinstance(node, ast.Constant) and not skip_constant(parents, node):
                v = node.value
                if isinstance(v, bool) or v is None:
                    continue
                if isinstance(v, str) and "\n" not in v and len(v) <= 60:
                    voc.strings[v] += 1
                elif isinstance(v, (int, float)):
                    voc.numbers[v] += 1
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and CONSTANT_NAME.match(node.id):
                voc.constants[node.id] += 1
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and CONSTANT_NAME.match(node.attr):
                seg = src.segment(node)
                if seg and "\n" not in seg:
                    voc.constants[seg] += 1
        return voc

    def merged(self, other: "Vocabulary") -> None:
        """Add ``other``'s counts (building the project tier)."""
        self.exceptions.update(other.exceptions)
        self.strings.update(other.strings)
        self.numbers.update(other.numbers)
        self.constants.update(other.constants)

    # ------------------------------------------------------------------ alternatives
    def resolvable(self, expr: str) -> bool:
        """Does the first name of ``expr`` resolve at module level (or as a builtin)?"""
        root = expr.split(".", 1)[0]
        return root in self.bindings or hasattr(builtins, root)

    def exception_alternatives(self, exc: str) -> list[tuple[str, str]]:
        """[(class expression, source tier)] for a raised class, most used first."""
        out: list[tuple[str, str]] = []
        tiers = [("module", self.exceptions)]
        if self.project is not None:
            tiers.append(("project", self.project.exceptions))
        short = exc.rsplit(".", 1)[-1]
        for tier, counts in tiers:
            for alt, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
                alt_short = alt.rsplit(".", 1)[-1]
                if alt_short == short or edit_distance(alt_short, short) < MIN_EDIT:
                    continue
                if not self.resolvable(alt) or any(a == alt for a, _ in out):
                    continue
                out.append((alt, tier))
        return out

    def constant_alternatives(self, expr: str) -> list[tuple[str, str]]:
        """Other constants of the same kind: same attribute base, or module names of the same literal type."""
        base, _, name = expr.rpartition(".")
        kind = self.bindings.get(expr) if not base else None
        out: list[tuple[str, str]] = []
        for alt, _ in sorted(self.constants.items(), key=lambda kv: (-kv[1], kv[0])):
            a_base, _, a_name = alt.rpartition(".")
            if alt == expr or a_base != base or edit_distance(a_name, name) < MIN_EDIT:
                continue
            if not base and (self.bindings.get(alt) != kind or kind in (None, "def", "class", "assign")):
                if not (kind == "import" and self.bindings.get(alt) == "import"):
                    continue
            if not self.resolvable(alt):
                continue
            out.append((alt, "module"))
        return out

    def call_alternatives(self, base: str, name: str, class_name: str | None) -> list[tuple[str, str]]:
        """Another callee: a module function (``base`` empty), another method of the class (``self``
        / ``cls``), or another method called on the same object in the module."""
        if not base:
            pool = [(f, "module") for f, _ in sorted(self.functions.items(), key=lambda kv: (-kv[1], kv[0]))]
        elif base in ("self", "cls") and class_name in self.classes:
            pool = [(m, "class") for m in self.classes[class_name].method_names()]
        else:
            pool = [(m, "module") for m, _ in sorted(self.calls.get(base, Counter()).items(),
                                                      key=lambda kv: (-kv[1], kv[0]))]
        out = []
        for alt, tier in pool:
            if alt == name or alt.startswith("__") or edit_distance(alt, name) < MIN_EDIT:
                continue
            out.append((f"{base}.{alt}" if base else alt, tier))
        return out

    def attribute_alternatives(self, base: str, name: str, class_name: str | None) -> list[tuple[str, str]]:
        """Another data attribute of the class (``self.x`` -> ``self.y``)."""
        if class_name not in self.classes:
            return []
        return [(f"{base}.{alt}", "class") for alt in self.classes[class_name].data_attributes()
                if alt != name and edit_distance(alt, name) >= MIN_EDIT]

    def string_alternatives(self, value: str) -> list[tuple[str, str]]:
        """Other string constants of the same shape, nearest in length first."""
        shape = string_shape(value)
        out: list[tuple[str, str]] = []
        tiers = [("module", self.strings)]
        if self.project is not None:
            tiers.append(("project", self.project.strings))
        for tier, counts in tiers:
            ranked = sorted(counts.items(), key=lambda kv: (abs(len(kv[0]) - len(value)), -kv[1], kv[0]))
            for alt, _ in ranked:
                if alt == value or alt.lower() == value.lower() or string_shape(alt) != shape:
                    continue
                if edit_distance(alt, value) < MIN_EDIT or any(a == repr(alt) for a, _ in out):
                    continue
                if value and alt and not (0.34 <= len(alt) / len(value) <= 3.0):
                    continue
                out.append((repr(alt), tier))
        return out

    def number_alternatives(self, value: int | float) -> list[tuple[str, str]]:
        """Other numbers of the module of the same type, then neighbouring values; nearest first."""
        def dist(x: int | float) -> float:
            if value == 0 or x == 0 or (x < 0) != (value < 0):
                return abs(x - value) + 100.0
            return abs(math.log(abs(x) / abs(value)))

        seen: set[str] = set()
        out: list[tuple[str, str]] = []
        pool = [(x, "module") for x in self.numbers if type(x) is type(value) and x != value and dist(x) <= 3.0]
        gen = [value * 2, value * 10]
        if isinstance(value, int):
            gen += [value // d for d in (2, 10) if value % d == 0 and abs(value) >= 2 * d]
        else:
            gen += [value / 2, value / 10]
        pool += [(x, "neighbour") for x in gen if x != value]
        for x, tier in sorted(pool, key=lambda p: (p[1] != "module", dist(p[0]), str(p[0]))):
            lit = repr(x)
            if lit in seen or edit_distance(lit, repr(value)) < MIN_EDIT:
                continue
            seen.add(lit)
            out.append((lit, tier))
        return out


@dataclass
class ClassVocabulary:
    """The methods and the ``self`` attributes of one class."""

    methods: Counter = field(default_factory=Counter)
    attributes: Counter = field(default_factory=Counter)
    properties: set = field(default_factory=set)

    @classmethod
    def of_class(cls, node: ast.ClassDef) -> "ClassVocabulary":
        voc = cls()
        for s in node.body:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in s.decorator_list}
                if decorators & {"property", "cached_property", "setter", "getter", "deleter"}:
                    voc.properties.add(s.name)
                else:
                    voc.methods[s.name] += 1
        called = {n.func.attr for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                if n.attr not in voc.methods and n.attr not in called and not n.attr.startswith("__"):
                    voc.attributes[n.attr] += 1
        return voc

    def method_names(self) -> list[str]:
        return sorted(self.methods)

    def data_attributes(self) -> list[str]:
        return [a for a, _ in sorted(self.attributes.items(), key=lambda kv: (-kv[1], kv[0]))]
