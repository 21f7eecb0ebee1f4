"""A tiny shipped fork set for the ship / judge / runner tests: the self-made project of
``fork_fixtures`` with one more function, screened for two targets in one file judged by one test
file (``join`` and ``tag``), shipped with
``benchmarks.locoeval.fork.ship``, a manifest with the project's test environment, and a sample over
both targets. Built once per test session (a screening runs real tests)."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from fork_fixtures import TINY_MODULE, TINY_TESTS, make_tiny_project

PROJECT = "Tiny/tiny"
MOD = "tinyfork/mod.py"
TESTS = "tests/test_mod.py"
TEST_IDS = {"join": ["tests/test_mod.py::test_join", "tests/test_mod.py::test_too_long",
                     "tests/test_mod.py::TestJoin::test_equal"],
            "tag": ["tests/test_mod.py::test_tag"]}
MODULE = TINY_MODULE + '''

def tag(parts):
    """Parts as one upper-case tag."""
    return "-".join(parts).upper()
'''
TESTS_TEXT = (TINY_TESTS + '''

def test_tag():
    assert tag(["a", "b"]) == "A-B"
    assert join(["a"]) == "a"
''').replace("from tinyfork.mod import join, register", "from tinyfork.mod import join, register, tag")


def tiny_record(root: Path, name: str) -> dict:
    """The DevEval-format record of one function of the tiny project."""
    text = (root / MOD).read_text()
    func = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    start = func.body[1].lineno if isinstance(func.body[0], ast.Expr) else func.body[0].lineno
    return {"namespace": f"tinyfork.mod.{name}", "type": "function", "project_path": PROJECT,
            "completion_path": f"{PROJECT}/{MOD}", "signature_position": [func.lineno, func.lineno],
            "body_position": [start, func.end_lineno], "tests": TEST_IDS[name], "indent": 4,
            "requirement": {"Functionality": f"The function {name}.", "Arguments": ""}}


def tiny_manifest(path: Path) -> Path:
    """A manifest with one entry, the tiny project, in boltons' pytest-only environment."""
    from benchmarks.deveval.tasks import load_manifest

    raw = dict(load_manifest().project("Utilities/boltons").raw)
    raw.update(project_path=PROJECT, pypi_name="tinyfork", version="0", sdist_sha256=None, sdist_filename=None,
               path_prefix_in_sdist="", pythonpath_in_tree=".", install_project_from_sdist=False, tasks=[])
    path.write_text(json.dumps([raw]))
    return path


@dataclass
class TinyForkSet:
    root: Path              # the tiny project (the snapshot)
    screen: Path            # the screening's results file
    data: Path              # the DevEval records
    manifest: Path
    set_dir: Path           # forks.jsonl, deveval_tasks.jsonl, SOURCE.md
    rows: dict              # namespace -> validated screening row
    env: object

    def entry(self):
        return SimpleNamespace(project_path=PROJECT, version="0", task=lambda ns: None,
                               repo_spec=lambda: {"provider": "local", "path": str(self.root)})

    def sample(self, names=("join", "tag"), sample_id="tiny-fork-1") -> dict:
        """A fork-set sample over ``names`` (scripted turns, the fork's decisions as gt items)."""
        reqs, outline = [], []
        for i, name in enumerate(names, 1):
            row = self.rows[f"tinyfork.mod.{name}"]
            ch = row["changes"][0]
            reqs.append({"req_id": f"R{i}", "namespace": f"tinyfork.mod.{name}", "completion_path": MOD,
                         "signature": f"def {name}(...):", "tests": TEST_IDS[name],
                         "gt_items": [{"id": f"R{i}.I1", "text": " ".join(c["statement"] for c in row["changes"])}],
                         "distractors": [{"id": f"R{i}.D1", "text": ch["public_statement"], "revised_by": f"R{i}.I1"}]})
            t = len(outline)
            outline += [{"turn": t + 1, "kind": "requirement", "req_id": f"R{i}", "brief": "Introduce.",
                         "text": f"I need `{name}` in {MOD}."},
                        {"turn": t + 2, "kind": "distractor", "req_id": f"R{i}", "item_ids": [f"R{i}.D1"],
                         "brief": "Public behaviour.", "text": ch["public_statement"]},
                        {"turn": t + 3, "kind": "chat", "brief": "Chat.", "text": "OK, thanks."},
                        {"turn": t + 4, "kind": "revision", "req_id": f"R{i}", "item_ids": [f"R{i}.I1"],
                         "brief": "The fork's decisions.", "text": " ".join(c["revision"] for c in row["changes"])}]
        return {"id": sample_id, "subset": "multi-hop" if len(names) > 1 else "single-hop", "project_path": PROJECT,
                "repo": {"provider": "local", "path": str(self.root)}, "target_docstrings": "remove",
                "requirements": reqs, "outline": outline,
                "tasks": [{"req_id": r["req_id"], "kind": "function_generation",
                           "query": f"Please implement `{r['namespace'].rsplit('.', 1)[-1]}` now."} for r in reqs],
                "meta": {"set": "locoeval_fork"}}


