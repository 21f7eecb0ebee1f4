"""The pytest plugin that records what a failing assertion saw (written into the test tree per run).

:data:`PLUGIN_SOURCE` is a module the fork-test derivation (``tests_derive``) places at the root of
the copied tree as ``_reconmem_fork_record.py`` and loads with ``-p _reconmem_fork_record``. It
records, for the run's tests:

- ``assert a == b`` and ``assert a is b`` that fail: both operands and the operator
  (``pytest_assertrepr_compare`` sees the real objects; pytest's assertion rewriting is forced on
  with ``--assert=rewrite``);
- ``self.assertEqual``, its type-specific relatives (``assertListEqual``, ``assertDictEqual``,
  ``assertCountEqual``, ...), ``assertAlmostEqual`` and ``assertIs`` that fail: both arguments (the
  TestCase methods are wrapped);
- a mock's ``assert_called_with`` / ``assert_called_once_with`` that fails on the arguments: the
  expected and the actual call's positional and keyword arguments (``unittest.mock`` and, when
  installed, the ``mock`` backport);
- ``pytest.raises(X)`` / ``self.assertRaises(X)`` left by an exception of another class: the
  expected class(es) and the class actually raised;

each with the test's node id, the case's index per ``parametrize`` parameter, and the file and line of the assertion (the innermost frame of the
run's tree that is not this plugin), every value as its ``repr`` and whether
``ast.literal_eval(repr(v)) == v`` (same type). At the end of the session it prints one line
``RECONMEM-FORK-RECORDS <json>`` (the records and the failing node ids) to stdout, which the
executor keeps in the tail of its log.
"""

from __future__ import annotations

PLUGIN_MODULE = "_reconmem_fork_record"
MARK = "RECONMEM-FORK-RECORDS "
MAX_REPR = 2000

