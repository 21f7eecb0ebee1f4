"""Deriving the fork's tests on a tiny self-made project (assert ==, assertEqual, pytest.raises)."""

from __future__ import annotations

from benchmarks.locoeval.fork.tests_derive import DeriveError, derive_tests, observing_files, plan_rewrite

from fork_fixtures import TINY_MODULE, TINY_TESTS, fork_env, make_tiny_project, recorder, tiny_project  # noqa: F401 (fixtures)

FORK = TINY_MODULE.replace('",".join', '";".join').replace("raise TooLong(parts)", "raise Empty(parts)")
MOD, TESTS = "tinyfork/mod.py", "tests/test_mod.py"


def _derive(root, recorder, env, fork=FORK, files=(TESTS,)):
    return derive_tests(executor=recorder, root=root, env=env, target_file=MOD, fork_text=fork,
                        test_files=list(files))


def test_only_the_expected_operands_change(tiny_project, recorder, fork_env):
    der = _derive(tiny_project, recorder, fork_env)
    assert der.ok, der.reason
    assert der.public_failures == []
    diff = der.diffs[TESTS]
    removed = [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert removed == ['-    assert join(["a", "b"]) == "a,b"', "-    with pytest.raises(mod.TooLong):",
                       '-        self.assertEqual(join(["x", "y"]), "x,y")']
    assert added == ['+    assert join(["a", "b"]) == "a;b"', "+    with pytest.raises(mod.Empty):",
                     '+        self.assertEqual(join(["x", "y"]), "x;y")']
    assert sorted(r.kind for r in der.rewrites) == ["compare", "raises", "unittest"]
    assert der.files[TESTS].count("assert") == TINY_TESTS.count("assert")     # no assertion removed
    assert (tiny_project / TESTS).read_text() == TINY_TESTS                   # the snapshot is untouched


def test_a_parametrized_expected_value_is_rewritten_in_its_case(tmp_path, recorder, fork_env):
    tests = TINY_TESTS + '''

@pytest.mark.parametrize("parts, expected", [(["a", "b"], "a,b"), (["c"], "c"),
                                             pytest.param(["d", "e"], "d,e", id="de")])
def test_cases(parts, expected):
    assert join(parts) == expected
'''
    root = make_tiny_project(tmp_path / "p", tests=tests)
    der = _derive(root, recorder, fork_env)
    assert der.ok, der.reason
    assert '-@pytest.mark.parametrize("parts, expected", [(["a", "b"], "a,b"), (["c"], "c"),' in der.diffs[TESTS]
    assert '+@pytest.mark.parametrize("parts, expected", [(["a", "b"], "a;b"), (["c"], "c"),' in der.diffs[TESTS]
    assert '+                                             pytest.param(["d", "e"], "d;e", id="de")])' in der.diffs[TESTS]
    assert "    assert join(parts) == expected" in der.files[TESTS]


def test_every_form_of_raises_gets_the_forks_class(tmp_path, recorder, fork_env):
    tests = '''import unittest

import pytest

from tinyfork import mod
from tinyfork.mod import TooLong, join


class TestRaise(unittest.TestCase):
    def test_context(self):
        with self.assertRaises(mod.TooLong):
            join(["a", "b", "c", "d"], limit=1)

    def test_callable(self):
        self.assertRaises(mod.TooLong, join, ["a", "b", "c", "d"], 1)


def test_pytest_callable():
    pytest.raises(mod.TooLong, join, ["a", "b", "c", "d"], limit=1)


def test_pytest_match():
    with pytest.raises(mod.TooLong, match="a"):
        join(["a", "b", "c", "d"], limit=1)
'''
    root = make_tiny_project(tmp_path / "p", tests=tests, other=None)
    fork = TINY_MODULE.replace("raise TooLong(parts)", "raise Empty(parts)")
    der = _derive(root, recorder, fork_env, fork=fork)
    assert der.ok, der.reason
    added = [ln[1:].strip() for ln in der.diffs[TESTS].splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert sorted(added) == sorted(["with self.assertRaises(mod.Empty):", 'with pytest.raises(mod.Empty, match="a"):',
                                    'self.assertRaises(mod.Empty, join, ["a", "b", "c", "d"], 1)',
                                    'pytest.raises(mod.Empty, join, ["a", "b", "c", "d"], limit=1)'])
    bare = tests.replace("self.assertRaises(mod.TooLong, join", "self.assertRaises(TooLong, join")
    root = make_tiny_project(tmp_path / "q", tests=bare, other=None)
    der = _derive(root, recorder, fork_env, fork=fork)
    assert not der.ok and "cannot name the raised class tinyfork.mod.Empty" in der.reason


def test_an_expected_value_that_is_no_literal_drops_the_task(tmp_path, recorder, fork_env):
    tests = TINY_TESTS.replace('    assert join(["a", "b"]) == "a,b"\n',
                               '    expected = "a,b"\n    assert join(["a", "b"]) == expected\n')
    root = make_tiny_project(tmp_path / "p", tests=tests)
    der = _derive(root, recorder, fork_env)
    assert not der.ok and "neither side of the comparison is a literal" in der.reason, der.reason


def test_one_assertion_with_two_values_drops_the_task(tmp_path, recorder, fork_env):
    tests = TINY_TESTS + '''

def _check(value):
    assert value == "a,b"


def test_helper_plain():
    _check(join(["a", "b"]))


def test_helper_replaced():
    _check(join(["a", "b"]).replace(";", "|"))
'''
    root = make_tiny_project(tmp_path / "p", tests=tests)
    der = _derive(root, recorder, fork_env)
    assert not der.ok and "two different actual values" in der.reason, der.reason


def test_unstable_values_drop_the_task(tiny_project, recorder, fork_env):
    fork = FORK.replace('return ";".join(parts)', 'import random\n    return ";".join(parts) + str(random.random())')
    der = _derive(tiny_project, recorder, fork_env, fork=fork)
    assert not der.ok and "disagree" in der.reason


def test_a_failure_without_a_recorded_assertion_drops_the_task(tiny_project, recorder, fork_env):
    fork = TINY_MODULE.replace("if len(parts) > limit:", "if len(parts) > limit + 100:")   # DID NOT RAISE
    der = _derive(tiny_project, recorder, fork_env, fork=fork)
    assert not der.ok and "without a recorded assertion" in der.reason


def test_a_fork_no_test_sees_is_not_derivable(tiny_project, recorder, fork_env):
    der = _derive(tiny_project, recorder, fork_env, fork=TINY_MODULE.replace("Join parts", "Join the parts"))
    assert not der.ok and der.reason == "the fork changes no test outcome"


def test_observing_files_are_those_the_fork_makes_fail(tiny_project, recorder, fork_env):
    files, runs = observing_files(executor=recorder, root=tiny_project, env=fork_env, target_file=MOD,
                                  fork_text=FORK, candidates=[TESTS, "tests/test_other.py"])
    assert files == sorted([TESTS, "tests/test_other.py"]) and runs == 2
    quiet = TINY_MODULE.replace("raise TooLong(parts)", "raise Empty(parts)")
    files, _ = observing_files(executor=recorder, root=tiny_project, env=fork_env, target_file=MOD,
                               fork_text=quiet, candidates=[TESTS, "tests/test_other.py"])
    assert files == [TESTS]


def test_plan_rewrite_refuses_what_it_cannot_rewrite_safely():
    text = "def test_x():\n    assert f() == g()\n    assert f() != 2\n    with pytest.raises((A, B)):\n        f()\n"
    rec = {"kind": "compare", "line": 2, "left": {"repr": "1", "literal": True}, "right": {"repr": "2", "literal": True}}
    for line, kind, match in ((2, "compare", "neither"), (3, "compare", "not `a == b`")):
        try:
            plan_rewrite(text, {**rec, "line": line, "kind": kind})
        except DeriveError as exc:
            assert match in str(exc)
        else:
            raise AssertionError("no DeriveError")
    raises = {"kind": "raises", "line": 4, "expected": [{"module": "m", "name": "A"}, {"module": "m", "name": "B"}],
              "raised": {"module": "m", "name": "C"}}
    try:
        plan_rewrite(text, raises)
    except DeriveError as exc:
        assert "tuple" in str(exc)
    else:
        raise AssertionError("no DeriveError")
    nonliteral = {"kind": "compare", "line": 1, "left": {"repr": "<X object>", "literal": False, "type": "X"},
                  "right": {"repr": "2", "literal": True}}
    try:
        plan_rewrite("assert f() == 2\n", nonliteral)
    except DeriveError as exc:
        assert "no literal form" in str(exc)
    else:
        raise AssertionError("no DeriveError")
