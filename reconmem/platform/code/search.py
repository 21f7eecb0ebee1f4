"""Embedding search over repository entities: the platform's one repository vector index.

:class:`RepositoryVectors` holds the embeddings of a repository's code entities in one unit-norm
float32 matrix and ranks them with the platform's exact top-k (:mod:`reconmem.platform.vectors`);
``RepositoryIndex.search`` (the baselines' repository context) and ReConMem's repository-wide and
structural-graph code retrieval both use it, so they rank in the same space with the same ties
(score descending, then repository order).

Entity vectors are cached at two levels: in memory per index (per embedder model id and kinds) and
on disk as ``$RECONMEM_CACHE/embeddings/entities/<content-hash>-<model>-<kinds>.npz`` (atomic
write), so re-indexing an unchanged repository never re-embeds. Besides, the embedder caches every
text. The module is typed against :class:`~reconmem.platform.code.entities.EntitySource`, so it does
not import the index module (which imports this one).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from reconmem.platform.code.entities import FILE, FUNCTION, KINDS, TYPE, VARIABLE, EntitySource
from reconmem.platform.vectors import dot_rows, top_k

# Every non-directory kind ("all code entities in the repository", paper §2.3.2).
CODE_KINDS = (FILE, TYPE, FUNCTION, VARIABLE)

_MEMO: "weakref.WeakKeyDictionary[Any, dict[tuple, Any]]" = weakref.WeakKeyDictionary()
_MEMO_LOCK = threading.Lock()

MAX_CODE_CHARS = 512  # MiniLM truncates at 256 word pieces; shorter snippets embed ~2x faster


def entity_text(index: EntitySource, path: str, *, max_code_chars: int = MAX_CODE_CHARS) -> str:
    """``path`` + signature + the first ``max_code_chars`` characters of the source."""
    e = index.entities[path]
    code = index.source(path)
    if len(code) > max_code_chars:
        code = code[:max_code_chars]
    return f"{e.path}\n{e.signature}\n{code}"


def _check_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    if isinstance(kinds, str):
        kinds = (kinds,)
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ValueError(f"kinds: unknown entity kind(s) {bad}; choose from {KINDS}")
    return tuple(sorted(set(kinds)))


def _disk_path(index: EntitySource, model_id: str, kinds: tuple[str, ...], cache_dir: Path | None) -> Path | None:
    if cache_dir is None:
        return None
    tag = hashlib.sha256(f"{model_id}\0{','.join(kinds)}\0{MAX_CODE_CHARS}".encode()).hexdigest()[:16]
    return cache_dir / "entities" / f"{index.content_hash[:32]}-{tag}.npz"


def entity_vectors(index: EntitySource, embedder: Any, kinds: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(paths, float32 matrix) of the entities of ``kinds`` in index order."""
    kinds_t = _check_kinds(kinds)
    model_id = getattr(embedder, "model_id", type(embedder).__name__)
    key = (model_id, kinds_t)
    with _MEMO_LOCK:
        cached = _MEMO.setdefault(index, {}).get(key)
    if cached is not None:
        return cached
    paths = [p for p, e in index.entities.items() if e.kind in kinds_t]
    disk = _disk_path(index, model_id, kinds_t, getattr(embedder, "cache_dir", None))
    matrix: np.ndarray | None = None
    if disk is not None and disk.exists():
        try:
            with np.load(disk, allow_pickle=False) as data:
                if list(data["paths"]) == paths:
                    matrix = data["matrix"].astype(np.float32, copy=False)
        except (OSError, ValueError, KeyError):
            matrix = None
    if matrix is None:
        dim = int(getattr(embedder, "dim", 384))
        matrix = embedder.encode([entity_text(index, p) for p in paths]) if paths else np.zeros((0, dim), np.float32)
        matrix = np.asarray(matrix, dtype=np.float32)
        if disk is not None:
            disk.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=disk.parent, suffix=".npz.tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    np.savez(fh, paths=np.array(paths, dtype=str), matrix=matrix)
                os.replace(tmp, disk)
            except OSError:
                Path(tmp).unlink(missing_ok=True)
    with _MEMO_LOCK:
        _MEMO.setdefault(index, {})[key] = (paths, matrix)
    return paths, matrix


class RepositoryVectors:
    """Embeddings of a repository's code entities of ``kinds`` (one unit-norm matrix), built lazily.

    :meth:`top_k` is the repository-wide search (ties by repository order); :meth:`vector` gives
    the vector of one entity (embedded from its text when its kind is not in the matrix).
    """

    def __init__(self, repo: EntitySource, embedder: Any, kinds: Sequence[str] = CODE_KINDS) -> None:
        self.repo = repo
        self.embedder = embedder
        self.kinds = tuple(kinds)
        self._paths: list[str] | None = None
        self._matrix: np.ndarray | None = None
        self._rows: dict[str, int] = {}
        self._extra: dict[str, np.ndarray] = {}

    def _ensure(self) -> None:
        if self._paths is None:
            paths, matrix = entity_vectors(self.repo, self.embedder, self.kinds)
            matrix = np.asarray(matrix, dtype=np.float32)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True) if matrix.size else np.ones((0, 1), np.float32)
            self._matrix = np.ascontiguousarray(matrix / np.maximum(norms, 1e-12))  # dot product = cosine
            self._rows = {p: i for i, p in enumerate(paths)}
            self._paths = list(paths)

    @property
    def paths(self) -> list[str]:
        """Entity paths in matrix (repository) order."""
        self._ensure()
        return self._paths  # type: ignore[return-value]

    @property
    def matrix(self) -> np.ndarray:
        """The unit-norm float32 matrix, one row per :attr:`paths` entry (do not mutate)."""
        self._ensure()
        return self._matrix  # type: ignore[return-value]

    def vector(self, path: str) -> np.ndarray | None:
        """The vector of ``path`` (embedded from its entity text if it is not in the matrix)."""
        self._ensure()
        row = self._rows.get(path)
        if row is not None:
            return self._matrix[row]  # type: ignore[index]
        if path not in self._extra:
            if self.repo.get(path) is None:
                return None
            self._extra[path] = self.embedder.encode_one(entity_text(self.repo, path))
        return self._extra[path]

    def top_k(self, query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Repository-wide top-``k`` code entities by cosine similarity (ties by repository order)."""
        self._ensure()
        if k <= 0 or not self._paths:
            return []
        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        scores = dot_rows(self._matrix, q)  # type: ignore[arg-type]
        return [(self._paths[i], s) for i, s in top_k(scores, k)]


def search(index: EntitySource, query: str, embedder: Any, *, k: int, kinds: Sequence[str]) -> list[tuple[str, float]]:
    """Top-``k`` (path, cosine) of entities of ``kinds`` for ``query`` (a :class:`RepositoryVectors` search)."""
    if k <= 0:
        return []
    kinds_t = _check_kinds(kinds)
    key = ("search", getattr(embedder, "model_id", type(embedder).__name__), kinds_t)
    with _MEMO_LOCK:
        vectors = _MEMO.setdefault(index, {}).get(key)
    if vectors is None or vectors.embedder is not embedder:
        vectors = RepositoryVectors(index, embedder, kinds_t)
        with _MEMO_LOCK:
            _MEMO.setdefault(index, {})[key] = vectors
    if not vectors.paths:
        return []
    return vectors.top_k(embedder.encode_one(query), k)
