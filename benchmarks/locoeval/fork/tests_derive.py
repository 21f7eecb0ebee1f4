"""The fork's own tests, derived mechanically from the project's tests.

:func:`derive_tests` runs the task's test files with the fork's reference body spliced in, under
the recording plugin (``record_plugin``), twice, each time in a fresh process:

1. the public body's run gives the tests that already fail (left alone, listed);
2. every other failing test must have recorded assertions, and each recorded assertion is rewritten
   in its test file -- only its **expected operand**: the literal side (a literal or an expression of
   literals only, such as ``8 * 1024``) of ``assert a == b`` or of
   ``self.assertEqual(a, b)`` and its relatives (``assertListEqual``, ``assertDictEqual``,
   ``assertCountEqual``, ``assertAlmostEqual``, ...) (or, when that side is a
   ``pytest.mark.parametrize`` parameter, its literal value in the failing case; or, when that side is
   a plain local name, the literal of its one binding -- see "Bound names") becomes
   ``repr(actual)`` (only when ``ast.literal_eval`` of that repr gives the actual value back, same
   type); the ``True`` / ``False`` / ``None`` side of ``assert a is b`` / ``self.assertIs(a, b)``
   becomes the singleton the fork produced; each literal argument of a failing
   ``mock.assert_called_with(...)`` / ``assert_called_once_with(...)`` that differs from the actual
   call's becomes the actual argument (same positional / keyword shape required); or the class in
   ``pytest.raises(X)`` / ``self.assertRaises(X)`` becomes the class the fork raised (only when the
   test file can name it: a builtin, a class of the same module as ``X`` written as ``mod.X``, or a
   name the test file binds). No assertion is removed or loosened (``==`` stays ``==``, ``is`` stays
   ``is``), nothing else changes. Not rewritten (the task is dropped): an exception the test did not
   expect, ``DID NOT RAISE``, ``assertTrue(expr)`` / a bare ``assert expr``, membership
   (``in`` / ``assertIn``), ``assert_not_called``, assertions in the project's own helper modules;
3. the two recordings must agree (values compared after ``literal_eval``); a test failing without a
   record, an assertion whose two sides are both or neither literal, one assertion seen with two
   different values (a loop, a shared helper), an unstable run: the task is dropped, with the reason;
4. repeat with the rewritten files (a test may fail at a later assertion) until every test that
   passes under the public body passes under the fork's body, at most :data:`MAX_ROUNDS` rounds.

Bound names (derivation 5): in ``expected = {'a': 1}`` then ``assert f(x) == expected`` (or
``self.assertEqual(f(x), expected)``, or ``m.assert_called_with(expected)``) the rewritten operand is
the literal of the binding, when the test function binds the name exactly once (no second assignment,
augmented assignment, ``del``, loop / with / comprehension / walrus target, parameter, import,
``global`` / ``nonlocal``), by a plain ``name = <literal or expression of literals>`` statement of the
function's own body (not inside an ``if`` / loop / ``with`` / ``try``) before the assertion, and reads
it only as an operand of its assertions. Each such rewrite is remembered per file, function and name:
when another assertion fed by the same name later records a different value, the task is dropped
with that reason (never two values for one binding). Otherwise the reason of the "neither side" drop
names what disqualified the binding (bound twice, inside a block, read elsewhere, ...).

Result: the rewritten test files, a unified diff per file, every rewrite (file, line of the assertion,
test, old and new operand). :func:`observing_files` finds the other test files the fork makes fail (they must be
hidden from the method too).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.locoeval.fork.diffs import snapshot_text
from benchmarks.locoeval.fork.record_plugin import MARK, PLUGIN_MODULE, PLUGIN_SOURCE
from benchmarks.sandbox.base import PASS, ExecutionJob, ExecutionOutcome
from benchmarks.sandbox.local import LocalExecutor
from reconmem.platform import pyast

MAX_ROUNDS = 10
DERIVE_VERSION = 5             # screening rows of an older derivation are screened again (5: bound names)
_RAISES_CALLS = {"raises", "assertRaises"}
_EQ_METHODS = {"assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual", "assertDictEqual",
               "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual", "assertCountEqual",
               "assertAlmostEqual", "assertAlmostEquals"}
_IS_METHODS = {"assertIs"}
_CALL_ASSERTS = {"assert_called_with", "assert_called_once_with"}
_SINGLETONS = ("True", "False", "None")


class DeriveError(ValueError):
    """The fork's tests cannot be derived mechanically and safely; the message is the reason."""