PLUGIN_SOURCE = r'''"""Records failing assertions' operands for the ReConMem fork-test derivation (generated file)."""
import ast
import json
import os
import sys
import unittest

import pytest

_ROOT = os.path.realpath(os.getcwd())
_ME = os.path.realpath(__file__)
_RECORDS = []
_FAILED = []
_CURRENT = [None]
_MARK = "RECONMEM-FORK-RECORDS "
_MAX = 2000


def _where():
    f = sys._getframe(1)
    while f is not None:
        name = os.path.realpath(f.f_code.co_filename)
        if name.startswith(_ROOT + os.sep) and name != _ME and "site-packages" not in name:
            return os.path.relpath(name, _ROOT).replace(os.sep, "/"), f.f_lineno
        f = f.f_back
    return None, None


def _value(v):
    try:
        r = repr(v)
    except Exception:  # noqa: BLE001
        return {"repr": None, "literal": False}
    ok = False
    if len(r) <= _MAX:
        try:
            back = ast.literal_eval(r)
            ok = type(back) is type(v) and back == v
        except Exception:  # noqa: BLE001
            ok = False
    return {"repr": r[:_MAX], "literal": ok, "type": type(v).__name__}


def _cls(c):
    if isinstance(c, tuple):
        return [_cls(x) for x in c]
    return {"module": getattr(c, "__module__", "?"), "name": getattr(c, "__qualname__", repr(c))}


_INDICES = [None]


def _add(kind, loc, **kw):
    _RECORDS.append({"test": _CURRENT[0], "kind": kind, "file": loc[0], "line": loc[1], "indices": _INDICES[0],
                     **kw})


def pytest_runtest_setup(item):
    spec = getattr(item, "callspec", None)
    try:
        _INDICES[0] = {str(k): int(v) for k, v in dict(getattr(spec, "indices", {}) or {}).items()} or None
    except (TypeError, ValueError):
        _INDICES[0] = None


def pytest_assertrepr_compare(config, op, left, right):
    if op in ("==", "is"):
        _add("compare", _where(), op=op, left=_value(left), right=_value(right))
    return None


_EQ = ("assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual", "assertDictEqual",
       "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual", "assertCountEqual",
       "assertAlmostEqual", "assertAlmostEquals", "assertIs")


def _wrap_eq(name):
    orig = getattr(unittest.TestCase, name, None)
    if orig is None or getattr(orig, "_reconmem_wrapped", False):
        return

    def wrapper(self, first, second, *args, **kwargs):
        try:
            return orig(self, first, second, *args, **kwargs)
        except AssertionError:
            _add("unittest", _where(), method=name, left=_value(first), right=_value(second))
            raise

    wrapper.__name__ = name
    wrapper._reconmem_wrapped = True
    setattr(unittest.TestCase, name, wrapper)


for _n in _EQ:
    _wrap_eq(_n)


def _matches(t, expected):
    try:
        return issubclass(t, expected)
    except TypeError:
        return False


class _RaiseGuard:
    def __init__(self, inner, expected, loc, via):
        self.inner, self.expected, self.loc, self.via = inner, expected, loc, via

    def __enter__(self):
        return self.inner.__enter__()

    def __exit__(self, t, v, tb):
        if t is not None and not _matches(t, self.expected):
            _add("raises", self.loc, via=self.via, expected=_cls(self.expected), raised=_cls(t))
        return self.inner.__exit__(t, v, tb)


_orig_pytest_raises = pytest.raises


def raises(expected_exception, *args, **kwargs):
    loc = _where()
    if args:
        func, rest = args[0], args[1:]
        guard = _RaiseGuard(_orig_pytest_raises(expected_exception), expected_exception, loc, "pytest.raises")
        with guard as info:
            func(*rest, **kwargs)
        return info
    return _RaiseGuard(_orig_pytest_raises(expected_exception, **kwargs), expected_exception, loc, "pytest.raises")


pytest.raises = raises
_orig_assert_raises = unittest.TestCase.assertRaises


def assertRaises(self, expected_exception, *args, **kwargs):
    loc = _where()
    if args:
        func, rest = args[0], args[1:]
        with _RaiseGuard(_orig_assert_raises(self, expected_exception), expected_exception, loc, "assertRaises"):
            func(*rest, **kwargs)
        return None
    return _RaiseGuard(_orig_assert_raises(self, expected_exception, **kwargs), expected_exception, loc,
                       "assertRaises")


unittest.TestCase.assertRaises = assertRaises


def _call_args(args, kwargs):
    return {"args": [_value(a) for a in args], "kwargs": {str(k): _value(v) for k, v in kwargs.items()}}


def _wrap_mock(cls):
    orig = getattr(cls, "assert_called_with", None)
    if orig is None or getattr(orig, "_reconmem_wrapped", False):
        return

    def assert_called_with(self, *args, **kwargs):
        try:
            return orig(self, *args, **kwargs)
        except AssertionError:
            actual = getattr(self, "call_args", None)
            if actual is not None:
                a_args, a_kwargs = actual
                _add("call", _where(), expected=_call_args(args, kwargs), actual=_call_args(a_args, a_kwargs))
            raise

    assert_called_with._reconmem_wrapped = True
    cls.assert_called_with = assert_called_with


def _wrap_mocks():
    import unittest.mock
    _wrap_mock(unittest.mock.NonCallableMock)
    try:
        import mock as backport
    except Exception:  # noqa: BLE001 - the backport is optional
        return
    cls = getattr(backport, "NonCallableMock", None)
    if cls is not None:
        _wrap_mock(cls)


_wrap_mocks()


def pytest_runtest_logstart(nodeid, location):
    _CURRENT[0] = nodeid


def pytest_runtest_logreport(report):
    if report.failed and report.nodeid not in _FAILED:
        _FAILED.append(report.nodeid)


def pytest_collectreport(report):
    if report.failed:
        _FAILED.append("collect:" + str(report.nodeid))


def pytest_unconfigure(config):
    payload = {"records": _RECORDS, "failed": _FAILED}
    text = json.dumps(payload)
    if len(text) > 18000:
        payload = {"records": [], "failed": _FAILED[:200], "overflow": True}
        text = json.dumps(payload)
    sys.stdout.write("\n" + _MARK + text + "\n")
    sys.stdout.flush()
'''
