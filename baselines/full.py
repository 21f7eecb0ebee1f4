"""Full history baseline (paper §3.4): the whole conversation, truncated only at the window.

Truncation is at turn granularity, oldest turns first, and happens only when the prompt (counted
with the backbone's own tokenizer, ``session.llm.count_tokens``) would exceed
``session.context_window`` minus the answer reserve (the backbone's ``max_output_tokens`` unless
``answer_reserve`` is given). With the unified repository adaptation on, the repository functions
are kept and history is dropped first.
"""

from __future__ import annotations

from typing import Any

from baselines.common import prompt_budget, turn_item, turn_messages
from baselines.repo_context import render_code_block, repo_items
from reconmem.platform.context import RECENT, Context, ContextManager, Session, Turn, build_messages


class FullHistory(ContextManager):
    """Every past turn as chat history (CR = 1 by definition)."""

    name = "full"

    def __init__(self, answer_reserve: int | None = None) -> None:
        super().__init__()
        self.answer_reserve = answer_reserve
        self.turns: list[Turn] = []

    def start(self, session: Session) -> None:
        super().start(session)
        self.turns = []

    def _messages(self, blocks: list[str], turns: list[Turn], query: str) -> list[dict[str, Any]]:
        history = [m for t in turns for m in turn_messages(t)]
        return build_messages(self._session().system_prompt, blocks, history, query)

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        session = self._session()
        code = repo_items(session, query)
        blocks = [render_code_block(code)]
        budget = prompt_budget(session, self.answer_reserve)
        dropped = self._turns_to_drop(blocks, query, budget)
        kept = self.turns[dropped:]
        messages = self._messages(blocks, kept, query)
        items = [turn_item(t, source=RECENT) for t in kept] + code
        meta = {"truncated_turns": dropped, "kept_turns": len(kept), "prompt_budget": budget}
        return Context(query=query, messages=messages, items=items, meta=meta)

    def _turns_to_drop(self, blocks: list[str], query: str, budget: int) -> int:
        """Fewest oldest turns to drop so the prompt fits ``budget`` (binary search; monotone)."""
        count = self._session().llm.count_tokens
        if count(self._messages(blocks, self.turns, query)) <= budget:
            return 0
        lo, hi = 1, len(self.turns)  # answer in [lo, hi]; dropping all turns is the last resort
        while lo < hi:
            mid = (lo + hi) // 2
            if count(self._messages(blocks, self.turns[mid:], query)) <= budget:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def observe(self, turn: Turn) -> None:
        self.turns.append(turn)

    def state(self) -> dict[str, Any]:
        return {"method": self.name, "turns": [t.to_dict() for t in self.turns]}