class RecordingExecutor(LocalExecutor):
    """The local executor running pytest with the recording plugin, every test (no ``-x``),
    assertion rewriting on and test-order plugins off."""

    def pytest_args(self, test_ids: list[str]) -> list[str]:
        return ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", PLUGIN_MODULE,
                "--assert=rewrite", *test_ids]


@dataclass
class Recording:
    """One recorded run: its outcome, the failing node ids and the assertion records."""

    outcome: ExecutionOutcome
    failed: list[str]
    records: list[dict[str, Any]]
    complete: bool                  # the plugin's line was found and not truncated

    @property
    def log_tail(self) -> str:
        return self.outcome.log[-1500:]


def parse_recording(outcome: ExecutionOutcome) -> Recording:
    """The plugin's line from a run's log (the last one)."""
    at = outcome.log.rfind(MARK)
    if at < 0:
        return Recording(outcome, [], [], False)
    line = outcome.log[at + len(MARK):].split("\n", 1)[0]
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return Recording(outcome, [], [], False)
    return Recording(outcome, list(data.get("failed", [])), list(data.get("records", [])),
                     not data.get("overflow", False))


def record_run(executor: RecordingExecutor, root: Path, env: Any, test_ids: list[str], edits: dict[str, str],
               *, label: str = "", timeout_s: float | None = None) -> Recording:
    """Run ``test_ids`` on ``root`` with ``edits`` and the plugin; parse what it recorded."""
    edits = {**edits, f"{PLUGIN_MODULE}.py": PLUGIN_SOURCE}
    job = ExecutionJob(project_root=root, env=env, test_ids=list(test_ids), edits=edits, timeout_s=timeout_s,
                       label=label)
    return parse_recording(executor.run(job))


