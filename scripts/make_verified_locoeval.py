"""Generate the verified, scripted LoCoEval-format sample set (``benchmarks/locoeval/verified/``).

    python -m scripts.make_verified_locoeval [--deveval-data PATH] [--out-dir DIR] [--seed 0]
                                             [--projects ...] [--workers 2]

Deterministic composition from DevEval task records, the projects' PyPI sdists and text templates
(no LLM). Per candidate task (oracle-validated in ``pypi_sources.json``):

1. **Facts** are extracted mechanically from the reference body (Python ``ast``): the exception
   class a ``raise`` uses (with its ``if`` condition), a comparison operator, a numeric / string /
   boolean constant inside an expression. Every fact is grounded in file line ranges inside the
   reference body and names the code it states (``facts``: strings the stating turn must contain).
2. Every fact has a **counterfactual body**: the reference body with exactly that fact changed
   (another exception class, the neighbouring operator, another constant). A fact is kept only if
   its counterfactual body FAILS the task's DevEval tests (the fact is consequential). One kept
   fact per task becomes the distractor (stated as the counterfactual), later revised.
   The reference body itself must pass under the executor in use (the manifest's oracle ran
   elsewhere; a sandbox change can break a test, e.g. one that needs a passwd entry).
3. The **alternative body** is the reference body after AST restructuring: guard clauses turned
   into if/else, if/else branches swapped under a negated condition, conditional expressions
   turned into if statements, local variables renamed. It is kept only if it PASSES the tests.
   (It is a mechanical transformation of the reference, not an independent re-implementation.)
4. Tasks with >= 2 kept facts and a passing alternative body are grouped 1-3 per sample; each
   sample is laid out as a single-hop or multi-hop outline of 24-50 scripted turns (requirement,
   info, distractor, revision, retrospective, noise = questions about other parts of the
   repository, chat).

Outputs in ``--out-dir``: ``samples.jsonl`` (what the runner reads), ``samples.verification.jsonl``
(per task: grounding ranges, counterfactual, distractor and alternative bodies -- never handed to
methods), ``deveval_tasks.jsonl`` (the DevEval records the samples use, verbatim) and
``screening.json`` (every candidate tried and why it was kept or dropped). Test outcomes of the
screening are cached in ``<cache>/verified_screening.json`` so a rerun does not repeat them.
Check the result with ``python -m scripts.validate_locoeval --samples <out-dir>/samples.jsonl``.
"""

from __future__ import annotations

import argparse
import ast
import collections
import copy
import hashlib
import json
import os
import random
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_PROJECTS = ("Utilities/boltons", "Communications/IMAPClient", "Internet/Jinja2", "System/fs",
                    "Utilities/gunicorn", "Internet/falcon", "Internet/pyramid", "System/mrjob",
                    "Security/pycoin", "Internet/boto", "Multimedia/Mopidy", "Utilities/sacred")
MIN_TURNS, MAX_TURNS = 24, 50
SAMPLES_PER_PROJECT = 4                 # 2 single-hop + 2 multi-hop
REQS_PER_SAMPLE = (1, 2, 2, 3)          # a seeded permutation per project
MAX_FACTS_PER_TASK = 3
MAX_CANDIDATES_TRIED = 12


# ------------------------------------------------------------------------------------ facts
@dataclass
class Fact:
    """One mechanically extracted, grounded fact of a reference body."""

    kind: str                     # raise | compare | number | string | bool
    lines: list[list[int]]        # file line ranges (1-based, inclusive)
    facts: list[str]              # code strings a turn stating the fact must contain
    text: str                     # the fact as the user states it
    distractor: str               # a contradicting statement
    revision: str                 # restates the fact and retracts the distractor
    counterfactual_body: str      # reference body changed to follow the distractor (dedented)
    key: str                      # position key (dedup)
    change: str                   # human-readable description of the change


_EXC_SWAP = {"ValueError": "TypeError", "TypeError": "ValueError", "KeyError": "ValueError",
             "IndexError": "KeyError", "RuntimeError": "ValueError", "AttributeError": "KeyError",
             "NotImplementedError": "RuntimeError", "LookupError": "ValueError", "OSError": "ValueError",
             "IOError": "ValueError", "StopIteration": "ValueError", "AssertionError": "ValueError",
             "Exception": "RuntimeError"}
_CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
             ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_STR_SWAP = {",": ";", ";": ",", "-": "_", "_": "-", ":": "=", "=": ":", "/": "\\", ".": ",", " ": "",
             "\n": "\r\n", "\r\n": "\n", "": " ", "utf-8": "ascii", "ascii": "utf-8", "utf8": "ascii",
             "%s": "%r", "%r": "%s", "*": "+", "+": "*", "#": "//", "&": "|", "|": "&", "?": "!", "@": "#",
             "\t": "    ", "r": "w", "w": "a", "rb": "r", "wb": "w"}
_LOG_ATTRS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}


def mutate_string(s: str) -> str | None:
    """A different, plausible string (None when no mutation applies)."""
    if s in _STR_SWAP:
        return _STR_SWAP[s]
    if len(s) > 40 or "\n" in s:
        return None
    if s.isalpha():
        return s[:-1] if s.endswith("s") and len(s) > 2 else s + "s"
    for a, b in (("-", "_"), ("_", "-"), (":", "="), ("/", "."), (".", "/"), (",", ";"), (" ", "_"), ("%", "{}")):
        if a in s:
            return s.replace(a, b, 1)
    return s + "_"


def mutate_number(v: int | float) -> int | float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        if v in (0, 1):
            return None
        return v + 1 if abs(v) < 16 else v * 2
    if isinstance(v, float):
        return v * 2 if v else None
    return None


