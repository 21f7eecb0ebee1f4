"""Bracket methods and the one privileged channel only they may ask for.

A memory method is judged between two brackets: ``no_memory`` (the floor: the current turn plus
the repository adaptation every baseline gets) and ``oracle_context`` (the ceiling: perfect
memory). Neither reads earlier turns, so a run of either may skip generating the preparation
replies (:attr:`BracketMethod.reads_history` is False; the records say so).

Ordinary methods see only what a real exchange contains. The ceiling needs more: for each task,
the user's own words that stated the task's requirement and its ground-truth items earlier in the
conversation. Which turns those are is a benchmark label, so the input is *privileged* and travels
only through :meth:`BracketMethod.task_oracle`, never through the Session, a query or a Turn. It
is named :data:`TASK_ORACLE` and must be declared three times, checked by the run loop before the
first sample: in the method's config (``method.privileged_inputs``), by the method's class
(:attr:`BracketMethod.accepts`) and by the benchmark that supplies it
(``benchmarks.task.Benchmark.privileged_inputs``); the run manifest records it.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar, Iterator

from reconmem.platform.context import ContextManager

TASK_ORACLE = "task_oracle"
PRIVILEGED_INPUTS = frozenset({TASK_ORACLE})


class PrivilegedInputError(RuntimeError):
    """A privileged input was offered to a method that did not declare it."""


@dataclass(frozen=True)
class Statement:
    """One user turn of the conversation, verbatim, as the user stated it."""

    turn: int
    text: str


@dataclass(frozen=True)
class TaskOracle:
    """The user turns that stated one task's requirement and its ground-truth items (revisions
    included, superseded distractors excluded), in conversation order."""

    statements: tuple[Statement, ...]

    @property
    def turns(self) -> list[int]:
        return [s.turn for s in self.statements]


class BracketMethod(ContextManager):
    """Base of the bracket methods: reads no earlier turn; may accept privileged inputs."""

    reads_history: ClassVar[bool] = False
    accepts: ClassVar[frozenset[str]] = frozenset()

    def __init__(self) -> None:
        super().__init__()
        self._oracle: TaskOracle | None = None

    @contextmanager
    def task_oracle(self, oracle: TaskOracle) -> Iterator[None]:
        """Hold ``oracle`` for the one task answered inside the block (never part of ``state()``)."""
        if TASK_ORACLE not in self.accepts:
            raise PrivilegedInputError(f"{type(self).__name__} does not accept the privileged input {TASK_ORACLE!r}")
        self._oracle = oracle
        try:
            yield
        finally:
            self._oracle = None

    @property
    def oracle(self) -> TaskOracle | None:
        """The task oracle of the task being answered, or None."""
        return self._oracle


def reads_history(method: ContextManager) -> bool:
    """Whether ``method`` may read earlier turns (every ordinary method does)."""
    return bool(getattr(method, "reads_history", True))


def accepted_inputs(method: ContextManager) -> frozenset[str]:
    """The privileged inputs ``method``'s class declares it accepts (none for ordinary methods)."""
    return frozenset(getattr(method, "accepts", frozenset())) if isinstance(method, BracketMethod) else frozenset()
