"""Fixtures of the LoCoEval tests: a tiny local repository and samples over it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TINY_MODULE = '''"""Tiny arithmetic helpers (test repository)."""


def add(a, b):
    """Return a + b."""
    return a + b


def scale(values, factor=2):
    """Multiply every value by factor."""
    return [v * factor for v in values]
'''


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    return make_tiny_repo(tmp_path)


def make_tiny_repo(tmp: Path) -> Path:
    """``tmp/tinyrepo``: the module the tiny samples target and the test file that judges them."""
    root = tmp / "tinyrepo"
    (root / "tinypkg").mkdir(parents=True)
    (root / "tinypkg" / "__init__.py").write_text("")
    (root / "tinypkg" / "ops.py").write_text(TINY_MODULE)
    (root / "tests").mkdir()
    (root / "tests" / "test_ops.py").write_text("from tinypkg.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    return root


def tiny_sample(repo: Path, sample_id: str = "tiny-1", *, n_turns: int = 3, subset: str = "single-hop") -> dict:
    """A valid sample over the tiny repository: scripted turns, a distractor revised later, one task."""
    outline = [
        {"turn": 1, "kind": "requirement", "req_id": "R1", "brief": "Introduce add.", "text": "I need add(a, b) in tinypkg/ops.py."},
        {"turn": 2, "kind": "distractor", "req_id": "R1", "item_ids": ["R1.D1"], "brief": "Wrong detail.", "text": "add should return a - b."},
        {"turn": 3, "kind": "revision", "req_id": "R1", "item_ids": ["R1.I1"], "brief": "Fix it.", "text": "Correction: add returns a + b."},
    ]
    for t in range(4, n_turns + 1):
        outline.append({"turn": t, "kind": "noise", "brief": "Unrelated.", "text": f"Unrelated question number {t}?"})
    return {
        "id": sample_id, "subset": subset, "project_path": "Tiny/tinyrepo",
        "repo": {"provider": "local", "path": str(repo)},
        "requirements": [{
            "req_id": "R1", "namespace": "tinypkg.ops.add", "completion_path": "tinypkg/ops.py",
            "signature": "def add(a, b):", "tests": ["tests/test_ops.py::test_add"],
            "gt_items": [{"id": "R1.I1", "text": "add returns a + b.", "evidence": ["a + b"]}],
            "distractors": [{"id": "R1.D1", "text": "add returns a - b.", "revised_by": "R1.I1"}],
        }],
        "outline": outline[:n_turns],
        "tasks": [{"req_id": "R1", "kind": "function_generation", "query": "Please write add now."}],
    }


def write_samples(path: Path, samples: list[dict]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    return path
