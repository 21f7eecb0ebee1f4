"""The two auxiliary stores that memory construction and joint recall share (paper §2.2, §2.3).

* :class:`CodeDraftDatabase` - code blocks of the assistant's responses with their embeddings;
  construction writes it after every turn, query grounding (§2.3.1) reads it.
* :class:`RepositoryVectors` - embeddings of the repository's code entities; construction uses them
  to instantiate structural entities, recall ranks repository-wide (k31) and structural-graph (k32)
  code entities in the same space. It is the platform's one repository vector index
  (:mod:`reconmem.platform.code.search`), re-exported here.

They live here, not in ``construct`` or ``recall``, so neither of those imports the other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from reconmem.memory.graph import VectorStore
from reconmem.platform.code.search import RepositoryVectors  # the platform's one repository vector index

# "All code entities in the repository" (§2.3.2): every non-directory kind.
CODE_KINDS = ("file", "type", "function", "variable")


@dataclass
class CodeDraft:
    id: str
    code: str
    language: str
    turn: int


class CodeDraftDatabase:
    """The auxiliary code draft database: code blocks from assistant responses with embeddings."""

    def __init__(self) -> None:
        self.drafts: dict[str, CodeDraft] = {}
        self.vectors = VectorStore()
        self._by_code: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self.drafts)

    def add(self, code: str, vector: np.ndarray, *, turn: int, language: str = "") -> str | None:
        """Store a draft; returns its id, or None if the identical code is already stored."""
        if code in self._by_code:
            return None
        draft_id = f"d{len(self.drafts) + 1}"
        self.drafts[draft_id] = CodeDraft(draft_id, code, language, turn)
        self._by_code[code] = draft_id
        self.vectors.upsert(draft_id, vector)
        return draft_id

    def most_similar(self, query_vector: np.ndarray) -> tuple[CodeDraft, float] | None:
        """The draft with the highest cosine similarity to ``query_vector`` (None if empty)."""
        best = self.vectors.top_k(query_vector, 1)
        if not best:
            return None
        draft_id, score = best[0]
        return self.drafts[draft_id], score

    def to_dict(self) -> list[dict[str, Any]]:
        return [asdict(d) for d in self.drafts.values()]


__all__ = ["CODE_KINDS", "CodeDraft", "CodeDraftDatabase", "RepositoryVectors"]