@dataclass
class Rewrite:
    """One rewritten expected operand."""

    file: str
    line: int
    test: str
    kind: str                       # compare | unittest | raises | call
    old: str
    new: str

    def record(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Derivation:
    """The fork's tests of one task (``ok``) or why they cannot be derived (``reason``)."""

    ok: bool
    reason: str = ""
    files: dict[str, str] = field(default_factory=dict)          # rewritten test files: path -> text
    diffs: dict[str, str] = field(default_factory=dict)
    rewrites: list[Rewrite] = field(default_factory=list)
    public_failures: list[str] = field(default_factory=list)
    rounds: int = 0
    runs: int = 0
    bound: dict[str, str] = field(default_factory=dict)         # "file::function::name" -> its rewritten literal

    def record(self) -> dict[str, Any]:
        return {"ok": self.ok, "reason": self.reason, "diffs": self.diffs,
                "rewrites": [r.record() for r in self.rewrites], "public_failures": self.public_failures,
                "rounds": self.rounds, "runs": self.runs}


def _literal(node: ast.AST) -> bool:
    """A literal, or an expression of literals only (``8 * 1024``, ``-(2 ** 10)``, a display of such)."""
    try:
        pyast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _of_literals(node)


def _of_literals(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _of_literals(node.operand)
    if isinstance(node, ast.BinOp):
        return _of_literals(node.left) and _of_literals(node.right)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_of_literals(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return None not in node.keys and all(_of_literals(n) for n in node.keys + node.values)
    return False


def _value_back(rec: dict[str, Any]) -> Any:
    return pyast.literal_eval(rec["repr"])


def _innermost(tree: ast.AST, line: int, kind: type | tuple) -> list[ast.AST]:
    nodes = [n for n in ast.walk(tree) if isinstance(n, kind) and n.lineno <= line <= n.end_lineno]
    return sorted(nodes, key=lambda n: (n.end_lineno - n.lineno, -n.col_offset))


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")


def _segment_span(text: str, node: ast.AST) -> tuple[int, int]:
    from benchmarks.locoeval.verified.source import SourceText

    return SourceText(text).span(node)


def _module_names(tree: ast.Module) -> set[str]:
    from benchmarks.locoeval.verified.distractors import module_bindings

    return set(module_bindings(tree))


def plan_rewrite(text: str, rec: dict[str, Any]) -> tuple[tuple[int, int], str, str]:
    """``((start, end), old, new)``: the one expected operand of the recorded assertion and its new text."""
    plans = plan_rewrites(text, rec)
    if len(plans) != 1:
        raise DeriveError(f"line {rec['line']}: {len(plans)} expected operands to rewrite")
    return plans[0]


def plan_rewrites(text: str, rec: dict[str, Any]) -> list[tuple[tuple[int, int], str, str]]:
    """``[((start, end), old, new)]``: the expected operand(s) of the recorded assertion and their new
    text (several only for a mock call's differing arguments)."""
    return [(span, old, new) for span, old, new, _ in _plan(text, rec)]


def _plan(text: str, rec: dict[str, Any]) -> list[tuple[tuple[int, int], str, str, str]]:
    """:func:`plan_rewrites` with, per rewrite, the bound name it went through (``function::name``,
    see :func:`_bound_literal`) or ``""``."""
    tree = pyast.parse(text)
    line = rec["line"]
    if rec["kind"] in ("compare", "unittest"):
        if rec["kind"] == "compare":
            cands = [n for n in _innermost(tree, line, ast.Assert)]
            if not cands:
                raise DeriveError(f"no assert statement at line {line}")
            test = cands[0].test
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is))):
                raise DeriveError(f"line {line}: the failing assert is not `a == b` or `a is b`")
            identity = isinstance(test.ops[0], ast.Is)
            left, right = test.left, test.comparators[0]
        else:
            calls = [c for c in _innermost(tree, line, ast.Call) if _call_name(c) in _EQ_METHODS | _IS_METHODS]
            if not calls or len(calls[0].args) < 2:
                raise DeriveError(f"line {line}: no assertEqual call with two positional arguments")
            identity = _call_name(calls[0]) in _IS_METHODS
            left, right = calls[0].args[0], calls[0].args[1]
        lit_l, lit_r = _literal(left), _literal(right)
        via = ""
        if lit_l == lit_r and not lit_l:
            param_l, param_r = (_parametrized_value(tree, line, side, rec.get("indices")) for side in (left, right))
            whys = ""
            if param_l is None and param_r is None:
                (param_l, key_l, why_l), (param_r, key_r, why_r) = (_bound_literal(tree, line, side)
                                                                    for side in (left, right))
                if param_l is not None and param_r is not None:
                    raise DeriveError(f"line {line}: both sides of the comparison are names bound to literals")
                via, whys = key_l or key_r, "; ".join(w for w in (why_l, why_r) if w)
            if (param_l is None) == (param_r is None):
                raise DeriveError(f"line {line}: neither side of the comparison is a literal or one parameter's "
                                  f"value" + (f" ({whys})" if whys else ""))
            lit_l, left, right = param_l is not None, param_l or left, param_r or right
        elif lit_l == lit_r:
            raise DeriveError(f"line {line}: both sides of the comparison are literals")
        expected, actual = (left, rec["right"]) if lit_l else (right, rec["left"])
        if not actual.get("literal"):
            raise DeriveError(f"line {line}: the actual value has no literal form ({actual.get('type')})")
        if identity and (ast.unparse(expected) not in _SINGLETONS or actual["repr"] not in _SINGLETONS):
            raise DeriveError(f"line {line}: an identity check against something other than True / False / None")
        span = _segment_span(text, expected)
        old = text[span[0]:span[1]]
        return [(span, old, _same_quotes(old, actual["repr"]), via)]
    if rec["kind"] == "call":
        return _plan_call(text, tree, rec)
    if rec["kind"] == "raises":
        calls = [c for c in _innermost(tree, line, ast.Call) if _call_name(c) in _RAISES_CALLS and c.args]
        if not calls:
            raise DeriveError(f"line {line}: no pytest.raises / assertRaises call")
        arg = calls[0].args[0]
        if isinstance(rec["expected"], list) or isinstance(arg, ast.Tuple):
            raise DeriveError(f"line {line}: a tuple of expected exceptions")
        new = _class_name_for(tree, arg, rec["expected"], rec["raised"])
        span = _segment_span(text, arg)
        return [(span, text[span[0]:span[1]], new, "")]
    raise DeriveError(f"unknown record kind {rec['kind']!r}")


