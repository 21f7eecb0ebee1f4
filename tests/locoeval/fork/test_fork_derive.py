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
                               '    expected = ",".join("ab")\n    assert join(["a", "b"]) == expected\n')
    root = make_tiny_project(tmp_path / "p", tests=tests)
    der = _derive(root, recorder, fork_env)
    assert not der.ok and "neither side of the comparison is a literal" in der.reason, der.reason
    assert "`expected` is bound to something other than a literal (line 10)" in der.reason, der.reason


def test_a_name_bound_once_to_a_literal_gets_the_forks_value(tmp_path, recorder, fork_env):
    tests = (TINY_TESTS.replace('    assert join(["a", "b"]) == "a,b"\n',
                                '    expected = "a,b"\n    assert join(["a", "b"]) == expected\n')
             .replace('        self.assertEqual(join(["x", "y"]), "x,y")',
                      '        want: str = "x" + ",y"\n        got = join(["x", "y"])\n'
                      '        self.assertEqual(got, want)'))
    tests += '''

def test_one_name_two_assertions_one_value():
    expected = "a,b"
    assert join(["a", "b"]) == expected
    assert join(["a", "b"]).lower() == expected
'''
    root = make_tiny_project(tmp_path / "p", tests=tests)
    der = _derive(root, recorder, fork_env)
    assert der.ok, der.reason
    diff = der.diffs[TESTS]
    removed = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert removed == ['expected = "a,b"', "with pytest.raises(mod.TooLong):", 'want: str = "x" + ",y"',
                       'expected = "a,b"']
    assert added == ['expected = "a;b"', "with pytest.raises(mod.Empty):", 'want: str = "x;y"', 'expected = "a;b"']
    assert sorted(r.kind for r in der.rewrites) == ["compare", "compare", "raises", "unittest"]
    assert der.files[TESTS].count("assert") == tests.count("assert")      # no assertion removed


def test_a_name_feeding_assertions_that_see_two_values_drops_the_task(tmp_path, recorder, fork_env):
    tests = TINY_TESTS + '''

def test_shared_expected():
    expected = "a,b"
    assert join(["a", "b"]) == expected
    assert ",".join(["a", "b"]) == expected
'''
    root = make_tiny_project(tmp_path / "p", tests=tests)
    der = _derive(root, recorder, fork_env)
    assert not der.ok, der.diffs
    assert "`expected`, bound once in test_shared_expected, feeds assertions that saw different values " \
           '("a;b" and "a,b")' in der.reason, der.reason


def test_a_bound_name_is_rewritten_only_when_its_one_binding_is_certain():
    rec = {"kind": "compare", "line": 4, "left": {"repr": "3", "literal": True, "type": "int"},
           "right": {"repr": "2", "literal": True, "type": "int"}}
    body = "def test_x():\n    {}\n    y = 0\n    assert f() == expected\n"
    assert plan_rewrite(body.format("expected = 1 + 1"), rec)[1:] == ("1 + 1", "3")
    unit = {**rec, "kind": "unittest", "left": rec["right"], "right": rec["left"]}
    assert plan_rewrite(body.format("expected = 2").replace("assert f() == expected", "self.assertEqual(expected, f())"),
                        unit)[1:] == ("2", "3")
    refused = {
        "expected = 1; expected = 2": "`expected` is bound 2 times in the test (lines 2, 2)",
        "expected = 2; expected += 1": "bound 2 times",
        "expected = 2; del expected": "bound 2 times",
        "expected = 2; global expected": "bound 2 times",
        "expected = y = 2": "not bound by a plain assignment",
        "if FLAG: expected = 2": "`expected` is not bound by a plain assignment of the test's own body (line 2)",
        "with ctx(): expected = 2": "not bound by a plain assignment",
        "for expected in (2, 3): pass": "not bound by a plain assignment",
        "expected = 2; g(expected)": "`expected` is also read other than as an assertion's operand (line 2)",
        "expected = 2; assert len(str(expected)) == 1": "also read other than",
        "expected = g()": "`expected` is bound to something other than a literal (line 2)",
        "expected = [2]; (expected, y) = (y, 1)": "bound 2 times",
    }
    for stmt, why in refused.items():
        reason = _refused(body.format(stmt), rec)
        assert reason.startswith("line 4: neither side of the comparison is a literal or one parameter's value (")
        assert why in reason, (stmt, reason)
    loop = "def test_x():\n    for expected in (2, 3):\n        y = 0\n        assert f() == expected\n"
    assert "not bound by a plain assignment" in _refused(loop, rec)
    param = "def test_x(expected=2):\n    expected = 2\n    y = 0\n    assert f() == expected\n"
    assert "bound 2 times" in _refused(param, rec)
    after = "def test_x():\n    y = 0\n    z = 0\n    assert f() == expected\n    expected = 2\n"
    assert "bound after the assertion" in _refused(after, rec)
    both = "def test_x():\n    got = 3\n    expected = 2\n    assert got == expected\n"
    assert "both sides of the comparison are names bound to literals" in _refused(both, rec)
    call = {"kind": "call", "line": 3, "expected": {"args": [{"repr": "2", "literal": True, "type": "int"}], "kwargs": {}},
            "actual": {"args": [{"repr": "3", "literal": True, "type": "int"}], "kwargs": {}}}
    mocked = "def test_x():\n    n = 2\n    m.assert_called_with(n)\n"
    assert plan_rewrite(mocked, call)[1:] == ("2", "3")
    twice = "def test_x():\n    n = 2\n    m.assert_called_with(n)\n    n = 4\n"
    assert "nor one parameter's value (`n` is bound 2 times" in _refused(twice, call)


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


