"""Leak-canary helpers (test only): a ContextManager that records everything a runner hands it, the
grader-side secrets of the demo samples and CAB fixtures, and scripted replies (not model output).

Importable from both the current tree and an old checkout (``PYTHONPATH=<checkout>:tests/trust``),
so the same canary can be run against an earlier commit's runners.
"""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconmem.platform.context import Context, ContextManager, Reply, Turn, build_messages

RECORD: list["Received"] = []  # one entry per Session the recorder was started with (in-process runs)
MAX_DISK_FILE = 1_000_000       # bytes: larger files under the repository root are recorded by name only


@dataclass
class Received:
    """Everything one conversation handed to the method: (channel, text) pairs."""

    sample_id: str
    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, channel: str, value: Any) -> None:
        text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)
        self.items.append((channel, text))


def _leaves(value: Any, path: str = "") -> list[tuple[str, str]]:
    """(key path, string) for every string leaf and every dict key of a JSON-like value."""
    out: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((f"{path}.{k}:key", str(k)))
            out += _leaves(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out += _leaves(v, f"{path}[{i}]")
    elif isinstance(value, str):
        out.append((path, value))
    elif value is not None:
        out.append((path, str(value)))
    return out


class RecordingManager(ContextManager):
    """Records the Session (prompt, meta, every repository entity's text), every query, every Turn,
    and the contexts handed back to it; answers with one plain backbone call per query."""

    name = "leak_canary"

    def __init__(self, **_ignored: Any) -> None:  # accepts any method config's options
        super().__init__()
        self.received: Received | None = None

    def start(self, session) -> None:
        super().start(session)
        self.received = Received(session.sample_id)
        RECORD.append(self.received)
        rec = self.received
        rec.add("session.sample_id", session.sample_id)
        rec.add("leaf:session.sample_id", session.sample_id)
        rec.add("session.system_prompt", session.system_prompt)
        rec.add("session.meta", session.meta)
        for path, leaf in _leaves(session.meta, "session.meta"):
            rec.add(f"leaf:{path}", leaf)
        rec.add("session.repo_context_k", session.repo_context_k)
        repo = session.repo
        if repo is not None:
            rec.add("repo.root", str(getattr(repo, "root", "")))
            _record_disk(rec, Path(getattr(repo, "root", "")))
            for path in list(repo.entities):
                rec.add("repo.path", path)
                try:
                    rec.add(f"repo.source:{path}", repo.source(path))
                except Exception as exc:  # noqa: BLE001 - a directory has no source
                    rec.add(f"repo.source_error:{path}", repr(exc))
        dump = os.environ.get("LEAK_CANARY_DUMP")
        if dump:  # subprocess runs: the test reads the record from here
            Path(dump).mkdir(parents=True, exist_ok=True)

    def _rec(self) -> Received:
        assert self.received is not None
        return self.received

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        self._rec().add("query", query)
        ctx = Context(query=query, messages=build_messages(self._session().system_prompt, [], [], query))
        return ctx

    def respond(self, query: str, *, purpose: str = "turn_generation", read_only: bool = False) -> Reply:
        ctx = self.context_for(query, read_only=read_only)
        resp = self._session().llm.chat(ctx.messages, purpose=purpose)
        return Reply(text=resp.text, context=ctx)

    def observe(self, turn: Turn) -> None:
        rec = self._rec()
        data = turn.to_dict()
        rec.add("turn", data)
        for path, leaf in _leaves(data, f"turn[{turn.index}]"):
            rec.add(f"leaf:{path}", leaf)

    def state(self) -> dict[str, Any]:
        return {"method": self.name}


def _record_disk(rec: Received, root: Path) -> None:
    """Every file under the indexed root, as a method's own file reads would find it: name and text."""
    if not str(root) or not root.is_dir():
        return
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(root).as_posix()
        rec.add(f"disk.name:{rel}", rel)
        if p.stat().st_size <= MAX_DISK_FILE:
            rec.add(f"disk:{rel}", p.read_bytes().decode("utf-8", errors="replace"))


def disk_markers(received: Received) -> list[str]:
    """Harness files in the tree a method reads (a blanked copy's record of what it changed)."""
    return [t for c, t in received.items if c.startswith("disk.name:")
            and Path(t).name in (".locoeval_blanked.json", "blanked.json")]


# ------------------------------------------------------------------------- scripted replies (not a model's)
def reply(messages: list[dict[str, Any]], purpose: str) -> str:
    """Backbone script: a short answer; a (wrong) function body for function-generation tasks."""
    if purpose == "task_generation":
        return "```python\ndef f(*args, **kwargs):\n    return None\n```"
    return "Noted."


def fake_evaluate(namespace: str, completion: str, **_: Any) -> dict[str, Any]:
    """An evaluator that judges nothing (the canary is about inputs, not scores)."""
    return {"outcome": "fail", "passed": False, "log": "leak canary: not evaluated", "seconds": 0.0,
            "completion": completion}


# ------------------------------------------------------------------------- what the grader knows
def normalise(text: str) -> str:
    return " ".join(text.split())


def _function_node(tree: ast.Module, qualname: list[str]) -> ast.AST | None:
    nodes: list[ast.AST] = list(tree.body)
    found: ast.AST | None = None
    for part in qualname:
        found = next((n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and n.name == part), None)
        if found is None:
            return None
        nodes = list(getattr(found, "body", []))
    return found


def reference_body(root: Path, completion_path: str, namespace: str) -> str:
    """The judged function's reference body (statements after its docstring) in the pristine tree."""
    source = (root / completion_path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    parts = completion_path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    modules = [".".join(parts[i:]) for i in range(len(parts))]  # src/jinja2/x.py -> jinja2.x as well
    module = next((m for m in modules if namespace.startswith(m + ".")), None)
    qual = namespace[len(module) + 1:].split(".") if module else namespace.split(".")[-1:]
    node = _function_node(tree, qual)
    assert node is not None, f"{namespace} not found in {completion_path}"
    body = list(node.body)  # type: ignore[attr-defined]
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    lines = source.splitlines()
    return "\n".join(lines[body[0].lineno - 1: body[-1].end_lineno])


def test_source(root: Path, test_id: str) -> str:
    """The source of one judging test (``path::name`` or ``path::Class::name``)."""
    path, *names = test_id.split("::")
    source = (root / path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    node = _function_node(tree, names)
    if node is None:  # defined under an ``if`` / ``try`` at module level (e.g. an optional import)
        node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.name == names[-1]), None)
    assert node is not None, f"{test_id} not found"
    return ast.get_source_segment(source, node) or ""


def locoeval_secrets(sample: Any) -> dict[str, list[str]]:
    """What the grader / benchmark author knows about a LoCoEval sample, by category."""
    from benchmarks.locoeval.repo import snapshot_root

    root = snapshot_root(sample.repo_spec)
    secrets: dict[str, list[str]] = {"kind": [], "brief": [], "item_id": [], "reference_body": [], "judging_test": [],
                                     "sample_id": [sample.id], "subset": [sample.subset],
                                     "pristine_root": sorted({str(root), str(root.resolve())})}
    for step in sample.outline:
        secrets["kind"].append(step.kind)
        secrets["brief"].append(step.brief)
    for req in sample.requirements:
        secrets["item_id"] += [i.id for i in req.gt_items] + [d.id for d in req.distractors]
        secrets["reference_body"].append(reference_body(root, req.completion_path, req.namespace))
        secrets["judging_test"] += [test_source(root, t) for t in req.tests]
    return {k: sorted(set(v)) for k, v in secrets.items()}


def find_leaks(received: Received, secrets: dict[str, list[str]], *, exact_leaf: tuple[str, ...] = ("kind", "subset"),
               skip_channels: tuple[str, ...] = ()) -> list[str]:
    """Every (category, secret, channel) found. ``exact_leaf`` categories (short labels such as
    "distractor") count only as a whole string value or key a method received, not as a word of prose;
    the others count as a substring (whitespace-normalised) of anything received."""
    found: list[str] = []
    leaves = [(c, t) for c, t in received.items if c.startswith("leaf:")]
    texts = [(c, normalise(t)) for c, t in received.items if not c.startswith("leaf:")
             and not any(c.startswith(s) for s in skip_channels)]
    for category, values in secrets.items():
        for secret in values:
            if not secret.strip():
                continue
            if category in exact_leaf:
                hits = [c for c, t in leaves if t == secret and not any(c.startswith(f"leaf:{s}") for s in skip_channels)]
            else:
                needle = normalise(secret)
                hits = [c for c, t in texts if needle in t]
            if hits:
                short = secret if len(secret) < 60 else secret[:57] + "..."
                found.append(f"{category} {short!r} reached the method via {sorted(set(hits))[:3]}")
    return found