def _plan_call(text: str, tree: ast.Module, rec: dict[str, Any]) -> list[tuple[tuple[int, int], str, str, str]]:
    """The differing arguments of a failing ``mock.assert_called_with(...)`` /
    ``assert_called_once_with(...)``: each must be a literal (or one parameter's value, or a name
    bound once to a literal) in the test,
    the actual argument must have a literal form, and the two calls must have the same shape."""
    line = rec["line"]
    calls = [c for c in _innermost(tree, line, ast.Call) if _call_name(c) in _CALL_ASSERTS]
    if not calls:
        raise DeriveError(f"line {line}: no assert_called_with / assert_called_once_with call")
    call, exp, act = calls[0], rec["expected"], rec["actual"]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise DeriveError(f"line {line}: the expected call unpacks its arguments")
    if len(call.args) != len(exp["args"]) or {k.arg for k in call.keywords} != set(exp["kwargs"]):
        raise DeriveError(f"line {line}: the recorded expected call is not the one written there")
    if len(act["args"]) != len(exp["args"]) or set(act["kwargs"]) != set(exp["kwargs"]):
        raise DeriveError(f"line {line}: the actual call passes other positional / keyword arguments")
    pairs = [(n, e, a) for n, e, a in zip(call.args, exp["args"], act["args"])]
    pairs += [(k.value, exp["kwargs"][k.arg], act["kwargs"][k.arg]) for k in call.keywords]
    out = []
    for node, e, a in pairs:
        if _same_value(e, a):
            continue
        if not a.get("literal"):
            raise DeriveError(f"line {line}: the actual argument has no literal form ({a.get('type')})")
        via = ""
        if not _literal(node):
            param = _parametrized_value(tree, line, node, rec.get("indices"))
            if param is None:
                param, via, why = _bound_literal(tree, line, node)
                if param is None:
                    raise DeriveError(f"line {line}: a differing argument of the expected call is neither a "
                                      f"literal nor one parameter's value" + (f" ({why})" if why else ""))
            node = param
        span = _segment_span(text, node)
        old = text[span[0]:span[1]]
        out.append((span, old, _same_quotes(old, a["repr"]), via))
    if not out:
        raise DeriveError(f"line {line}: the expected and the actual call differ in no argument's value")
    return out


