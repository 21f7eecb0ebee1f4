"""The one purpose taxonomy: the client refuses an unregistered purpose, every purpose the source
tree passes to the client is registered, every registered purpose is passed somewhere, and the
metrics' sets are the taxonomy's."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reconmem.platform.llm.purposes import (
    CALL_PURPOSES,
    EXCLUDED_PURPOSES,
    MEMORY_PURPOSES,
    PURPOSES,
    RESPONSE_PURPOSES,
    Kind,
    call_purpose,
    role_of,
)
from reconmem.platform.testing import ScriptedLLM

ROOT = Path(__file__).resolve().parents[2]
SOURCE_PACKAGES = ("reconmem", "baselines", "benchmarks", "scripts")
# The client package passes purposes through (client, ledger, cache rows); it never originates one.
CLIENT_PACKAGE = "reconmem/platform/llm/"
CLIENT_METHODS = frozenset({"chat", "chat_json"})
# ``chat(body)`` of the in-process llama.cpp model: the transport under the client, no purpose.
LOCAL_MODEL_CHATS = frozenset({"reconmem/platform/local_model/provider.py", "benchmarks/perf/prefill.py"})
MSGS = [{"role": "user", "content": "hi"}]


# ------------------------------------------------------------------------------ source scan
@dataclass
class Scan:
    """What the scan found: purpose literals (with where), and the places it could not resolve."""

    literals: dict[str, list[str]] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    calls_without_purpose: list[str] = field(default_factory=list)

    def add(self, purpose: str, where: str) -> None:
        self.literals.setdefault(purpose, []).append(where)


def _functions(tree: ast.Module) -> dict[str, list[list[str]]]:
    """Function name -> the positional parameter lists of its definitions in the module."""
    out: dict[str, list[list[str]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
            out.setdefault(node.name, []).append(params)
    return out


def _scopes(tree: ast.Module) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    """Every node with its innermost enclosing function (None at module level)."""
    stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while stack:
        node, scope = stack.pop()
        yield node, scope
        inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else scope
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope``'s body, not descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _assigned(scope: ast.AST | None, tree: ast.Module, name: str) -> list[ast.expr]:
    """The values assigned to ``name`` directly in ``scope`` (the module's top level when None)."""
    values = []
    for node in _own_nodes(tree if scope is None else scope):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            values.append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name \
                and node.value is not None:
            values.append(node.value)
    return values


def _parameters(scope: ast.AST | None) -> set[str]:
    if scope is None:
        return set()
    args = scope.args  # type: ignore[attr-defined]
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


def _resolve(expr: ast.expr, scope: ast.AST | None, tree: ast.Module, where: str, scan: Scan,
             parents: list[ast.AST | None], strict: bool = True) -> None:
    """Record the purpose literals ``expr`` can take; a parameter passes the caller's purpose through.
    An expression it cannot read is reported when ``strict``."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        scan.add(expr.value, where)
    elif isinstance(expr, ast.IfExp):
        _resolve(expr.body, scope, tree, where, scan, parents, strict)
        _resolve(expr.orelse, scope, tree, where, scan, parents, strict)
    elif isinstance(expr, ast.Name):
        for i, level in enumerate(parents):
            if expr.id in _parameters(level):
                return
            values = [v for v in _assigned(level, tree, expr.id) if not (isinstance(v, ast.Name) and v.id == expr.id)]
            if values:
                for value in values:
                    _resolve(value, level, tree, where, scan, parents[i:], strict)
                return
        if strict:
            scan.unresolved.append(f"{where}: purpose {ast.unparse(expr)}")
    elif strict:
        scan.unresolved.append(f"{where}: purpose {ast.unparse(expr)}")


def scan_source(text: str, rel: str, scan: Scan) -> None:
    """Add one module's purposes to ``scan``: ``purpose=`` arguments and parameter defaults,
    ``"purpose":`` dict entries, positional purposes of the module's own functions, and every
    ``chat`` / ``chat_json`` call without a purpose."""
    tree = ast.parse(text)
    functions = _functions(tree)
    enclosing: dict[ast.AST, ast.AST | None] = {}
    for node, scope in _scopes(tree):
        enclosing[node] = scope

    def chain(scope: ast.AST | None) -> list[ast.AST | None]:
        out = [scope]
        while scope is not None:
            scope = enclosing.get(scope)
            out.append(scope)
        return out

    for node, scope in _scopes(tree):
        where = f"{rel}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            for arg, default in pairs:
                if arg.arg == "purpose":
                    _resolve(default, scope, tree, where, scan, chain(scope))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "purpose":
                    _resolve(value, scope, tree, where, scan, chain(scope))
        elif isinstance(node, ast.Call):
            keywords = {k.arg for k in node.keywords}
            for k in node.keywords:
                if k.arg == "purpose":
                    _resolve(k.value, scope, tree, where, scan, chain(scope))
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            for params in functions.get(name or "", ()):
                if isinstance(func, ast.Attribute) and params[:1] in (["self"], ["cls"]):
                    params = params[1:]
                if "purpose" in params and params.index("purpose") < len(node.args):
                    _resolve(node.args[params.index("purpose")], scope, tree, where, scan, chain(scope), strict=False)
            if isinstance(func, ast.Attribute) and func.attr in CLIENT_METHODS and "purpose" not in keywords \
                    and None not in keywords and rel not in LOCAL_MODEL_CHATS:
                scan.calls_without_purpose.append(f"{where}: {ast.unparse(node)[:80]}")


@pytest.fixture(scope="module")
def tree_scan() -> Scan:
    scan = Scan()
    for package in SOURCE_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(CLIENT_PACKAGE):
                continue
            scan_source(path.read_text(encoding="utf-8"), rel, scan)
    return scan


def test_every_purpose_the_source_passes_is_registered(tree_scan):
    unregistered = {p: w for p, w in tree_scan.literals.items() if p not in PURPOSES}
    assert not unregistered, f"purposes not in reconmem/platform/llm/purposes.py: {unregistered}"
    assert not tree_scan.unresolved, f"purposes the scan cannot read: {tree_scan.unresolved}"
    assert not tree_scan.calls_without_purpose, f"client calls without purpose=: {tree_scan.calls_without_purpose}"


def test_every_registered_purpose_is_passed_somewhere(tree_scan):
    dead = sorted(set(PURPOSES) - set(tree_scan.literals))
    assert not dead, f"registered purposes no code passes (remove them): {dead}"


def test_the_scan_sees_what_it_must_refuse():
    source = '''
PURPOSE = "judge"
def ask(llm, purpose: str = "turn_generation"):
    llm.chat([], purpose=purpose)
    llm.chat([], purpose=PURPOSE)
    llm.chat_json([], purpose="made_up")
    llm.chat([])
    kw = {"purpose": "also_made_up"}
    llm.chat([], **kw)
    for p in ("x",):
        llm.chat([], purpose=p)
class Agent:
    def _chat(self, messages, purpose):
        return self.llm.chat(messages, purpose=purpose)
    def run(self):
        self._chat([], "positional_made_up")
'''
    scan = Scan()
    scan_source(source, "example.py", scan)
    assert set(scan.literals) == {"judge", "turn_generation", "made_up", "also_made_up", "positional_made_up"}
    assert scan.literals["made_up"] == ["example.py:6"]
    assert scan.calls_without_purpose == ["example.py:7: llm.chat([])"]
    assert scan.unresolved == ["example.py:11: purpose p"]


# ------------------------------------------------------------------------------ the client
def test_the_client_refuses_an_unregistered_purpose():
    llm = ScriptedLLM(["ok", "ok"])
    with pytest.raises(ValueError, match=r"purpose='served' is not registered in reconmem/platform/llm/purposes.py"):
        llm.chat(MSGS, purpose="served")
    with pytest.raises(ValueError, match="is not registered"):
        llm.chat(MSGS, purpose="prior_spend")  # a spend seed, not a call
    with pytest.raises(ValueError, match="is not registered"):
        llm.chat_json(MSGS, purpose="")
    assert llm.calls == [] and len(llm.ledger) == 0
    assert llm.chat(MSGS, purpose="persona").text == "ok"
    assert [e["purpose"] for e in llm.ledger.events] == ["persona"]


def test_call_purposes_are_every_kind_but_the_spend_seed():
    assert CALL_PURPOSES == {n for n, p in PURPOSES.items() if p.kind is not Kind.SPEND_SEED}
    assert call_purpose("judge").role == "judge"
    assert role_of("mock_user") == "user" and role_of("coverage_judge") == "judge"
    assert role_of("no_such_purpose") == "backbone"


# ------------------------------------------------------------------------------ consumers
def test_the_metrics_sets_are_the_taxonomys():
    from benchmarks import accounting
    from benchmarks.analysis import inspect_export, tables
    from benchmarks.cab import metrics as cab_metrics
    from benchmarks.locoeval import metrics as loco_metrics

    assert EXCLUDED_PURPOSES == {"mock_user", "judge", "coverage_judge", "builder"}
    assert RESPONSE_PURPOSES == {"turn_generation", "task_generation", "maintainer_tool_step"}
    assert MEMORY_PURPOSES == {"memory_sketching", "memory_update", "memory_extraction", "memory_summarisation",
                               "persona"}
    assert cab_metrics.MEMORY_PURPOSES is MEMORY_PURPOSES
    assert cab_metrics.MAINTAINER_PURPOSES == {"turn_generation", "maintainer_tool_step"}
    assert accounting.EXCLUDED_PURPOSES is EXCLUDED_PURPOSES
    assert accounting.RESPONSE_PURPOSES is RESPONSE_PURPOSES and inspect_export.RESPONSE_PURPOSES is RESPONSE_PURPOSES
    assert set(loco_metrics.STAGES) <= set(PURPOSES)
    assert tables.STAGE_LABELS == {"turn_generation": "Turn Generation", "task_generation": "Task Generation",
                                   "memory_sketching": "Memory Sketching", "memory_update": "Memory Update",
                                   "other": "Other"}
    assert [accounting.call_class(p) for p in ("judge", "task_generation", "persona", "unregistered")] == \
        ["excluded", "response", "memory", "memory"]
    assert [accounting.is_counted(p) for p in ("coverage_judge", "mock_user", "turn_generation", "unregistered")] == \
        [False, False, True, True]


def test_the_estimator_prices_each_purpose_on_its_roles_backbone():
    from benchmarks.estimate import backbone_option

    assert {p: backbone_option(p) for p in ("mock_user", "judge", "turn_generation", "memory_update")} == {
        "mock_user": "user_backbone", "judge": "judge_backbone", "turn_generation": "backbone",
        "memory_update": "backbone"}
