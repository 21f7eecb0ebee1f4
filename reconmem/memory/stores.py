"""The two auxiliary stores that memory construction and joint recall share (paper §2.2, §2.3).

* :class:`CodeDraftDatabase` - code blocks of the assistant's responses with their embeddings;
  construction writes it after every turn, query grounding (§2.3.1) reads it.
* :class:`RepositoryVectors` - embeddings of the repository's code entities; construction uses them
  to instantiate structural entities, recall ranks repository-wide (k31) and structural-graph (k32)
  code entities in the same space.

They live here, not in ``construct`` or ``recall``, so neither of those imports the other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from reconmem.memory.graph import VectorStore, dot_rows, top_k_scores

if TYPE_CHECKING:
    from reconmem.platform.code.index import RepositoryIndex
    from reconmem.platform.embed import Embedder

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


class RepositoryVectors:
    """Embeddings of the repository's code entities (one matrix, from ``RepositoryIndex.entity_vectors``).

    Used for repository-wide retrieval (k31) and as the vectors of instantiated structural entities
    (k32), so both code routes rank in the same space. Built lazily on first use.
    """

    def __init__(self, repo: "RepositoryIndex", embedder: "Embedder", kinds: Sequence[str] = CODE_KINDS) -> None:
        self.repo = repo
        self.embedder = embedder
        self.kinds = tuple(kinds)
        self._paths: list[str] | None = None
        self._matrix: np.ndarray | None = None
        self._rows: dict[str, int] = {}
        self._extra: dict[str, np.ndarray] = {}

    def _ensure(self) -> None:
        if self._paths is None:
            paths, matrix = self.repo.entity_vectors(self.embedder, kinds=self.kinds)
            self._paths = list(paths)
            matrix = np.asarray(matrix, dtype=np.float32)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True) if matrix.size else np.ones((0, 1), np.float32)
            self._matrix = np.ascontiguousarray(matrix / np.maximum(norms, 1e-12))  # dot product = cosine
            self._rows = {p: i for i, p in enumerate(self._paths)}

    @property
    def paths(self) -> list[str]:
        self._ensure()
        return self._paths  # type: ignore[return-value]

    def vector(self, path: str) -> np.ndarray | None:
        """The vector of ``path`` (embedded from its source if it is not in the matrix)."""
        self._ensure()
        row = self._rows.get(path)
        if row is not None:
            return self._matrix[row]  # type: ignore[index]
        if path not in self._extra:
            if self.repo.get(path) is None:
                return None
            self._extra[path] = self.embedder.encode_one(self.repo.entity_text(path))
        return self._extra[path]

    def top_k(self, query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Repository-wide top-``k`` code entities by cosine similarity (ties by path order)."""
        self._ensure()
        if k <= 0 or not self._paths:
            return []
        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        scores = dot_rows(self._matrix, q)  # type: ignore[arg-type]
        return [(self._paths[i], s) for i, s in top_k_scores(scores, k)]  # ties: repository order


__all__ = ["CODE_KINDS", "CodeDraft", "CodeDraftDatabase", "RepositoryVectors"]
