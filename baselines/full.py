"""Full history baseline (paper §3.4): the whole conversation, truncated only at the window.

Truncation is at turn granularity, oldest turns first, and happens only when the prompt (counted
with the backbone's own tokenizer, ``session.llm.count_tokens``) would exceed
``session.context_window`` minus the answer reserve (the backbone's ``max_output_tokens`` unless
``answer_reserve`` is given, at most half the window). With the unified repository adaptation on,
the repository functions are kept and history is dropped first; the shared guard
(:mod:`reconmem.platform.fit`) then trims code, lowest-ranked first, if the turn still does not fit.
"""

from __future__ import annotations

from typing import Any

from baselines.common import turn_item, turn_messages
from baselines.repo_context import adaptation_k, render_code_block, repo_items
from reconmem.platform.context import RECENT, Context, ContextManager, Session, Turn
from reconmem.platform.fit import fit_prompt


class FullHistory(ContextManager):
    """Every past turn as chat history (CR = 1 by definition)."""

    name = "full"

    def __init__(self, answer_reserve: int | None = None, repo_context_k: int | None = None) -> None:
        super().__init__()
        self.answer_reserve = answer_reserve
        self.repo_context_k = repo_context_k
        self.turns: list[Turn] = []

    def start(self, session: Session) -> None:
        super().start(session)
        self.turns = []

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        session = self._session()
        code = repo_items(session, query, adaptation_k(session, self.repo_context_k))
        fitted = fit_prompt(session, sections=lambda kept: [render_code_block(kept)], items=code, query=query,
                            history=[turn_messages(t) for t in self.turns], answer_reserve=self.answer_reserve,
                            history_first=True)
        dropped = fitted.meta["trimmed_history"]
        kept = self.turns[dropped:]
        items = [turn_item(t, source=RECENT) for t in kept] + fitted.items
        meta = {"truncated_turns": dropped, "kept_turns": len(kept), **fitted.meta}
        return Context(query=query, messages=fitted.messages, items=items, meta=meta)

    def observe(self, turn: Turn) -> None:
        self.turns.append(turn)

    def state(self) -> dict[str, Any]:
        return {"method": self.name, "turns": [t.to_dict() for t in self.turns]}
