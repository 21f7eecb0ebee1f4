"""The two bracket methods of LoCoEval-format benchmarks: the floor and the ceiling of memory.

* :class:`NoMemory` (``no_memory``, the floor): the current query plus the unified repository
  adaptation the baselines get (the ``k`` functions most similar to the query, full code) and
  nothing else — what the repository and the model alone achieve.
* :class:`OracleContext` (``oracle_context``, the ceiling: perfect memory): the same, plus, for a
  function-generation task, the user turns that stated the task's requirement and its ground-truth
  items, verbatim, handed over by the runner through the privileged channel
  (:mod:`reconmem.platform.brackets`). Its repository context is the floor's, so the two differ
  only in the remembered statements.

Neither reads an earlier turn (``observe`` keeps nothing), so a run may skip generating the
preparation replies (``method.skip_prep_replies``) and costs one model call per task.
"""

from __future__ import annotations

from typing import Any

from baselines.prompts import render
from baselines.repo_context import adaptation_k, render_code_block, repo_items
from reconmem.platform.brackets import TASK_ORACLE, BracketMethod
from reconmem.platform.context import Context, ContextItem, Turn
from reconmem.platform.fit import fit_prompt

ORACLE = "oracle"  # provenance of the statements handed over by the privileged channel
STATEMENT = "oracle_statement"  # their context item kind


class NoMemory(BracketMethod):
    """The floor: the current query and the repository adaptation, no memory of the conversation."""

    name = "no_memory"

    def __init__(self, repo_context_k: int | None = None) -> None:
        super().__init__()
        self.repo_context_k = repo_context_k

    def statement_items(self) -> list[ContextItem]:
        """Remembered statements for the current query (none: this is the floor)."""
        return []

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        session = self._session()
        code = repo_items(session, query, adaptation_k(session, self.repo_context_k))
        said = self.statement_items()

        def sections(kept: list[ContextItem]) -> list[str]:
            kept_said = [i for i in kept if i.kind == STATEMENT]
            block = render("oracle_statements", statements="\n\n".join(i.text for i in kept_said)) if kept_said else ""
            return [render_code_block(kept), block]  # the floor's prompt is a prefix: a prompt cache reuses it

        # the guard drops code (lowest-ranked first) before any statement
        fitted = fit_prompt(session, sections=sections, items=[*said, *code], query=query,
                            drop_order=[*reversed(code), *reversed(said)])
        meta: dict[str, Any] = {"bracket": self.name, **fitted.meta}
        if self.oracle is not None:
            meta["oracle_turns"] = self.oracle.turns
        return Context(query=query, messages=fitted.messages, items=fitted.items, meta=meta)

    def observe(self, turn: Turn) -> None:
        """Nothing is remembered."""

    def state(self) -> dict[str, Any]:
        return {"method": self.name}


class OracleContext(NoMemory):
    """The ceiling: the floor plus the statements of the task's requirement and ground-truth items."""

    name = "oracle_context"
    accepts = frozenset({TASK_ORACLE})

    def statement_items(self) -> list[ContextItem]:
        if self.oracle is None:
            return []
        return [ContextItem(kind=STATEMENT, id=f"turn-{s.turn}", text=s.text, source=ORACLE, meta={"turn": s.turn})
                for s in self.oracle.statements]
