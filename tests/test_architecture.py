"""The import rules of docs/ARCHITECTURE.md, checked on every module of the tree.

Rooms, lowest first: ``reconmem.platform`` <- (``reconmem.memory``, ``baselines``) <- ``benchmarks``
<- ``scripts``. A module may import its own room and the rooms below it; the two method rooms
(the ReConMem method and the baselines) do not import each other. No import cycles, counting imports inside
functions too (a lazy import that closes a circle is still a circle of concepts); a package's
``__init__`` re-exporting its own submodules is not a cycle.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("reconmem", "baselines", "benchmarks", "scripts")


def _room(module: str) -> str | None:
    if module.startswith("reconmem.platform") or module == "reconmem":
        return "platform"
    if module.startswith("reconmem.memory"):
        return "memory"
    for top in ("baselines", "benchmarks", "scripts"):
        if module == top or module.startswith(top + "."):
            return top
    return None


# room -> rooms it may import
ALLOWED = {
    "platform": {"platform"},
    "memory": {"platform", "memory"},
    "baselines": {"platform", "baselines"},
    "benchmarks": {"platform", "memory", "baselines", "benchmarks"},
    "scripts": {"platform", "memory", "baselines", "benchmarks", "scripts"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(module: str, path: Path, known: set[str]) -> tuple[set[str], set[str]]:
    """(module-level imports, all imports) of project modules, resolved to known module names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    top: set[str] = set()
    every: set[str] = set()

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST, level_top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            child_top = level_top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.If) and _is_type_checking(child):
                child_top = False
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    pkg_parts = module.split(".") if is_pkg else module.split(".")[:-1]
                    pkg_parts = pkg_parts[: len(pkg_parts) - (child.level - 1)]
                    base = ".".join(pkg_parts + ([base] if base else []))
                names = [f"{base}.{a.name}" for a in child.names] + [base]
            for n in names:
                r = resolve(n)
                if r and r != module:
                    every.add(r)
                    if child_top:
                        top.add(r)
            visit(child, child_top)

    visit(tree, True)
    return top, every


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    mods = _modules()
    known = set(mods)
    top, every = {}, {}
    for m, p in mods.items():
        top[m], every[m] = _imports(m, p, known)
    return top, every


def test_imports_follow_the_room_order(graph):
    _, every = graph
    bad = []
    for m, deps in sorted(every.items()):
        room = _room(m)
        for d in sorted(deps):
            if _room(d) not in ALLOWED[room]:
                bad.append(f"{m} ({room}) imports {d} ({_room(d)})")
    assert not bad, "imports against the direction platform <- methods <- benchmarks <- scripts:\n" + "\n".join(bad)


def test_no_import_cycles(graph):
    _, top = graph
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(top.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                dfs(d)
        stack.pop()
        state[m] = 2

    for m in sorted(top):
        if m not in state:
            dfs(m)
    # a package __init__ importing its own submodules is not a cycle of concepts
    real = [c for c in cycles if not all(x == c[0] or x.startswith(c[0] + ".") for x in c)
            and not any(a.startswith(b + ".") or b.startswith(a + ".") for a, b in zip(c, c[1:]) if len(set(c)) == 2)]
    assert not real, "import cycles:\n" + "\n".join(" -> ".join(c) for c in real)


def test_every_module_imports():
    failed = []
    for m in sorted(_modules()):
        if m.startswith("scripts.") and m.endswith("__main__"):
            continue
        try:
            importlib.import_module(m)
        except Exception as exc:  # noqa: BLE001 - collect them all
            failed.append(f"{m}: {type(exc).__name__}: {exc}")
    assert not failed, "\n".join(failed)


# Third-party packages that read the entry points' environment when imported (reconmem/platform/offline_env.py).
ENV_READERS = {"litellm", "torch", "transformers", "sentence_transformers", "huggingface_hub", "tokenizers",
               "tiktoken", "onnxruntime", "matplotlib"}
OFFLINE_ENV = "reconmem.platform.offline_env"


def _env_readers_imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names & ENV_READERS


def _sets_env_before_project_imports(path: Path) -> bool:
    """A module-level ``set_offline_env()`` call before the first module-level project import."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "set_offline_env"):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m.split(".")[0] in PACKAGES and m != OFFLINE_ENV for m in mods):
                return False
    return False


def test_scripts_that_reach_models_set_the_offline_env_first(graph):
    """docs/ARCHITECTURE.md: entry points that load models, litellm or matplotlib (counting the imports
    of the modules they import, lazy ones too) call ``set_offline_env()`` before those imports."""
    _, every = graph
    mods = _modules()
    readers = {m for m, p in mods.items() if _env_readers_imported(p)}
    missing = []
    for script, path in sorted(mods.items()):
        if not script.startswith("scripts."):
            continue
        seen, stack = set(), [script]
        while stack:
            m = stack.pop()
            if m not in seen:
                seen.add(m)
                stack.extend(every.get(m, ()))
        if seen & readers and not _sets_env_before_project_imports(path):
            missing.append(f"{script} (reaches {sorted(seen & readers)[0]})")
    assert readers, "no module imports an environment-reading package: the scan is broken"
    assert not missing, "scripts without a module-level set_offline_env() before their package imports:\n" + "\n".join(missing)
