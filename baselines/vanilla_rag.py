"""Vanilla RAG baseline (paper §3.4, k = 5 following LoCoEval).

Every past user query is embedded; for a new query the top-k most similar past queries are found
(cosine similarity) and their whole turns (query + response) are prepended as chat history in
chronological order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from baselines.common import turn_item, turn_messages
from baselines.repo_context import adaptation_k, render_code_block, repo_items
from reconmem.platform.context import MEMORY, Context, ContextManager, Session, Turn, build_messages
from reconmem.platform.fit import fit_prompt


class VanillaRAG(ContextManager):
    """Top-k past turns by query similarity, in chronological order."""

    name = "vanilla_rag"

    def __init__(self, k: int = 5, repo_context_k: int | None = None) -> None:
        super().__init__()
        self.repo_context_k = repo_context_k
        if k < 1:
            raise ValueError(f"method.manager.k must be >= 1, got {k}")
        self.k = int(k)
        self.turns: list[Turn] = []
        self._vectors: list[np.ndarray] = []

    def start(self, session: Session) -> None:
        super().start(session)
        self.turns, self._vectors = [], []

    def retrieve(self, query: str) -> list[tuple[Turn, float]]:
        """The k turns whose user query is most similar to ``query``, oldest first, with scores."""
        if not self.turns:
            return []
        from reconmem.platform.embed import cosine_top_k

        session = self._session()
        hits = cosine_top_k(session.embedder.encode_one(query), np.vstack(self._vectors), self.k)
        return sorted(((self.turns[i], float(s)) for i, s in hits), key=lambda ts: ts[0].index)

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        session = self._session()
        retrieved = self.retrieve(query)
        code = repo_items(session, query, adaptation_k(session, self.repo_context_k))
        # guard: code lowest-ranked first, then the retrieved turns with the lowest similarity
        by_score = sorted(range(len(retrieved)), key=lambda i: (retrieved[i][1], retrieved[i][0].index))
        groups = [turn_messages(t) for t, _ in retrieved]
        fitted = fit_prompt(session, sections=lambda kept: [render_code_block(kept)], items=code, query=query,
                            history=[groups[i] for i in by_score])
        kept_positions = sorted(by_score[fitted.meta["trimmed_history"]:])
        history = [m for i in kept_positions for m in groups[i]]
        messages = build_messages(session.system_prompt, [render_code_block(fitted.items)], history, query)
        if fitted.meta["truncated"]:
            messages = fitted.messages
        kept = [retrieved[i] for i in kept_positions]
        items = [turn_item(t, source=MEMORY, score=s) for t, s in kept] + fitted.items
        return Context(query=query, messages=messages, items=items,
                       meta={"retrieved_turns": [t.index for t, _ in kept], **fitted.meta})

    def observe(self, turn: Turn) -> None:
        self.turns.append(turn)
        self._vectors.append(np.asarray(self._session().embedder.encode_one(turn.user), dtype=np.float32))

    def state(self) -> dict[str, Any]:
        return {"method": self.name, "k": self.k, "turns": [t.to_dict() for t in self.turns]}