EXTRA_MODULE = TINY_MODULE + '''

def fits(parts, limit=3):
    """Whether parts fit the limit."""
    return len(parts) <= limit


def notify(send, parts):
    """Send the joined parts."""
    send(join(parts), retries=3)
'''
EXTRA_FORK = (EXTRA_MODULE.replace('",".join', '";".join').replace("len(parts) <= limit", "len(parts) < limit")
              .replace("retries=3", "retries=5"))
EXTRA_TESTS = '''import unittest
from unittest import mock

import pytest

from tinyfork.mod import fits, join, notify


def test_identity():
    assert fits(["a", "b", "c"]) is True
    assert fits(["a"]) is True


def test_display():
    assert {"j": join(["a", "b"]), "n": [1, 2]} == {"j": "a,b", "n": [1, 2]}


def test_mock_call():
    send = mock.Mock()
    notify(send, ["a", "b"])
    send.assert_called_once_with("a,b", retries=3)


@pytest.mark.parametrize("parts, joined", [(["a", "b"], "a,b"), (["c"], "c")])
def test_mock_call_parametrized(parts, joined):
    send = mock.Mock()
    notify(send, parts)
    send.assert_called_with(joined, retries=3)


class TestFamily(unittest.TestCase):
    def test_family(self):
        self.assertIs(fits(["a", "b", "c"]), True)
        self.assertCountEqual(join(["x", "y"]).split(), ["x,y"])
        self.assertDictEqual({"j": join(["x", "y"])}, {"j": "x,y"})
        self.assertListEqual([join(["p", "q"])], ["p,q"])
        self.assertAlmostEqual(join(["x", "y"]).count(",") / 4, 0.25, places=3)
'''


def test_identity_mock_and_assertequal_family_rewrite_only_expected_operands(tmp_path, recorder, fork_env):
    root = make_tiny_project(tmp_path / "p", module=EXTRA_MODULE, tests=EXTRA_TESTS, other=None)
    der = _derive(root, recorder, fork_env, fork=EXTRA_FORK)
    assert der.ok, der.reason
    diff = der.diffs[TESTS]
    removed = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert removed == ['assert fits(["a", "b", "c"]) is True',
                       'assert {"j": join(["a", "b"]), "n": [1, 2]} == {"j": "a,b", "n": [1, 2]}',
                       'send.assert_called_once_with("a,b", retries=3)',
                       '@pytest.mark.parametrize("parts, joined", [(["a", "b"], "a,b"), (["c"], "c")])',
                       'send.assert_called_with(joined, retries=3)',
                       'self.assertIs(fits(["a", "b", "c"]), True)',
                       'self.assertCountEqual(join(["x", "y"]).split(), ["x,y"])',
                       'self.assertDictEqual({"j": join(["x", "y"])}, {"j": "x,y"})',
                       'self.assertListEqual([join(["p", "q"])], ["p,q"])',
                       'self.assertAlmostEqual(join(["x", "y"]).count(",") / 4, 0.25, places=3)']
    assert added == ['assert fits(["a", "b", "c"]) is False',
                     "assert {\"j\": join([\"a\", \"b\"]), \"n\": [1, 2]} == {'j': 'a;b', 'n': [1, 2]}",
                     'send.assert_called_once_with("a;b", retries=5)',
                     '@pytest.mark.parametrize("parts, joined", [(["a", "b"], "a;b"), (["c"], "c")])',
                     'send.assert_called_with(joined, retries=5)',
                     'self.assertIs(fits(["a", "b", "c"]), False)',
                     "self.assertCountEqual(join([\"x\", \"y\"]).split(), ['x;y'])",
                     "self.assertDictEqual({\"j\": join([\"x\", \"y\"])}, {'j': 'x;y'})",
                     "self.assertListEqual([join([\"p\", \"q\"])], ['p;q'])",
                     'self.assertAlmostEqual(join(["x", "y"]).count(",") / 4, 0.0, places=3)']
    assert {r.kind for r in der.rewrites} == {"compare", "call", "unittest"}
    assert der.files[TESTS].count("assert") == EXTRA_TESTS.count("assert")      # no assertion removed


