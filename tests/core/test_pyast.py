"""reconmem.platform.pyast: parsing in worker threads on CPython 3.11 (python/cpython issue 106905).

The stress recipe of the issue: four threads parse the project's own modules after
``gc.set_threshold(50)``; each iteration leaves a cyclic object whose finalizer calls
``time.sleep(0)``, so a collection inside one thread's AST construction hands the GIL to another.
With plain ``ast.parse`` (and plain ``traceback.format_exc``, which parses too) this fails with
``SystemError: AST constructor recursion depth mismatch`` on CPython 3.11 before 3.11.8; through
:mod:`reconmem.platform.pyast` it cannot. ``python tests/core/test_pyast.py [tries]`` runs the same
stress with the plain functions and prints how often it fails.
"""

from __future__ import annotations

import ast
import gc
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from reconmem.platform import pyast

ROOT = Path(__file__).resolve().parents[2]
STRESS_SECONDS = 8.0
MISMATCH = "AST constructor recursion depth mismatch"


def project_sources() -> list[str]:
    """The text of every module of the product (reconmem, baselines, benchmarks, scripts)."""
    return [p.read_text(encoding="utf-8") for pkg in ("reconmem", "baselines", "benchmarks", "scripts")
            for p in sorted((ROOT / pkg).rglob("*.py"))]