class _Source:
    """A file's text with helpers to map ast positions (byte columns) to character offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for ln in self.lines:
            self.starts.append(self.starts[-1] + len(ln))

    def offset(self, lineno: int, col_bytes: int) -> int:
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col_bytes].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        a, b = self.span(node)
        return self.text[a:b]


def _one_line(s: str) -> str:
    return " ".join(s.split())


def _parents(func: ast.AST) -> dict[ast.AST, ast.AST]:
    parents = {}
    for node in ast.walk(func):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    return parents


def _dedent_body(text: str) -> str:
    return textwrap.dedent(text.expandtabs(4)).strip("\n")


class TaskFacts:
    """Facts, counterfactual bodies and the alternative body of one task's reference function."""

    def __init__(self, source_text: str, func: ast.FunctionDef | ast.AsyncFunctionDef, body_start: int, body_end: int,
                 fn_name: str) -> None:
        self.src = _Source(source_text)
        self.func = func
        self.body_start, self.body_end = body_start, body_end
        self.fn = fn_name
        self.stmts = [s for s in func.body if s.lineno >= body_start]
        self.parents = _parents(func)
        a = self.src.starts[body_start - 1]
        b = self.src.starts[body_end]
        self.body_lo, self.body_hi = a, b
        self.body_text = source_text[a:b]

    # --- helpers
    def reference_body(self) -> str:
        return _dedent_body(self.body_text)

    def replaced_body(self, node: ast.AST, new_text: str) -> str:
        a, b = self.src.span(node)
        assert self.body_lo <= a <= b <= self.body_hi
        text = self.body_text[: a - self.body_lo] + new_text + self.body_text[b - self.body_lo:]
        return _dedent_body(text)

    def _in_body(self, node: ast.AST) -> bool:
        return getattr(node, "lineno", 0) >= self.body_start and getattr(node, "end_lineno", 10**9) <= self.body_end

    def _skip_context(self, node: ast.AST) -> bool:
        """Constants in docstrings, f-strings, annotations, raise/log/warn calls are not used as facts."""
        cur = node
        while cur in self.parents:
            par = self.parents[cur]
            if isinstance(par, ast.JoinedStr) or isinstance(par, (ast.Raise, ast.Assert)):
                return True
            if isinstance(par, ast.Expr) and isinstance(cur, ast.Constant):
                return True  # a bare string statement (docstring-like)
            if isinstance(par, (ast.AnnAssign, ast.arg)) and getattr(par, "annotation", None) is cur:
                return True
            if isinstance(par, ast.Call):
                f = par.func
                name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
                if name in _LOG_ATTRS or name in ("warn", "print", "_", "gettext", "deprecated"):
                    return True
            if isinstance(par, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and par is not self.func:
                return False
            cur = par
        return False

    def _context_expr(self, node: ast.AST, limit: int = 90) -> ast.AST:
        """The largest expression around ``node`` whose one-line source stays under ``limit`` chars."""
        best = node
        cur = node
        while cur in self.parents:
            par = self.parents[cur]
            if not isinstance(par, ast.expr) or isinstance(par, (ast.Lambda, ast.JoinedStr)):
                break
            if len(_one_line(self.src.segment(par))) > limit:
                break
            best = cur = par
        return best

    def _lines_of(self, *nodes: ast.AST) -> list[list[int]]:
        rng = sorted({(n.lineno, n.end_lineno) for n in nodes})
        merged: list[list[int]] = []
        for a, b in rng:
            if merged and a <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        return merged

    def _enclosing_if(self, node: ast.AST) -> tuple[ast.If | None, bool]:
        cur = node
        while cur in self.parents:
            par = self.parents[cur]
            if isinstance(par, ast.If):
                return par, cur in par.body
            if isinstance(par, (ast.FunctionDef, ast.AsyncFunctionDef, ast.For, ast.While, ast.Try, ast.With)):
                return None, False
            cur = par
        return None, False

    # --- candidates
    def candidates(self) -> list[Fact]:
        out: list[Fact] = []
        seen: set[str] = set()
        nodes = [n for s in self.stmts for n in ast.walk(s)]
        for n in nodes:
            fact = None
            if isinstance(n, ast.Raise) and n.exc is not None:
                fact = self._raise_fact(n)
            elif isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in _CMP_SWAP:
                fact = self._compare_fact(n)
            elif isinstance(n, ast.Constant) and self._in_body(n) and not self._skip_context(n):
                fact = self._constant_fact(n)
            if fact is not None and fact.key not in seen and fact.facts[0].strip():
                seen.add(fact.key)
                out.append(fact)
        order = {"raise": 0, "compare": 1, "number": 2, "string": 3, "bool": 4}
        return sorted(out, key=lambda f: (order[f.kind], f.lines[0][0]))

    def _raise_fact(self, n: ast.Raise) -> Fact | None:
        target = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return None
        exc = self.src.segment(target)
        short = exc.rsplit(".", 1)[-1]
        alt = _EXC_SWAP.get(short, "ValueError" if short != "ValueError" else "TypeError")
        if_node, in_body = self._enclosing_if(n)
        msg = ""
        if isinstance(n.exc, ast.Call) and n.exc.args:
            m = _one_line(self.src.segment(n.exc.args[0]))
            if len(m) <= 90:
                msg = f" with the message {m}"
        grounds = [n]
        if if_node is not None and if_node.test.end_lineno - if_node.lineno <= 2:
            cond = _one_line(self.src.segment(if_node.test))
            when = f"when `{cond}`" if in_body else f"when `{cond}` does not hold"
            grounds.append(if_node.test)
            facts = [exc, cond]
        else:
            when = "in this case: `" + _one_line(self.src.segment(n))[:100] + "`"
            facts = [exc]
        return Fact(
            kind="raise", lines=self._lines_of(*grounds), facts=facts,
            text=f"For `{self.fn}`: {when}, it must raise `{exc}`{msg}.",
            distractor=f"For `{self.fn}`: {when}, it should raise `{alt}`.",
            revision=f"Correction for `{self.fn}`: {when}, raise `{exc}`{msg} -- not `{alt}` as I said earlier.",
            counterfactual_body=self.replaced_body(target, alt), key=f"raise:{n.lineno}:{n.col_offset}",
            change=f"raise {exc} -> {alt}")

    def _compare_fact(self, n: ast.Compare) -> Fact | None:
        if n.end_lineno != n.lineno:
            return None
        mutated = copy.deepcopy(n)
        mutated.ops = [_CMP_SWAP[type(n.ops[0])]()]
        orig = _one_line(self.src.segment(n))
        new = ast.unparse(mutated)
        if len(orig) > 90:
            return None
        return Fact(
            kind="compare", lines=self._lines_of(n), facts=[orig],
            text=f"For `{self.fn}`: the condition it checks is `{orig}`.",
            distractor=f"For `{self.fn}`: the condition it checks is `{new}`.",
            revision=f"Correction for `{self.fn}`: the condition is `{orig}`, not `{new}` as I said earlier.",
            counterfactual_body=self.replaced_body(n, f"({new})"), key=f"cmp:{n.lineno}:{n.col_offset}",
            change=f"{orig} -> {new}")

    def _constant_fact(self, n: ast.Constant) -> Fact | None:
        v = n.value
        if isinstance(v, bool):
            kind, new_v = "bool", (not v)
        elif isinstance(v, (int, float)):
            kind, new_v = "number", mutate_number(v)
        elif isinstance(v, str):
            kind, new_v = "string", mutate_string(v)
        else:
            return None
        if new_v is None or new_v == v:
            return None
        if n.end_lineno != n.lineno:
            return None
        ctx = self._context_expr(n)
        if ctx is n:  # a lone constant (e.g. `return 5`): use the statement
            par = self.parents.get(n)
            if isinstance(par, ast.stmt) and par.end_lineno == par.lineno:
                ctx = par
        orig = self.src.segment(ctx)
        if "\n" in orig or len(orig) > 120:
            return None
        a0, _ = self.src.span(ctx)
        a, b = self.src.span(n)
        new_lit = repr(new_v)
        new = orig[: a - a0] + new_lit + orig[b - a0:]
        what = {"bool": "the flag", "number": "the value", "string": "the string"}[kind]
        old_lit = self.src.segment(n)
        return Fact(
            kind=kind, lines=self._lines_of(ctx), facts=[orig],
            text=f"For `{self.fn}`: it uses `{orig}` -- {what} there is `{old_lit}`.",
            distractor=f"For `{self.fn}`: it uses `{new}` -- {what} there is `{new_lit}`.",
            revision=f"Correction for `{self.fn}`: it is `{orig}` ({what} `{old_lit}`), not `{new_lit}` as I said earlier.",
            counterfactual_body=self.replaced_body(n, new_lit), key=f"const:{n.lineno}:{n.col_offset}",
            change=f"{self.src.segment(n)} -> {new_lit}")

    # --- alternative body
    def alternative_body(self) -> tuple[str, list[str]]:
        """(restructured body, transformations applied)."""
        func = copy.deepcopy(self.func)
        stmts = [s for s in func.body if s.lineno >= self.body_start]
        mod = ast.Module(body=stmts, type_ignores=[])
        applied: list[str] = []
        rs = _Restructure(applied)
        rs.name_counts = collections.Counter(n.id for n in ast.walk(func) if isinstance(n, ast.Name))
        rs.visit(mod)
        mod.body = _guard_to_else(mod.body, applied)
        renamed = _rename_locals(func, mod, applied)
        ast.fix_missing_locations(mod)
        text = ast.unparse(mod)
        return text, applied if renamed is not None else applied


class _Restructure(ast.NodeTransformer):
    """Swap if/else branches (negated test) and expand conditional-expression assignments/returns."""

    def __init__(self, applied: list[str]) -> None:
        self.applied = applied
        self.counter = 0

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        node.body = _guard_to_else(node.body, self.applied)
        node.orelse = _guard_to_else(node.orelse, self.applied) if node.orelse else node.orelse
        if not node.orelse and isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And):
            inner = node.body
            for v in reversed(node.test.values[1:]):
                inner = [ast.If(test=v, body=inner, orelse=[])]
            self.applied.append("if with `and` condition rewritten as nested if statements")
            return ast.If(test=node.test.values[0], body=inner, orelse=[])
        if node.orelse:
            test = node.test.operand if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
                else ast.UnaryOp(op=ast.Not(), operand=node.test)
            self.applied.append("if/else branches swapped under the negated condition")
            return ast.If(test=test, body=node.orelse, orelse=node.body)
        return node

    def _expand(self, node: ast.stmt, value: ast.IfExp, make) -> ast.AST:
        self.applied.append("conditional expression expanded into an if statement")
        return ast.If(test=value.test, body=[make(value.body)], orelse=[make(value.orelse)])

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if isinstance(node.value, ast.IfExp) and len(node.targets) == 1:
            return self._expand(node, node.value, lambda v: ast.Assign(targets=[copy.deepcopy(node.targets[0])], value=v))
        if isinstance(node.value, ast.BoolOp) and isinstance(node.value.op, ast.Or) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            # x = a or b or c  ->  x = a; if not x: x = b ...
            name = node.targets[0].id
            out: list[ast.stmt] = [ast.Assign(targets=[ast.Name(name, ast.Store())], value=node.value.values[0])]
            for v in node.value.values[1:]:
                out.append(ast.If(test=ast.UnaryOp(ast.Not(), ast.Name(name, ast.Load())),
                                  body=[ast.Assign(targets=[ast.Name(name, ast.Store())], value=v)], orelse=[]))
            self.applied.append("`or` default rewritten as an if statement")
            return out
        if isinstance(node.value, (ast.ListComp, ast.SetComp)) and len(node.targets) == 1:
            comp = node.value
            inside = collections.Counter(n.id for n in ast.walk(comp) if isinstance(n, ast.Name))
            targets = {n.id for g in comp.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            if any(self.name_counts[t] != inside[t] for t in targets) or any(g.is_async for g in comp.generators):
                return node  # the loop variable would clobber a name used elsewhere in the function
            self.counter += 1
            acc = f"_acc{self.counter}_v"
            add = "append" if isinstance(comp, ast.ListComp) else "add"
            inner: list[ast.stmt] = [ast.Expr(ast.Call(func=ast.Attribute(ast.Name(acc, ast.Load()), add, ast.Load()),
                                                       args=[comp.elt], keywords=[]))]
            for g in reversed(comp.generators):
                for cond in reversed(g.ifs):
                    inner = [ast.If(test=cond, body=inner, orelse=[])]
                inner = [ast.For(target=g.target, iter=g.iter, body=inner, orelse=[])]
            self.applied.append("comprehension rewritten as an explicit loop")
            start = ast.Assign(targets=[ast.Name(acc, ast.Store())],
                               value=ast.List([], ast.Load()) if add == "append" else
                               ast.Call(ast.Name("set", ast.Load()), [], []))
            return [start, *inner, ast.Assign(targets=node.targets, value=ast.Name(acc, ast.Load()))]
        return node

    def visit_Return(self, node: ast.Return) -> ast.AST:
        if isinstance(node.value, ast.IfExp):
            return self._expand(node, node.value, lambda v: ast.Return(value=v))
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        node.body = _guard_to_else(node.body, self.applied)
        if node.orelse:
            return node
        # for TARGET in ITER: BODY  ->  explicit iterator + while loop
        self.counter += 1
        it = f"_iter{self.counter}_v"
        self.applied.append("for loop rewritten as a while loop over an explicit iterator")
        get = ast.Try(body=[ast.Assign(targets=[node.target], value=ast.Call(
                          func=ast.Name("next", ast.Load()), args=[ast.Name(it, ast.Load())], keywords=[]))],
                      handlers=[ast.ExceptHandler(type=ast.Name("StopIteration", ast.Load()), name=None,
                                                  body=[ast.Break()])],
                      orelse=[], finalbody=[])
        return [ast.Assign(targets=[ast.Name(it, ast.Store())],
                           value=ast.Call(func=ast.Name("iter", ast.Load()), args=[node.iter], keywords=[])),
                ast.While(test=ast.Constant(True), body=[get] + node.body, orelse=[])]

    def visit_While(self, node: ast.While) -> ast.AST:
        self.generic_visit(node)
        node.body = _guard_to_else(node.body, self.applied)
        return node

    visit_With = visit_While

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        node.body = _guard_to_else(node.body, self.applied)
        return node


def _exits(stmts: list[ast.stmt]) -> bool:
    return bool(stmts) and isinstance(stmts[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _guard_to_else(stmts: list[ast.stmt], applied: list[str]) -> list[ast.stmt]:
    """``if c: return x`` followed by more statements -> ``if c: return x else: <rest>``."""
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If) and not s.orelse and _exits(s.body) and i + 1 < len(stmts):
            rest = _guard_to_else(stmts[i + 1:], applied)
            applied.append("guard clause turned into if/else")
            return stmts[:i] + [ast.If(test=s.test, body=s.body, orelse=rest)]
    return stmts


_UNSAFE_CALLS = {"locals", "vars", "eval", "exec", "globals"}


def _rename_locals(func: ast.AST, mod: ast.Module, applied: list[str]) -> int | None:
    """Rename local variables assigned in the body (``name`` -> ``name_v``); None when unsafe."""
    every = [n for n in ast.walk(func)]
    if any(isinstance(n, (ast.Global, ast.Nonlocal, ast.Match, ast.ClassDef)) for n in every):
        return None
    if any(isinstance(n, ast.Name) and n.id in _UNSAFE_CALLS for n in every):
        return None
    params = {a.arg for n in every if isinstance(n, ast.arguments)
              for a in n.posonlyargs + n.args + n.kwonlyargs + [x for x in (n.vararg, n.kwarg) if x]}
    bound_str = {n.name for n in every if isinstance(n, ast.ExceptHandler) and n.name}
    bound_str |= {(a.asname or a.name).split(".")[0] for n in every if isinstance(n, (ast.Import, ast.ImportFrom))
                  for a in n.names}
    bound_str |= {n.name for n in every if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not func}
    stores = {n.id for n in ast.walk(mod) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    names = sorted(nm for nm in stores - params - bound_str if not nm.endswith("_v"))
    all_ids = {n.id for n in every if isinstance(n, ast.Name)} | params | bound_str
    mapping = {}
    for nm in names:
        new = f"{nm}_v"
        if new in all_ids:
            continue
        mapping[nm] = new
    if not mapping:
        return 0
    for n in ast.walk(mod):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]
    applied.append(f"{len(mapping)} local variable(s) renamed")
    return len(mapping)


CONTROL_FLOW = ("if/else branches swapped", "guard clause", "conditional expression", "for loop rewritten",
                "comprehension rewritten", "`or` default", "if with `and`")


def restructured(applied: list[str]) -> bool:
    """Did the alternative body get at least one control-flow restructuring (not only renames)?"""
    return any(a.startswith(CONTROL_FLOW) for a in applied)


# ------------------------------------------------------------------------------ screening
@dataclass
class TaskCandidate:
    namespace: str
    project_path: str
    record: dict[str, Any]
    ref: dict[str, Any]                       # reference_function() output
    facts: list[Fact]
    alt_body: str
    alt_transforms: list[str]
    kept: list[Fact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    alt_passed: bool | None = None


class OutcomeCache:
    """Test outcomes by (namespace, body sha) in a JSON file (atomic writes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.data: dict[str, str] = json.loads(path.read_text()) if path.is_file() else {}

    @staticmethod
    def key(namespace: str, body: str) -> str:
        return namespace + ":" + hashlib.sha256(body.encode()).hexdigest()[:16]

    def get(self, namespace: str, body: str) -> str | None:
        return self.data.get(self.key(namespace, body))

    def put(self, namespace: str, body: str, outcome: str) -> None:
        with self.lock:
            self.data[self.key(namespace, body)] = outcome
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, indent=0, sort_keys=True))
            os.replace(tmp, self.path)


def find_func_node(tree: ast.AST, signature_line: int) -> ast.FunctionDef | None:
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno == signature_line:
            return n
    return None


def prepare_candidate(entry, task, root: Path) -> TaskCandidate | None:
    """Facts and the alternative body of one task (no test run); None when the task cannot be used."""
    from benchmarks.deveval.providers import reference_function, task_file

    loc = entry.task(task.namespace)
    ref = reference_function(root, task, loc)
    text = task_file(root, task).read_text(encoding="utf-8")
    tree = ast.parse(text)
    func = find_func_node(tree, ref["signature_line"])
    if func is None:
        return None
    tf = TaskFacts(text, func, ref["body_start"], ref["body_end"], task.function_name)
    if not tf.stmts:
        return None
    facts = tf.candidates()
    alt, applied = tf.alternative_body()
    cand = TaskCandidate(task.namespace, task.project_path, {}, ref, facts, alt, applied)
    return cand


def screen(cand: TaskCandidate, run) -> TaskCandidate:
    """Run the alternative body (must pass) and counterfactual bodies (must fail) until enough facts."""
    if not restructured(cand.alt_transforms):
        cand.notes.append("alternative body: no control-flow restructuring applies")
        return cand
    if len(cand.facts) < 2:
        cand.notes.append(f"only {len(cand.facts)} fact candidate(s)")
        return cand
    outcome = run(cand.namespace, cand.alt_body)
    cand.alt_passed = outcome == "pass"
    if not cand.alt_passed:
        cand.notes.append(f"alternative body: {outcome}")
        return cand
    # prefer facts on different lines and of different kinds
    ordered, used_lines = [], set()
    for f in cand.facts:
        if f.lines[0][0] not in used_lines:
            ordered.append(f)
            used_lines.add(f.lines[0][0])
    ordered += [f for f in cand.facts if f not in ordered]
    tried = 0
    for f in ordered:
        if len(cand.kept) >= MAX_FACTS_PER_TASK or tried >= MAX_CANDIDATES_TRIED:
            break
        if any(f.lines[0][0] == k.lines[0][0] for k in cand.kept):
            continue
        tried += 1
        out = run(cand.namespace, f.counterfactual_body)
        if out == "fail":
            cand.kept.append(f)
        elif out == "pass":
            cand.notes.append(f"not consequential ({f.change}): tests still pass")
        else:  # timeout / oom / error: inconclusive, never counted as consequential
            cand.notes.append(f"inconclusive ({f.change}): {out}")
        if len(cand.kept) >= 2:
            break
    if len(cand.kept) >= 2:
        # the manifest's oracle ran elsewhere: the reference must also pass under this executor
        out = run(cand.namespace, _dedent_body(cand.ref["body"]))
        if out != "pass":
            cand.notes.append(f"reference body: {out} under this executor")
            cand.kept = []
    return cand


# ------------------------------------------------------------------------------ repository topics
def repository_symbols(root: Path, exclude_files: set[str]) -> list[dict[str, str]]:
    """Public top-level functions / classes with a docstring, outside tests and the target files."""
    out = []
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        parts = rel.split("/")
        if any(p in ("tests", "test", "docs", "examples", "build") for p in parts[:-1]) or parts[-1].startswith(("test", "setup", "conftest")):
            continue
        if rel in exclude_files:
            continue
        try:
            tree = ast.parse(f.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                continue
            doc = ast.get_docstring(node) or ""
            first = _one_line(doc.split("\n\n")[0])
            if not first or len(first) < 12:
                continue
            if len(first) > 140:
                first = first[:137].rsplit(" ", 1)[0] + "..."
            out.append({"file": rel, "name": node.name, "kind": "class" if isinstance(node, ast.ClassDef) else "function",
                        "doc": first.replace('"', "'")})
    return out


NOISE_TEMPLATES = (
    "Unrelated question while I remember: what does `{name}` in `{file}` do? Its docstring starts \"{doc}\"",
    "Different part of the code base: when would I use `{name}` from `{file}`? The docs say \"{doc}\"",
    "Side question about `{file}`: is `{name}` something other modules here call, or mainly public API? It says \"{doc}\"",
    "A colleague asked me about `{name}` ({file}): \"{doc}\" -- how would you explain it in two sentences?",
    "Before I forget: how would I write a quick test for `{name}` in `{file}`? Its docstring: \"{doc}\"",
    "Off topic: if I wanted to change `{name}` in `{file}` (\"{doc}\"), what should I be careful about?",
)
CLASS_TEMPLATES = (
    "Unrelated question: what is the class `{name}` in `{file}` for? Its docstring starts \"{doc}\"",
    "Different part of the repository: is `{name}` ({file}) meant to be subclassed or used directly? It says \"{doc}\"",
)
CHAT_LINES = (
    "Thanks, that helps. Let's keep going.",
    "OK, good. Give me a second to look at the file.",
    "Alright. I'll take a short coffee break and then we continue.",
    "Makes sense. Please keep your answers short today.",
    "Great, thanks for bearing with me.",
    "Hmm, let me think about that for a moment.",
    "Fine. I'll note that down.",
    "Sounds good to me.",
)
SUFFIX = " Please answer briefly."


# ------------------------------------------------------------------------------ composition
def _fn(ns: str) -> str:
    return ns.rsplit(".", 1)[-1]


def requirement_text(cand: TaskCandidate, file_in_project: str) -> str:
    req = cand.record.get("requirement", {})
    func = _one_line(str(req.get("Functionality", "")))
    args = " ".join(str(req.get("Arguments", "")).split())
    sig = _one_line(textwrap.dedent(cand.ref["signature"]))
    parts = [f"Next piece of work: I need `{_fn(cand.namespace)}` in `{file_in_project}` with the signature `{sig}`.",
             func]
    if args:
        parts.append(f"Arguments and return value: {args}")
    parts.append("Don't write it yet -- I'll give you the details first.")
    return " ".join(p for p in parts if p)


def compose_sample(sample_id: str, subset: str, entry, group: list[TaskCandidate], symbols: list[dict[str, str]],
                   rng: random.Random) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One sample object and its verification records."""
    file_of = {c.namespace: c.ref["file"] for c in group}
    reqs, verif = [], []
    blocks = []  # per requirement: intro, [info steps], distractor step, revision step, retrospective step
    for k, cand in enumerate(group, 1):
        rid = f"R{k}"
        facts = cand.kept[:MAX_FACTS_PER_TASK]
        d_idx = rng.randrange(len(facts))
        gt_items, ver_items = [], {}
        for i, f in enumerate(facts, 1):
            gt_items.append({"id": f"{rid}.I{i}", "text": f.text, "evidence": list(f.facts)})
            ver_items[f"{rid}.I{i}"] = {"kind": f.kind, "lines": f.lines, "facts": f.facts, "change": f.change,
                                        "counterfactual_body": f.counterfactual_body}
        dist_gt = f"{rid}.I{d_idx + 1}"
        distractors = [{"id": f"{rid}.D1", "text": facts[d_idx].distractor, "revised_by": dist_gt}]
        reqs.append({"req_id": rid, "namespace": cand.namespace, "completion_path": file_of[cand.namespace],
                     "signature": cand.ref["signature"], "tests": list(cand.record["tests"]),
                     "description": _one_line(str(cand.record.get("requirement", {}).get("Functionality", ""))),
                     "gt_items": gt_items, "distractors": distractors})
        verif.append({"sample_id": sample_id, "req_id": rid, "namespace": cand.namespace,
                      "file": cand.ref["file"], "signature_line": cand.ref["signature_line"],
                      "body_start": cand.ref["body_start"], "body_end": cand.ref["body_end"],
                      "reference_sha256": hashlib.sha256(cand.ref["body"].encode()).hexdigest(),
                      "items": ver_items,
                      "distractors": {f"{rid}.D1": {"revised_by": dist_gt, "change": facts[d_idx].change,
                                                    "body": facts[d_idx].counterfactual_body}},
                      "alternative": {"body": cand.alt_body, "transforms": cand.alt_transforms,
                                      "how": "AST restructuring of the reference body (mechanical)"}})
        fn = _fn(cand.namespace)
        intro = {"kind": "requirement", "req_id": rid, "topic": fn, "brief": f"Introduce `{fn}`.",
                 "text": requirement_text(cand, file_of[cand.namespace]) + SUFFIX}
        infos = [{"kind": "info", "req_id": rid, "item_ids": [f"{rid}.I{i}"], "topic": fn,
                  "brief": f"State a detail of `{fn}`.", "text": f.text + SUFFIX}
                 for i, f in enumerate(facts, 1) if i != d_idx + 1]
        dis = {"kind": "distractor", "req_id": rid, "item_ids": [f"{rid}.D1"], "topic": fn,
               "brief": f"State a wrong detail of `{fn}` (revised later).", "text": facts[d_idx].distractor + SUFFIX}
        rev = {"kind": "revision", "req_id": rid, "item_ids": [dist_gt], "topic": fn,
               "brief": f"Revise the wrong detail of `{fn}`.", "text": facts[d_idx].revision + SUFFIX}
        retro_ids = [g["id"] for g in gt_items][:2]
        retro = {"kind": "retrospective", "req_id": rid, "item_ids": retro_ids, "topic": fn,
                 "brief": f"Ask for a recap of `{fn}`.",
                 "text": f"Quick recap before we move on: what have we agreed so far about `{fn}`?" + SUFFIX}
        blocks.append((intro, infos, dis, rev, retro))

    core_n = sum(1 + len(b[1]) + 3 for b in blocks)
    target = rng.randint(max(MIN_TURNS, core_n + 2), MAX_TURNS)
    n_fill = target - core_n - 1  # the opening chat turn is the other one
    n_chat = max(1, round(n_fill * 0.3))
    fillers = _fillers(n_fill, n_chat, symbols, rng)
    opening = {"kind": "chat", "brief": "Open the session.",
               "text": f"Hi! Today I'm working in the {entry.pypi_name} repository (version {entry.version}). "
                       f"We'll go through a few functions step by step." + SUFFIX}
    if subset == "single-hop":
        # each requirement's steps form one contiguous block; fillers only between blocks
        seq_blocks = []
        for intro, infos, dis, rev, retro in blocks:
            mid = [dis] + infos
            seq_blocks.append([intro] + mid + [rev, retro])
        slots = [[] for _ in range(len(seq_blocks) + 1)]
        for f in fillers:
            slots[rng.randrange(len(slots))].append(f)
        outline = [opening]
        for i, b in enumerate(seq_blocks):
            outline += slots[i] + b
        outline += slots[-1]
    else:
        # all requirements early; details interleaved over the conversation; revisions and recaps late
        intros = [b[0] for b in blocks]
        details = [s for b in blocks for s in [b[2]] + b[1]]
        rng.shuffle(details)
        revs = [b[3] for b in blocks]
        retros = [b[4] for b in blocks]
        early = fillers[: max(1, len(fillers) // 4)]
        rest = fillers[len(early):]
        outline = [opening]
        for i, s in enumerate(intros):
            outline.append(s)
            if i < len(early):
                outline.append(early[i])
        outline += early[len(intros):]
        middle = details[:]
        for f in rest[: len(rest) * 2 // 3]:
            middle.insert(rng.randint(1, len(middle)), f)
        outline += middle
        tail = revs + retros + rest[len(rest) * 2 // 3:]
        # keep every revision after its distractor (it is: revisions only in the tail); spread the tail
        rng.shuffle(tail)
        outline += tail
    outline = outline[:]
    # guarantee each requirement's retrospective comes after its revision in multi-hop tails
    outline = _order_revision_before_retro(outline)
    steps = [{"turn": n, **s} for n, s in enumerate(outline, 1)]
    sample = {"id": sample_id, "subset": subset, "project_path": entry.project_path,
              "repo": {"provider": "pypi", "name": entry.pypi_name, "version": entry.version,
                       "sha256": entry.sdist_sha256},
              "requirements": reqs, "outline": steps,
              "tasks": [{"req_id": r["req_id"], "kind": "function_generation",
                         "query": f"Please implement `{_fn(r['namespace'])}` now, following everything we agreed about it."}
                        for r in reqs],
              "meta": {"set": "locoeval_verified", "generator": "scripts/make_verified_locoeval.py",
                       "task_namespaces": [r["namespace"] for r in reqs]}}
    return sample, verif


def _order_revision_before_retro(outline: list[dict]) -> list[dict]:
    out = list(outline)
    for rid in {s.get("req_id") for s in out if s["kind"] == "revision"}:
        ri = next(i for i, s in enumerate(out) if s["kind"] == "revision" and s.get("req_id") == rid)
        ti = next((i for i, s in enumerate(out) if s["kind"] == "retrospective" and s.get("req_id") == rid), None)
        if ti is not None and ti < ri:
            out[ti], out[ri] = out[ri], out[ti]
    return out


def _fillers(n: int, n_chat: int, symbols: list[dict[str, str]], rng: random.Random) -> list[dict]:
    pool = list(symbols)
    rng.shuffle(pool)
    chats = list(CHAT_LINES)
    rng.shuffle(chats)
    kinds = ["chat"] * n_chat + ["noise"] * (n - n_chat)
    rng.shuffle(kinds)
    if "noise" not in kinds and kinds:
        kinds[-1] = "noise"
    out, ni, ci = [], 0, 0
    for k in kinds:
        if k == "noise" and pool:
            sym = pool[ni % len(pool)]
            ni += 1
            tmpl = rng.choice(CLASS_TEMPLATES if sym["kind"] == "class" else NOISE_TEMPLATES)
            out.append({"kind": "noise", "topic": sym["name"], "brief": f"Unrelated question about `{sym['name']}`.",
                        "text": tmpl.format(**sym) + SUFFIX})
        else:
            out.append({"kind": "chat", "brief": "Small talk / acknowledgement.", "text": chats[ci % len(chats)]})
            ci += 1
    return out


# ------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.make_verified_locoeval", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deveval-data", default=os.environ.get("RECONMEM_DEVEVAL_DATA"),
                    help="DevEval data.jsonl (default: $RECONMEM_DEVEVAL_DATA or the fetched copy)")
    ap.add_argument("--out-dir", default="benchmarks/locoeval/verified")
    ap.add_argument("--projects", nargs="*", default=list(DEFAULT_PROJECTS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tasks-per-project", type=int, default=8, help="tasks to keep per project")
    ap.add_argument("--max-screened", type=int, default=200, help="candidate tasks screened per project at most")
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args(argv)

    from benchmarks.deveval.evaluate import run_body
    from benchmarks.deveval.providers import get_snapshot
    from benchmarks.deveval.tasks import env_spec_for, load_manifest, load_tasks
    from benchmarks.sandbox import build_executor
    from reconmem.platform.downloads import cache_root

    t0 = time.monotonic()
    manifest = load_manifest()
    records = {}
    data_path = args.deveval_data
    from benchmarks.deveval.tasks import default_data_path
    data_path = Path(data_path) if data_path else default_data_path()
    for line in Path(data_path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            records[rec["namespace"]] = rec
    tasks = {t.namespace: t for t in load_tasks(data_path)}
    executor = build_executor({"name": "local", "timeout_s": args.timeout})
    cache = OutcomeCache(cache_root() / "verified_screening.json")
    prepared: dict[str, tuple[Path, Any]] = {}

    def run(namespace: str, body: str) -> str:
        hit = cache.get(namespace, body)
        if hit is not None:
            return hit
        task = tasks[namespace]
        entry = manifest.project(task.project_path)
        root, env = prepared[task.project_path]
        outcome, _ = run_body(task, root, body, env=env, executor=executor, hint=entry.task(namespace))
        cache.put(namespace, body, outcome.outcome)
        print(f"  ran {namespace}: {outcome.outcome} ({outcome.seconds:.1f}s)", file=sys.stderr, flush=True)
        return outcome.outcome

    screening: dict[str, Any] = {}
    kept_by_project: dict[str, list[TaskCandidate]] = {}
    entries = manifest.select(args.projects)
    for entry in entries:
        root = get_snapshot(entry.repo_spec(), manifest=manifest)
        env = env_spec_for(entry)
        executor.prepare(env)
        prepared[entry.project_path] = (root, env)
        usable = sorted(loc.namespace for loc in entry.tasks if loc.usable and loc.namespace in tasks)
        rng = random.Random(f"{args.seed}:{entry.project_path}")
        rng.shuffle(usable)
        cands = []
        for ns in usable:
            try:
                c = prepare_candidate(entry, tasks[ns], root)
            except Exception as exc:  # noqa: BLE001 - recorded in screening.json
                screening[ns] = {"kept": False, "notes": [f"prepare failed: {type(exc).__name__}: {exc}"]}
                continue
            if c is None:
                screening[ns] = {"kept": False, "notes": ["function not found / empty body"]}
                continue
            c.record = records[ns]
            cands.append(c)
        kept: list[TaskCandidate] = []
        # screen in the seeded order, two at a time, until enough tasks are kept
        i = 0
        with ThreadPoolExecutor(max(1, args.workers)) as pool:
            while len(kept) < args.tasks_per_project and i < min(len(cands), args.max_screened):
                batch = cands[i: i + args.workers]
                i += len(batch)
                for c in pool.map(lambda c: screen(c, run), batch):
                    ok = len(c.kept) >= 2 and bool(c.alt_passed)
                    screening[c.namespace] = {"kept": ok and len(kept) < args.tasks_per_project,
                                              "facts_kept": [f.change for f in c.kept], "notes": c.notes,
                                              "alt_transforms": c.alt_transforms}
                    if ok and len(kept) < args.tasks_per_project:
                        kept.append(c)
        kept_by_project[entry.project_path] = kept
        print(f"{entry.project_path}: kept {len(kept)} of {i} screened", file=sys.stderr, flush=True)

    # ---- compose samples
    samples, verification, used_records = [], [], []
    for entry in entries:
        kept = kept_by_project.get(entry.project_path, [])
        if not kept:
            continue
        root, _ = prepared[entry.project_path]
        rng = random.Random(f"{args.seed}:{entry.project_path}:compose")
        sizes = list(REQS_PER_SAMPLE)
        rng.shuffle(sizes)
        # fit the sizes to the number of kept tasks
        while sum(sizes) > len(kept) and any(s > 1 for s in sizes):
            j = max(range(len(sizes)), key=lambda k: sizes[k])
            sizes[j] -= 1
        while sum(sizes) > len(kept):
            sizes.pop()
        target_files = {c.ref["file"] for c in kept}
        symbols = repository_symbols(root, target_files)
        pos = 0
        slug = entry.pypi_name.lower()
        assignment = balanced_subsets(sizes)
        for k, size in enumerate(sizes):
            group = kept[pos: pos + size]
            pos += size
            subset = assignment[k]
            sid = f"{slug}-{k + 1:02d}-{'sh' if subset == 'single-hop' else 'mh'}"
            sample, ver = compose_sample(sid, subset, entry, group, symbols, random.Random(f"{args.seed}:{sid}"))
            samples.append(sample)
            verification.extend(ver)
            used_records.extend(records[c.namespace] for c in group)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from benchmarks.locoeval.loader import dump_samples

    dump_samples(samples, out / "samples.jsonl")
    _write_jsonl(out / "samples.verification.jsonl", verification)
    _write_jsonl(out / "deveval_tasks.jsonl", used_records)
    (out / "screening.json").write_text(json.dumps(screening, indent=1, sort_keys=True) + "\n")
    print(json.dumps({**set_statistics(samples), "seconds": round(time.monotonic() - t0, 1)}))
    return 0


def set_statistics(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of a sample set: per subset, projects, tasks, turns (min/mean/max), turn kinds."""
    turns = [len(s["outline"]) for s in samples]
    kinds = collections.Counter(st["kind"] for s in samples for st in s["outline"])
    by_subset = collections.Counter(s["subset"] for s in samples)
    tasks_by_subset = collections.Counter()
    for s in samples:
        tasks_by_subset[s["subset"]] += len(s["requirements"])
    return {"samples": len(samples), "samples_by_subset": dict(by_subset), "tasks_by_subset": dict(tasks_by_subset),
            "projects": len({s["project_path"] for s in samples}),
            "tasks": sum(len(s["requirements"]) for s in samples),
            "requirements_per_sample": dict(sorted(collections.Counter(len(s["requirements"]) for s in samples).items())),
            "turns": {"min": min(turns), "mean": round(sum(turns) / len(turns), 1), "max": max(turns)} if turns else {},
            "turn_kinds": dict(sorted(kinds.items()))}


def balanced_subsets(sizes: list[int]) -> list[str]:
    """Subsets for samples of these task counts: half of the samples each (the first one single-hop),
    with task totals as equal as possible (first such split in a fixed enumeration order)."""
    import itertools

    n = len(sizes)
    best = None
    for combo in itertools.combinations(range(n), (n + 1) // 2):
        if 0 not in combo:
            continue
        diff = abs(sum(sizes[i] for i in combo) - sum(sizes[i] for i in range(n) if i not in combo))
        if best is None or diff < best[0]:
            best = (diff, combo)
    chosen = set(best[1]) if best else set()
    return ["single-hop" if i in chosen else "multi-hop" for i in range(n)]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
