"""The one taxonomy of LLM call purposes.

Every backbone call goes through :class:`~reconmem.platform.llm.client.LLMClient` with a
``purpose=`` tag, recorded on its ledger event. :data:`PURPOSES` lists every purpose the code passes,
with what the call is (its :class:`Kind`), which backbone role serves it and its label in tables;
the client refuses a purpose not listed here. The metrics derive their sets from it (paper §3.3):

* :data:`EXCLUDED_PURPOSES` - user simulation, judging and benchmark building: not the evaluated
  system, excluded from a method's tokens and cost everywhere;
* :data:`RESPONSE_PURPOSES` - response generation (a turn's reply, a task's answer, a maintainer's
  tool step);
* :data:`MEMORY_PURPOSES` - context management, the method's memory cost.

``tests/llm/test_llm_purposes.py`` scans the source tree: every purpose passed to the client is
listed here, and every purpose listed here is passed somewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Literal

#: the backbone roles a call can bill to (``benchmarks.roles.ROLE_OPTIONS`` names their config options)
Role = Literal["backbone", "user", "judge"]


class Kind(StrEnum):
    """What a call is."""

    TURN_RESPONSE = "turn_response"  # the evaluated system's reply to a user turn
    TASK_ANSWER = "task_answer"  # the evaluated system's answer to a LoCoEval task
    TOOL_STEP = "tool_step"  # a later backbone call within one maintainer response (CAB)
    MEMORY = "memory"  # a context manager's own call (memory construction / maintenance)
    USER_SIMULATION = "user_simulation"  # the simulated user
    JUDGE = "judge"  # an LLM judge
    BUILDER = "builder"  # benchmark construction
    BENCH = "bench"  # a latency measurement of the client itself
    SPEND_SEED = "spend_seed"  # not a call: spend carried into a run's ledger


#: the kinds that are the evaluated system's response generation
RESPONSE_KINDS = frozenset({Kind.TURN_RESPONSE, Kind.TASK_ANSWER, Kind.TOOL_STEP})
#: the kinds that simulate or evaluate, never part of a method's cost
EVALUATION_KINDS = frozenset({Kind.USER_SIMULATION, Kind.JUDGE, Kind.BUILDER})


@dataclass(frozen=True)
class Purpose:
    """One registered purpose: its name (the ``purpose=`` tag), kind, serving role and table label."""

    name: str
    kind: Kind
    role: Role
    label: str
    description: str

    @property
    def is_call(self) -> bool:
        """Whether the client may be called with it (every kind but a spend seed)."""
        return self.kind is not Kind.SPEND_SEED

    @property
    def is_response(self) -> bool:
        return self.kind in RESPONSE_KINDS

    @property
    def is_memory(self) -> bool:
        return self.kind is Kind.MEMORY

    @property
    def is_excluded(self) -> bool:
        """Whether it is excluded from a method's tokens and cost (simulation, judging, building)."""
        return self.kind in EVALUATION_KINDS


_TABLE = (
    Purpose("turn_generation", Kind.TURN_RESPONSE, "backbone", "Turn Generation",
            "the reply to a user turn (LoCoEval preparation turn; CAB: a maintainer response's first call)"),
    Purpose("task_generation", Kind.TASK_ANSWER, "backbone", "Task Generation",
            "the answer to a LoCoEval function-generation task (read-only context)"),
    Purpose("maintainer_tool_step", Kind.TOOL_STEP, "backbone", "Maintainer Tool Step",
            "a CAB maintainer's later call within one response (after a tool result, or a re-ask)"),
    Purpose("memory_sketching", Kind.MEMORY, "backbone", "Memory Sketching",
            "ReConMem: the structured sketch of one turn (§2.2.1)"),
    Purpose("memory_update", Kind.MEMORY, "backbone", "Memory Update",
            "ReConMem: the update decision over linked entities (§2.2.2); Mem0: ADD / UPDATE / DELETE / NONE"),
    Purpose("memory_extraction", Kind.MEMORY, "backbone", "Memory Extraction",
            "Mem0: the facts of one turn"),
    Purpose("memory_summarisation", Kind.MEMORY, "backbone", "Memory Summarisation",
            "LD-Agent: a closed session's summary; MemGPT: the summary of evicted messages"),
    Purpose("persona", Kind.MEMORY, "backbone", "Persona",
            "LD-Agent: the user / agent traits of one turn"),
    Purpose("mock_user", Kind.USER_SIMULATION, "user", "Mock User",
            "the simulated user (LoCoEval's mock user, CAB's issue author)"),
    Purpose("judge", Kind.JUDGE, "judge", "Judge",
            "CAB's judge of the final maintainer answer"),
    Purpose("coverage_judge", Kind.JUDGE, "judge", "Coverage Judge",
            "Figure 6: whether one retrieval view covers a task's needed code"),
    Purpose("builder", Kind.BUILDER, "backbone", "Builder",
            "the LoCoEval sample builder's generation calls"),
    Purpose("bench", Kind.BENCH, "backbone", "Bench",
            "scripts.bench llm: the client's uncached / cached latency"),
    Purpose("prior_spend", Kind.SPEND_SEED, "backbone", "Prior Spend",
            "a resumed run's earlier spend, seeded into its ledger so run.cost_limit_usd counts it"),
)

#: every registered purpose by name
PURPOSES: Mapping[str, Purpose] = MappingProxyType({p.name: p for p in _TABLE})


def purposes_of(kinds: Iterable[Kind]) -> frozenset[str]:
    """The names of the registered purposes of the given kinds."""
    wanted = frozenset(kinds)
    return frozenset(name for name, p in PURPOSES.items() if p.kind in wanted)


EXCLUDED_PURPOSES = frozenset(name for name, p in PURPOSES.items() if p.is_excluded)
RESPONSE_PURPOSES = frozenset(name for name, p in PURPOSES.items() if p.is_response)
MEMORY_PURPOSES = frozenset(name for name, p in PURPOSES.items() if p.is_memory)
#: the purposes the client accepts
CALL_PURPOSES = frozenset(name for name, p in PURPOSES.items() if p.is_call)


def call_purpose(purpose: object) -> Purpose:
    """The registered call purpose ``purpose``; ValueError naming the taxonomy otherwise."""
    entry = PURPOSES.get(purpose) if isinstance(purpose, str) else None
    if entry is None or not entry.is_call:
        raise ValueError(f"LLM call purpose={purpose!r} is not registered in reconmem/platform/llm/purposes.py "
                         f"(registered: {', '.join(sorted(CALL_PURPOSES))})")
    return entry


def role_of(purpose: str) -> Role:
    """The backbone role that serves calls of ``purpose`` (``backbone`` for an unregistered one)."""
    entry = PURPOSES.get(purpose)
    return entry.role if entry is not None else "backbone"