class _Cycle:
    """Garbage only the cycle collector frees; its finalizer releases the GIL."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0)


def _raise_in_expression() -> None:
    values: dict[str, int] = {}
    print(1 + values["missing"])  # a sub-expression fails: 3.11's traceback parses it to place ^^^


def stress(parse: Callable[[str], object], format_exc: Callable[[], str], seconds: float = STRESS_SECONDS,
           threads: int = 4) -> tuple[list[BaseException], list[int]]:
    """Run the issue's recipe for ``seconds``; return the exceptions raised and each thread's parses.

    Threads parse the project's modules in turn; the last thread also formats a traceback on each
    iteration. gc thresholds are restored afterwards.
    """
    sources = project_sources()
    deadline = time.monotonic() + seconds
    failures: list[BaseException] = []
    parses = [0] * threads

    def work(i: int) -> None:
        mine = sources[i::threads]
        while time.monotonic() < deadline:
            for text in mine:
                _Cycle()
                try:
                    parse(text)
                    if i == threads - 1:
                        try:
                            _raise_in_expression()
                        except KeyError:
                            format_exc()
                except Exception as exc:  # noqa: BLE001 - collected for the assertion
                    failures.append(exc)
                parses[i] += 1
                if time.monotonic() >= deadline:
                    break

    thresholds = gc.get_threshold()
    gc.set_threshold(50)
    try:
        workers = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        gc.set_threshold(*thresholds)
        gc.collect()
    return failures, parses


def test_parsing_in_threads_under_the_issue_stress_never_fails(caplog):
    caplog.set_level(logging.WARNING, logger=pyast.__name__)
    thresholds = gc.get_threshold()
    failures, parses = stress(pyast.parse, pyast.format_exc)
    assert gc.get_threshold() == thresholds
    assert failures == []
    assert all(n > 0 for n in parses), parses
    # the lock alone kept the threads apart: no parse needed the retry
    assert [r.getMessage() for r in caplog.records if r.name == pyast.__name__] == []


def test_parse_and_literal_eval_match_the_standard_functions():
    text = (ROOT / "reconmem" / "platform" / "pyast.py").read_text(encoding="utf-8")
    assert ast.dump(pyast.parse(text)) == ast.dump(ast.parse(text))
    with pytest.raises(SyntaxError) as caught:
        pyast.parse("def f(:\n", filename="broken.py")
    assert caught.value.filename == "broken.py"
    assert pyast.literal_eval("[{'user': 'x', 'n': (1, 2.5, None)}]") == [{"user": "x", "n": (1, 2.5, None)}]
    assert pyast.literal_eval(ast.parse("{'a': 1}", mode="eval").body) == {"a": 1}
    with pytest.raises(ValueError):
        pyast.literal_eval("__import__('os')")


def test_the_depth_mismatch_is_retried_and_every_other_system_error_propagates(monkeypatch, caplog):
    calls: list[str] = []

    def flaky(source, filename="<unknown>", mode="exec", **kwargs):
        calls.append(source)
        if len(calls) == 1:
            raise SystemError(f"{MISMATCH} (before=36, after=30)")
        return real_parse(source, filename, mode, **kwargs)

    real_parse = ast.parse
    monkeypatch.setattr(pyast.ast, "parse", flaky)
    caplog.set_level(logging.WARNING, logger=pyast.__name__)
    assert isinstance(pyast.parse("x = 1").body[0], ast.Assign)
    assert len(calls) == 2
    assert "issue 106905" in caplog.text

    def other(*args, **kwargs):
        calls.append("x")
        raise SystemError("error return without exception set")

    calls.clear()
    monkeypatch.setattr(pyast.ast, "parse", other)
    with pytest.raises(SystemError, match="without exception set"):
        pyast.parse("x = 1")
    assert len(calls) == 1

    def always(*args, **kwargs):
        calls.append("x")
        raise SystemError(f"{MISMATCH} (before=18, after=12)")

    calls.clear()
    monkeypatch.setattr(pyast.ast, "parse", always)
    with pytest.raises(SystemError, match=MISMATCH):
        pyast.literal_eval("1")
    assert len(calls) == pyast.ATTEMPTS


def test_format_exc_formats_the_current_exception():
    try:
        _raise_in_expression()
    except KeyError:
        text = pyast.format_exc()
    assert text.startswith("Traceback (most recent call last):")
    assert text.rstrip().endswith("KeyError: 'missing'")
    assert "_raise_in_expression" in text


# Files that format tracebacks in the main thread only, after (or without) any worker.
MAIN_THREAD_TRACEBACKS = {"benchmarks/analysis/report.py", "scripts/run.py"}


def test_the_project_builds_asts_only_through_pyast():
    """A new call site of ast.parse / ast.literal_eval (or a traceback formatted outside the main
    thread's files above) in the product would bypass the lock."""
    pyast_file = ROOT / "reconmem" / "platform" / "pyast.py"
    offenders = []
    for pkg in ("reconmem", "baselines", "benchmarks", "scripts"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path == pyast_file:
                continue
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                        (node.value.id == "ast" and node.attr in {"parse", "literal_eval"})
                        or (node.value.id == "traceback" and node.attr.startswith(("format", "print"))
                            and rel not in MAIN_THREAD_TRACEBACKS)):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
                if isinstance(node, ast.Attribute) and node.attr == "PyCF_ONLY_AST":
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: PyCF_ONLY_AST")
    assert offenders == [], "use reconmem.platform.pyast (parse, literal_eval, format_exc) at: " + ", ".join(offenders)


def _plain_tries(tries: int, seconds: float) -> None:
    """The same stress with plain ``ast.parse`` / ``traceback.format_exc``: how often it fails."""
    failed = 0
    for k in range(1, tries + 1):
        t0 = time.monotonic()
        failures, parses = stress(ast.parse, traceback.format_exc, seconds)
        mismatches = [f for f in failures if MISMATCH in str(f)]
        failed += bool(mismatches)
        print(f"try {k}: {len(mismatches)} SystemError(s), {sum(parses)} parses, {time.monotonic() - t0:.1f} s"
              + (f" — {mismatches[0]}" if mismatches else ""), flush=True)
    print(f"plain ast.parse failed in {failed} of {tries} tries of {seconds:g} s (Python {sys.version.split()[0]})")


if __name__ == "__main__":
    _plain_tries(int(sys.argv[1]) if len(sys.argv) > 1 else 10, float(sys.argv[2]) if len(sys.argv) > 2 else STRESS_SECONDS)
