"""Python parsing that is safe in worker threads: every AST the project builds goes through here.

CPython 3.11 before 3.11.8 keeps the AST constructor's recursion counter per interpreter, not per
thread (python/cpython issue 106905). When a garbage collection inside one thread's ``ast.parse``
runs a finalizer that releases the GIL and another thread parses meanwhile, one of the two fails
with ``SystemError: AST constructor recursion depth mismatch (before=…, after=…)``. The oracle,
the mapping, the validator and the run loop parse in worker threads, so:

- :func:`parse` and :func:`literal_eval` hold one process-wide lock while the AST is built, and
  parse again (up to :data:`ATTEMPTS` times) on exactly that ``SystemError`` — the lock covers the
  project's own parses; the retry covers a parse elsewhere in the process (a library) that
  overlapped one of ours. Any other ``SystemError`` propagates.
- :func:`format_exc` formats the current exception under the same lock: 3.11's ``traceback``
  module parses source lines to place its ``^^^`` markers.

The lock is taken on every Python version: building an AST holds the GIL anyway, so threads lose
next to no parallelism. ``tests/core/test_pyast.py`` holds the stress test (the issue's recipe).
"""

from __future__ import annotations

import ast
import logging
import threading
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

ATTEMPTS = 3
_MISMATCH = "AST constructor recursion depth mismatch"
_LOCK = threading.RLock()
_T = TypeVar("_T")


def _is_depth_mismatch(exc: BaseException) -> bool:
    """True for CPython 3.11's thread race in the AST constructor (and for nothing else)."""
    return isinstance(exc, SystemError) and str(exc).startswith(_MISMATCH)


def _locked(build: Callable[[], _T]) -> _T:
    """``build()`` under the process-wide lock, again on the depth-mismatch ``SystemError``."""
    for attempt in range(1, ATTEMPTS + 1):
        with _LOCK:
            try:
                return build()
            except SystemError as exc:
                if not _is_depth_mismatch(exc) or attempt == ATTEMPTS:
                    raise
                log.warning("AST construction hit CPython issue 106905 (%s); attempt %d of %d", exc,
                            attempt + 1, ATTEMPTS)
    raise AssertionError("unreachable")


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)`` under the lock."""
    return _locked(lambda: ast.parse(source, filename))


def literal_eval(node_or_string: str | ast.AST) -> Any:
    """``ast.literal_eval`` under the lock (it parses a string argument)."""
    return _locked(lambda: ast.literal_eval(node_or_string))


def format_exc() -> str:
    """``traceback.format_exc()`` under the lock (3.11's traceback module parses source lines)."""
    with _LOCK:
        return traceback.format_exc()
