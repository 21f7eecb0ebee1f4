"""Fixtures of the fork-set tests: a tiny self-made project and the executors that run its tests.

A module of its own, not a conftest.py: the LoCoEval tests one level up import names from their
conftest module, which a second conftest.py here would shadow. Test modules import what they use."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.sandbox.base import EnvSpec

EXCEPTIONS = '''class Error(Exception):
    pass


class TooLong(Error):
    pass


class Empty(Error):
    pass
'''  # the exception family the fork tests' modules share

TINY_MODULE = '''"""Tiny helpers of a self-made project (fork-set tests)."""


''' + EXCEPTIONS + '''

def join(parts, limit=3):
    """Join parts with commas; at most ``limit`` parts."""
    if len(parts) > limit:
        raise TooLong(parts)
    return ",".join(parts)


def register(log, name):
    """Record a name twice over."""
    log.append("start")
    log.append(name)
    return log
'''

TINY_TESTS = '''import unittest

import pytest

from tinyfork import mod
from tinyfork.mod import join, register


def test_join():
    assert join(["a", "b"]) == "a,b"
    assert join(["c"]) == "c"


def test_too_long():
    with pytest.raises(mod.TooLong):
        join(["a", "b", "c", "d"], limit=2)


def test_register():
    assert register([], "x") == ["start", "x"]


class TestJoin(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(join(["x", "y"]), "x,y")
'''

OTHER_TESTS = '''from tinyfork.mod import join


def test_join_elsewhere():
    assert join(["p", "q"]).count(",") == 1


def test_unrelated():
    assert 1 + 1 == 2
'''


def make_tiny_project(root: Path, *, module: str = TINY_MODULE, tests: str = TINY_TESTS,
                      other: str | None = OTHER_TESTS) -> Path:
    """``root`` with ``tinyfork/mod.py``, ``tests/test_mod.py`` and (optionally) ``tests/test_other.py``."""
    (root / "tinyfork").mkdir(parents=True)
    (root / "tinyfork" / "__init__.py").write_text("")
    (root / "tinyfork" / "mod.py").write_text(module)
    (root / "tests").mkdir()
    (root / "tests" / "test_mod.py").write_text(tests)
    if other is not None:
        (root / "tests" / "test_other.py").write_text(other)
    return root


@pytest.fixture
def tiny_project(tmp_path: Path) -> Path:
    return make_tiny_project(tmp_path / "tiny")


@pytest.fixture(scope="session")
def fork_env() -> EnvSpec:
    """The pinned pytest-only environment (the same content as boltons', so the venv is shared)."""
    from benchmarks.deveval.tasks import env_spec_for, load_manifest

    boltons = env_spec_for(load_manifest().project("Utilities/boltons"))
    return EnvSpec(name="fork-fixture", python=boltons.python, pip_specs=boltons.pip_specs)


@pytest.fixture
def recorder(tmp_path: Path):
    from benchmarks.locoeval.fork.tests_derive import RecordingExecutor

    return RecordingExecutor(timeout_s=60, work_root=tmp_path / "work")


@pytest.fixture
def judge(tmp_path: Path):
    from benchmarks.sandbox.local import LocalExecutor

    return LocalExecutor(timeout_s=60, work_root=tmp_path / "work")