def _same_value(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Two recorded values are equal (literals by value and type; otherwise mock's ``ANY`` or the same repr)."""
    if expected.get("repr") == "<ANY>":
        return True
    if expected.get("literal") and actual.get("literal"):
        e, a = _value_back(expected), _value_back(actual)
        return type(e) is type(a) and e == a
    return _masked(expected.get("repr")) == _masked(actual.get("repr"))


def _parametrized_value(tree: ast.Module, line: int, operand: ast.AST, indices: dict[str, int] | None) -> ast.AST | None:
    """The literal a test's ``@pytest.mark.parametrize`` gave ``operand`` (a parameter name) in the
    recorded case (``indices``: the case's index per parameter), or None."""
    if not isinstance(operand, ast.Name) or not indices or operand.id not in indices:
        return None
    funcs = _innermost(tree, line, (ast.FunctionDef, ast.AsyncFunctionDef))
    if not funcs:
        return None
    for deco in funcs[0].decorator_list:
        if not (isinstance(deco, ast.Call) and _call_name(deco) == "parametrize" and len(deco.args) >= 2):
            continue
        names_node, values = deco.args[0], deco.args[1]
        if isinstance(names_node, ast.Constant) and isinstance(names_node.value, str):
            names = [n.strip() for n in names_node.value.split(",") if n.strip()]
        elif isinstance(names_node, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in names_node.elts):
            names = [e.value for e in names_node.elts]
        else:
            continue
        if operand.id not in names:
            continue
        if not isinstance(values, (ast.List, ast.Tuple)) or indices[operand.id] >= len(values.elts):
            return None
        case = values.elts[indices[operand.id]]
        if isinstance(case, ast.Call) and _call_name(case) == "param":
            case = case.args if len(names) > 1 else (case.args[0] if case.args else None)
            if isinstance(case, list):
                case = ast.Tuple(elts=case) if len(case) == len(names) else None
        if case is None:
            return None
        if len(names) > 1:
            if not isinstance(case, (ast.Tuple, ast.List)) or len(case.elts) != len(names):
                return None
            case = case.elts[names.index(operand.id)]
        return case if _literal(case) and hasattr(case, "lineno") else None
    return None


def _bound_literal(tree: ast.Module, line: int, operand: ast.AST) -> tuple[ast.AST | None, str, str]:
    """``(literal, key, why)``: the literal a plain local name of the test function holding ``line`` is
    bound to, and ``key`` (``function::name``), when the function binds the name exactly once, by a
    ``name = <literal>`` statement of its own body (not inside a block that could be skipped or
    repeated) ending before ``line``, and reads it only as an operand of its assertions; otherwise
    ``(None, "", why)`` (``why`` empty when ``operand`` is no name the function binds)."""
    funcs = _innermost(tree, line, (ast.FunctionDef, ast.AsyncFunctionDef))
    if not isinstance(operand, ast.Name) or not funcs:
        return None, "", ""
    func, name = funcs[0], operand.id
    sites = _binding_lines(func, name)
    if not sites:
        return None, "", ""
    stmts = [s for s in func.body if (isinstance(s, ast.Assign) and len(s.targets) == 1
                                      and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name)
             or (isinstance(s, ast.AnnAssign) and s.simple and s.value is not None
                 and isinstance(s.target, ast.Name) and s.target.id == name)]
    if len(sites) > 1:
        return None, "", f"`{name}` is bound {len(sites)} times in the test (lines {', '.join(map(str, sites))})"
    if not stmts:
        return None, "", f"`{name}` is not bound by a plain assignment of the test's own body (line {sites[0]})"
    stmt = stmts[0]
    if not _literal(stmt.value):
        return None, "", f"`{name}` is bound to something other than a literal (line {stmt.lineno})"
    if stmt.end_lineno >= line:
        return None, "", f"`{name}` is bound after the assertion (line {stmt.lineno})"
    operands = {id(n) for n in _assertion_operands(func)}
    other = sorted({n.lineno for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == name
                    and isinstance(n.ctx, ast.Load) and id(n) not in operands})
    if other:
        return None, "", (f"`{name}` is also read other than as an assertion's operand (line "
                          f"{', '.join(map(str, other))})")
    owner = [c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and func in c.body]
    return stmt.value, "::".join([*owner, func.name, name]), ""


def _binding_lines(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> list[int]:
    """The lines where ``func`` (nested scopes included) binds, deletes or declares ``name``: assignment
    and loop / with / walrus / comprehension targets, parameters, ``except ... as``, imports, nested
    definitions, match captures, ``global`` / ``nonlocal``."""
    lines = []
    for n in ast.walk(func):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)):
            lines.append(n.lineno)
        elif isinstance(n, ast.arg) and n.arg == name:
            lines.append(n.lineno)
        elif isinstance(n, ast.ExceptHandler) and n.name == name:
            lines.append(n.lineno)
        elif isinstance(n, ast.alias) and (n.asname or n.name.split(".")[0]) == name:
            lines.append(getattr(n, "lineno", func.lineno))
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not func \
                and n.name == name:
            lines.append(n.lineno)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name == name:
            lines.append(n.lineno)
        elif isinstance(n, ast.MatchMapping) and n.rest == name:
            lines.append(n.lineno)
        elif isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
            lines.append(n.lineno)
    return sorted(lines)


def _assertion_operands(func: ast.AST) -> list[ast.AST]:
    """The operands of ``func``'s assertions the derivation rewrites: both sides of ``assert a == b`` /
    ``assert a is b`` and of ``assertEqual`` (relatives, ``assertIs``), the arguments of a mock's
    ``assert_called_with`` / ``assert_called_once_with``."""
    out: list[ast.AST] = []
    for n in ast.walk(func):
        if (isinstance(n, ast.Assert) and isinstance(n.test, ast.Compare) and len(n.test.ops) == 1
                and isinstance(n.test.ops[0], (ast.Eq, ast.Is))):
            out += [n.test.left, n.test.comparators[0]]
        elif isinstance(n, ast.Call) and _call_name(n) in _EQ_METHODS | _IS_METHODS:
            out += n.args[:2]
        elif isinstance(n, ast.Call) and _call_name(n) in _CALL_ASSERTS:
            out += [*n.args, *(k.value for k in n.keywords)]
    return out


def _same_quotes(old: str, new: str) -> str:
    """A str repr in the old literal's double quotes when that is the same value."""
    if old.startswith('"') and new.startswith("'") and new.endswith("'") and '"' not in new and "\\" not in new:
        return '"' + new[1:-1] + '"'
    return new


def _class_name_for(tree: ast.Module, arg: ast.AST, expected: dict[str, str], raised: dict[str, str]) -> str:
    name = raised["name"]
    if "." in name:
        raise DeriveError(f"raised class {raised['module']}.{name} is nested")
    if raised["module"] == "builtins" and isinstance(getattr(builtins, name, None), type):
        return name
    if isinstance(arg, ast.Attribute) and raised["module"] == expected["module"]:
        return f"{ast.unparse(arg.value)}.{name}"
    if name in _module_names(tree):
        return name
    raise DeriveError(f"the test file cannot name the raised class {raised['module']}.{name}")


def _normalised(records: list[dict[str, Any]]) -> dict[tuple, Any]:
    """Records keyed by (test, file, line, kind), value the recorded payload compared by value
    (addresses in non-literal reprs masked)."""
    out: dict[tuple, Any] = {}
    for r in records:
        key = (r.get("test"), r["file"], r["line"], r["kind"])
        if r["kind"] == "raises":
            val = json.dumps([r["expected"], r["raised"]], sort_keys=True)
        elif r["kind"] == "call":
            val = _masked(json.dumps([r["expected"], r["actual"]], sort_keys=True))
        else:
            val = []
            for side in ("left", "right"):
                v = r[side]
                try:
                    val.append(("lit", _value_back(v)) if v.get("literal") else ("repr", _masked(v.get("repr"))))
                except (ValueError, SyntaxError):
                    val.append(("repr", _masked(v.get("repr"))))
            val = tuple(val)
        if key in out and out[key] != val:
            raise DeriveError(f"{r['file']}:{r['line']}: one assertion saw different values (a loop or a shared "
                              f"helper)")
        out[key] = val
    return out


def _masked(text: str | None) -> str | None:
    """``text`` with object addresses and mocks' ids masked."""
    return re.sub(r"id='\d+'", "id='?'", re.sub(r"0x[0-9a-fA-F]{6,}", "0x?", text)) if text else text


def _same(a: Recording, b: Recording) -> bool:
    if sorted(a.failed) != sorted(b.failed):
        return False
    try:
        return _normalised(a.records) == _normalised(b.records)
    except DeriveError:
        return False


def unified_diffs(original: dict[str, str], rewritten: dict[str, str]) -> dict[str, str]:
    """A unified diff per rewritten file (``a/<path>`` -> ``b/<path>``)."""
    return {rel: "".join(difflib.unified_diff(original[rel].splitlines(keepends=True),
                                              rewritten[rel].splitlines(keepends=True), f"a/{rel}", f"b/{rel}"))
            for rel in sorted(rewritten) if rewritten[rel] != original[rel]}


def derive_tests(*, executor: RecordingExecutor, root: Path, env: Any, target_file: str, fork_text: str,
                 test_files: list[str], timeout_s: float | None = None,
                 public: Recording | None = None, test_ids: list[str] | None = None) -> Derivation:
    """The fork's tests for ``test_files`` (snapshot-relative) when ``target_file`` holds ``fork_text``.

    ``test_ids``: what the runs run (default: the whole ``test_files``; node ids when those are too
    slow). ``public``: the recorded run of the same ids on the pristine tree, when the caller has it.
    """
    run_ids = list(test_ids or test_files)
    original = {rel: snapshot_text(root, rel) for rel in test_files}
    current = dict(original)
    der = Derivation(ok=False)
    if public is None:
        public = record_run(executor, root, env, run_ids, {}, label="public", timeout_s=timeout_s)
        der.runs += 1
    if not public.complete:
        der.reason = f"the public run recorded nothing ({public.outcome.outcome}): {public.log_tail[-300:]}"
        return der
    der.public_failures = sorted(public.failed)
    baseline = set(public.failed)
    for rnd in range(1, MAX_ROUNDS + 1):
        der.rounds = rnd
        edits = {target_file: fork_text, **{k: v for k, v in current.items() if v != original[k]}}
        runs = [record_run(executor, root, env, run_ids, edits, label=f"fork round {rnd}.{i}",
                           timeout_s=timeout_s) for i in (1, 2)]
        der.runs += 2
        if not all(r.complete for r in runs):
            bad = next(r for r in runs if not r.complete)
            what = "too many failing assertions to record" if MARK in bad.outcome.log else "a fork run recorded nothing"
            der.reason = f"round {rnd}: {what} ({bad.outcome.outcome})"
            return der
        if not _same(*runs):
            der.reason = f"round {rnd}: two runs of the fork disagree (failures or recorded values)"
            return der
        new_failures = sorted(set(runs[0].failed) - baseline)
        if not new_failures:
            der.ok = True
            der.files = {k: v for k, v in current.items() if v != original[k]}
            der.diffs = unified_diffs(original, current)
            if not der.rewrites:
                der.ok, der.reason = False, "the fork changes no test outcome"
            return der
        try:
            changed = _apply_round(current, runs[0], new_failures, test_files, der)
        except DeriveError as exc:
            der.reason = f"round {rnd}: {exc}"
            return der
        if not changed:
            der.reason = f"round {rnd}: failing tests but nothing to rewrite"
            return der
    der.reason = f"tests still fail after {MAX_ROUNDS} rounds of rewriting"
    return der


def _apply_round(current: dict[str, str], run: Recording, new_failures: list[str], test_files: list[str],
                 der: Derivation) -> int:
    """Rewrite every recorded assertion of the newly failing tests in ``current``; returns how many."""
    by_test: dict[str, list[dict]] = {}
    for r in run.records:
        by_test.setdefault(r.get("test") or "", []).append(r)
    plans: dict[str, dict[tuple[int, int], tuple[str, str, dict]]] = {}
    for nodeid in new_failures:
        if nodeid.startswith("collect:"):
            raise DeriveError(f"a test file fails to collect under the fork ({nodeid[8:]})")
        recs = by_test.get(nodeid, [])
        if not recs:
            raise DeriveError(f"{nodeid} fails without a recorded assertion")
        for rec in recs:
            rel = rec.get("file")
            if rel not in current:
                raise DeriveError(f"{nodeid}: the failing assertion is in {rel}, not in a test file of the task")
            for span, old, new, via in _plan(current[rel], rec):
                if old == new:
                    raise DeriveError(f"{rel}:{rec['line']}: the expected operand already is {new}")
                if via:
                    had = der.bound.setdefault(f"{rel}::{via}", new)
                    if had != new:
                        raise DeriveError(f"{rel}:{rec['line']}: `{via.rsplit('::', 1)[1]}`, bound once in "
                                          f"{via.rsplit('::', 1)[0]}, feeds assertions that saw different values "
                                          f"({had} and {new})")
                seen = plans.setdefault(rel, {}).get(span)
                if seen is not None and seen[1] != new:
                    raise DeriveError(f"{rel}:{rec['line']}: one expected operand, two different actual values "
                                      f"(a loop or a shared helper)")
                plans[rel][span] = (old, new, rec)
    n = 0
    for rel, edits in plans.items():
        text = current[rel]
        for (a, b), (old, new, rec) in sorted(edits.items(), reverse=True):
            text = text[:a] + new + text[b:]
            der.rewrites.append(Rewrite(rel, rec["line"], rec.get("test") or "", rec["kind"], old, new))
            n += 1
        try:
            pyast.parse(text)
        except SyntaxError as exc:
            raise DeriveError(f"{rel}: the rewritten file does not parse ({exc})") from None
        current[rel] = text
    return n


def observing_files(*, executor: RecordingExecutor, root: Path, env: Any, target_file: str, fork_text: str,
                    candidates: list[str], timeout_s: float | None = None) -> tuple[list[str], int]:
    """``(files, runs)``: those of ``candidates`` in which a test passes on the pristine tree and fails
    with the fork (their own tests unchanged)."""
    if not candidates:
        return [], 0
    public = record_run(executor, root, env, candidates, {}, label="observers public", timeout_s=timeout_s)
    fork = record_run(executor, root, env, candidates, {target_file: fork_text}, label="observers fork",
                      timeout_s=timeout_s)
    if not (public.complete and fork.complete):
        return sorted(candidates), 2          # cannot tell: hide them all
    new = set(fork.failed) - set(public.failed)
    files = {f.split("::", 1)[0] for f in new if not f.startswith("collect:")}
    if any(f.startswith("collect:") for f in new):
        files |= set(candidates)
    return sorted(files), 2




def mentioning_test_files(files: dict[str, str], name: str, is_test) -> list[str]:
    """Test files of a snapshot whose text uses ``name`` as a word."""
    pat = re.compile(rf"\b{re.escape(name)}\b")
    return sorted(rel for rel, text in files.items() if rel.endswith(".py") and is_test(rel) and pat.search(text))


def passed(outcome: ExecutionOutcome) -> bool:
    return outcome.outcome == PASS