def test_mock_calls_of_another_shape_or_without_literals_drop_the_task(tmp_path, recorder, fork_env):
    shaped = EXTRA_TESTS.replace('send = mock.Mock()\n    notify(send, ["a", "b"])\n'
                                 '    send.assert_called_once_with("a,b", retries=3)',
                                 'send = mock.create_autospec(lambda text, retries=0: None)\n'
                                 '    notify(send, ["a", "b"])\n    send.assert_called_once_with("a,b", 3)')
    assert shaped != EXTRA_TESTS
    root = make_tiny_project(tmp_path / "p", module=EXTRA_MODULE, tests=shaped, other=None)
    der = _derive(root, recorder, fork_env, fork=EXTRA_FORK)
    assert not der.ok and "other positional / keyword arguments" in der.reason, der.reason
    named = EXTRA_TESTS.replace('send.assert_called_once_with("a,b", retries=3)',
                                'retries = 3\n    send.assert_called_once_with("a,b", retries=retries)')
    root = make_tiny_project(tmp_path / "q", module=EXTRA_MODULE, tests=named.replace("retries = 3", "retries = 3 - 0"),
                             other=None)
    der = _derive(root, recorder, fork_env, fork=EXTRA_FORK)
    assert der.ok, der.reason                                   # a name bound once to a literal: its literal
    changed = [ln for ln in der.diffs[TESTS].splitlines() if "retries" in ln and ln[:1] in "-+"]
    assert changed == ["-    retries = 3 - 0", '-    send.assert_called_once_with("a,b", retries=retries)',
                       "+    retries = 5", '+    send.assert_called_once_with("a;b", retries=retries)',
                       "-    send.assert_called_with(joined, retries=3)", "+    send.assert_called_with(joined, retries=5)"], \
        changed
    looped = named.replace("    retries = 3\n", "    for retries in (3,):\n        pass\n")
    root = make_tiny_project(tmp_path / "r", module=EXTRA_MODULE, tests=looped, other=None)
    der = _derive(root, recorder, fork_env, fork=EXTRA_FORK)
    assert not der.ok and "neither a literal nor one parameter's value" in der.reason, der.reason


def _refused(text: str, rec: dict) -> str:
    try:
        plan_rewrite(text, rec)
    except DeriveError as exc:
        return str(exc)
    raise AssertionError("no DeriveError")


def test_identity_checks_are_rewritten_only_between_singletons():
    lit = {"repr": "False", "literal": True, "type": "bool"}
    rec = {"kind": "compare", "op": "is", "line": 1, "left": lit, "right": {"repr": "True", "literal": True}}
    assert plan_rewrite("assert f() is True\n", rec)[1:] == ("True", "False")
    assert "True / False / None" in _refused("assert f() is 2\n", {**rec, "right": {"repr": "2", "literal": True}})
    assert "True / False / None" in _refused("assert f() is True\n",
                                             {**rec, "left": {"repr": "3", "literal": True, "type": "int"}})
    unit = {"kind": "unittest", "line": 1, "left": lit, "right": {"repr": "'a'", "literal": True}}
    assert "True / False / None" in _refused("self.assertIs(f(), 'a')\n", unit)
    assert "not `a == b` or `a is b`" in _refused("assert f() != 2\n", rec)


def test_mock_call_plans_refuse_unpacked_and_unrecorded_arguments():
    one = {"repr": "1", "literal": True, "type": "int"}
    rec = {"kind": "call", "line": 1, "expected": {"args": [one], "kwargs": {}},
           "actual": {"args": [{"repr": "2", "literal": True, "type": "int"}], "kwargs": {}}}
    assert plan_rewrite("m.assert_called_with(1)\n", rec)[1:] == ("1", "2")
    assert "unpacks" in _refused("m.assert_called_with(*args)\n", rec)
    assert "not the one written there" in _refused("m.assert_called_with(1, 2)\n", rec)
    same = {**rec, "actual": rec["expected"]}
    assert "differ in no argument" in _refused("m.assert_called_with(1)\n", same)
    opaque = {**rec, "actual": {"args": [{"repr": "<X object>", "literal": False, "type": "X"}], "kwargs": {}}}
    assert "no literal form" in _refused("m.assert_called_with(1)\n", opaque)


def test_an_expression_of_literals_is_an_expected_operand_a_name_is_not():
    actual = {"repr": "16777216", "literal": True, "type": "int"}
    rec = {"kind": "unittest", "line": 1, "left": actual, "right": {"repr": "8388608", "literal": True}}
    text = "self.assertEqual(size(8 * 1024 * 10000), 8 * 1024 * 1024)\n"
    assert plan_rewrite(text, rec)[1:] == ("8 * 1024 * 1024", "16777216")
    assert plan_rewrite("self.assertEqual(size(), [-(2 ** 3), {'a': 1 + 2}])\n", rec)[1:] == \
        ("[-(2 ** 3), {'a': 1 + 2}]", "16777216")
    assert "neither side" in _refused("self.assertEqual(size(), 8 * KB)\n", rec)
    assert "neither side" in _refused("self.assertEqual(size(), {**base})\n", rec)