def build_tiny_fork_set(base: Path, env) -> TinyForkSet:
    from benchmarks.locoeval.fork.catalogue import CATALOGUE_VERSION
    from benchmarks.locoeval.fork.screen import ForkProject, ScreenOptions, Screener, append_result
    from benchmarks.locoeval.fork.ship import build, write_set
    from benchmarks.locoeval.fork.tests_derive import DERIVE_VERSION

    root = make_tiny_project(base / "tiny", module=MODULE, tests=TESTS_TEXT)
    screen = base / "screen.jsonl"
    records = {f"tinyfork.mod.{n}": tiny_record(root, n) for n in ("join", "tag")}
    data = base / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records.values()))
    entry = SimpleNamespace(project_path=PROJECT, version="0", task=lambda ns: None)
    s = Screener(ScreenOptions(out=screen, timeout=60, work_root=base / "work"))
    s.records = records
    s.projects[PROJECT] = ForkProject(entry, root, env)
    rows = {}
    for ns in records:
        row = s.screen_task(entry, ns)
        assert row["status"] == "validated", (ns, row.get("reason"))
        row.update(namespace=ns, project_path=PROJECT, version="0", catalogue_version=CATALOGUE_VERSION,
                   derive_version=DERIVE_VERSION)
        append_result(screen, row)
        rows[ns] = row
    manifest = tiny_manifest(base / "manifest.json")
    fs = TinyForkSet(root, screen, data, manifest, base / "set", rows, env)
    result = build(screen, deveval_data=data, manifest=SimpleNamespace(project=lambda p: fs.entry()),
                   snapshot=lambda e: root)
    write_set(result, fs.set_dir, screen=screen, licences={PROJECT: "MIT"})
    return fs


@pytest.fixture(scope="session")
def tiny_fork_set(tmp_path_factory, fork_env) -> TinyForkSet:
    return build_tiny_fork_set(tmp_path_factory.mktemp("forkset"), fork_env)


def fork_reply(messages, purpose):
    """SCRIPTED backbone replies (``backbone.model=scripted/fork_set_fixtures:fork_reply``), not a
    model's: a task reply is the fork body of the function the task names (``$FORK_TEST_FORKS``: the
    forks.jsonl to read), every other reply a short acknowledgement."""
    import os
    import re

    from benchmarks.locoeval.fork.ship import read_forks

    if purpose != "task_generation":
        return "Noted."
    name = re.findall(r"implement `(\w+)`", messages[-1]["content"])[-1]
    rec = next(r for ns, r in read_forks(os.environ["FORK_TEST_FORKS"]).items() if ns.endswith("." + name))
    body = "\n".join("    " + ln if ln.strip() else "" for ln in rec.fork_body.splitlines())
    return f"```python\ndef {name}(*args, **kwargs):\n{body}\n```"
