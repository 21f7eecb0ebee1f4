"""Exact cosine top-k over float32 row vectors: the one vector search of the platform.

Everything that ranks vectors -- the baselines' memory stores (``embed.cosine_top_k``), the
repository-wide code search (``code.search.RepositoryVectors``) and ReConMem's dual memory graph
(``VectorStore``) -- goes through :func:`dot_rows` and :func:`top_k`, so scores and tie-breaks are
the same everywhere:

* scores are an ``einsum`` mat-vec over a contiguous float32 matrix (a multi-threaded BLAS
  mat-vec is several times *slower* on a loaded 2-core machine because its threads wait for each
  other, and its summation order differs from einsum's); a large matrix is scored as two row
  halves on two threads, bit-identical to one pass (a mat-vec is memory-bound);
* the ``k`` best rows are found with ``argpartition`` (O(n)), then every row tied with the k-th
  score is kept and the candidates are ordered by score descending, then by ``tie_keys`` (the row
  index when none are given) ascending -- deterministic, independent of ``argpartition``'s order.

:class:`VectorStore` holds keyed vectors in one preallocated matrix that grows by doubling
(amortised O(1) insert, O(1) swap-remove), so a search is one mat-vec regardless of how the store
was built.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

__all__ = ["VectorStore", "cosine_top_k", "dot_rows", "normalize", "top_k"]


def normalize(vector: np.ndarray) -> np.ndarray:
    """``vector`` (float32, flattened) divided by its L2 norm; a zero vector stays zero."""
    q = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 0 else q


SPLIT_MIN_VALUES = 4_000_000  # matrices of at least this many floats (~10k x 384) are scored in two halves
CORES = os.cpu_count() or 1  # read once: os.cpu_count() costs ~50 us, paid on every large mat-vec otherwise
_HELPER: ThreadPoolExecutor | None = None
_HELPER_LOCK = threading.Lock()


def _forget_helper() -> None:
    """In a forked child the parent's helper thread does not exist: start a new one on first use."""
    global _HELPER, _HELPER_LOCK
    _HELPER, _HELPER_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_helper)


def _helper() -> ThreadPoolExecutor:
    global _HELPER
    with _HELPER_LOCK:
        if _HELPER is None:
            _HELPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reconmem-dot-rows")
        return _HELPER


def dot_rows(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` by einsum (SIMD): one float32 score per row.

    A large matrix (:data:`SPLIT_MIN_VALUES`) on a machine with two or more cores is scored in
    two row halves at once -- the calling thread and one helper thread (einsum releases the GIL).
    Each row's dot product is the same einsum inner loop either way, so the scores are
    bit-identical to the one-pass product (``tests/code/test_vectors.py``); only the memory
    bandwidth of two cores is used instead of one.
    """
    n = int(matrix.shape[0])
    if matrix.size < SPLIT_MIN_VALUES or CORES < 2 or not matrix.flags.c_contiguous:
        return np.einsum("ij,j->i", matrix, vector)
    out = np.empty(n, dtype=np.result_type(matrix.dtype, vector.dtype))
    half = n // 2
    other = _helper().submit(np.einsum, "ij,j->i", matrix[half:], vector, out=out[half:])
    np.einsum("ij,j->i", matrix[:half], vector, out=out[:half])
    other.result()
    return out


def top_k(scores: np.ndarray, k: int, tie_keys: Sequence[Any] | None = None) -> list[tuple[int, float]]:
    """Row indices and scores of the ``k`` highest ``scores``, best first.

    Ties are broken by ``tie_keys[i]`` ascending (default: the index ``i``), so the result never
    depends on the order ``argpartition`` happens to return.
    """
    m = int(scores.shape[0])
    if k <= 0 or m == 0:
        return []
    if k < m:
        part = np.argpartition(scores, m - k)[m - k:]  # the k largest (no negated copy of the scores)
        kth = scores[part].min()
        part = np.flatnonzero(scores >= kth)  # every row tied with the k-th, for a stable tie-break
    else:
        part = np.arange(m)
    if tie_keys is None:
        order = sorted(part.tolist(), key=lambda i: (-float(scores[i]), i))
    else:
        order = sorted(part.tolist(), key=lambda i: (-float(scores[i]), tie_keys[i]))
    return [(i, float(scores[i])) for i in order[:k]]


def cosine_top_k(query_vec: np.ndarray, matrix: np.ndarray, k: int, *, normalized: bool = False) -> list[tuple[int, float]]:
    """Indices and cosine scores of the ``k`` rows of ``matrix`` most similar to ``query_vec``.

    Sorted by score descending, ties by row index. Rows with zero norm score 0. ``normalized=True``
    promises unit-norm rows (Embedder output) and skips the row-norm computation. A zero query
    returns ``[]``.
    """
    if k <= 0:
        return []
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        return []
    q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    if q.shape[0] != matrix.shape[1]:
        raise ValueError(f"cosine_top_k: query dim {q.shape[0]} != matrix dim {matrix.shape[1]}")
    qn = float(np.linalg.norm(q))
    if qn == 0.0:
        return []
    scores = dot_rows(matrix, q / qn)
    if not normalized:
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        scores = np.where(norms > 0, scores / np.maximum(norms, 1e-12), 0.0)
    return top_k(scores, k)


class VectorStore:
    """Keyed float32 row vectors in one growing matrix; cosine top-k by a single mat-vec product.

    Vectors are L2-normalised on insert (already unit-norm vectors are stored bit-exact), so the
    dot product is the cosine similarity. Ties in :meth:`top_k` are broken by key.
    """

    def __init__(self, dim: int | None = None, capacity: int = 64) -> None:
        self.dim = dim
        self._capacity = max(1, int(capacity))
        self._matrix: np.ndarray | None = None
        self._keys: list[str] = []
        self._rows: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def keys(self) -> list[str]:
        return list(self._keys)

    @property
    def matrix(self) -> np.ndarray:
        """The live rows (a view; do not mutate)."""
        if self._matrix is None:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return self._matrix[: len(self._keys)]

    def get(self, key: str) -> np.ndarray | None:
        row = self._rows.get(key)
        return None if row is None else self._matrix[row]  # type: ignore[index]

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` vectors without further growth (needs ``dim`` known)."""
        if self.dim is None or rows <= (0 if self._matrix is None else self._matrix.shape[0]):
            return
        grown = np.zeros((rows, self.dim), dtype=np.float32)
        if self._matrix is not None:
            grown[: len(self._keys)] = self._matrix[: len(self._keys)]
        self._matrix = grown

    def upsert(self, key: str, vector: np.ndarray) -> None:
        """Insert or replace the vector of ``key``."""
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self.dim is None:
            self.dim = int(vec.shape[0])
        if vec.shape[0] != self.dim:
            raise ValueError(f"VectorStore: vector for {key!r} has dim {vec.shape[0]}, expected {self.dim}")
        norm = float(np.linalg.norm(vec))
        if norm > 0 and abs(norm - 1.0) > 1e-6:  # already-normalised vectors are stored bit-exact
            vec = vec / norm
        if self._matrix is None:
            self._matrix = np.zeros((self._capacity, self.dim), dtype=np.float32)
        row = self._rows.get(key)
        if row is None:
            row = len(self._keys)
            if row >= self._matrix.shape[0]:
                self.reserve(self._matrix.shape[0] * 2)
            self._keys.append(key)
            self._rows[key] = row
        self._matrix[row] = vec

    def remove(self, key: str) -> bool:
        """Remove ``key`` (the last row moves into its slot). Returns False if absent."""
        row = self._rows.pop(key, None)
        if row is None:
            return False
        last = len(self._keys) - 1
        if row != last:
            moved = self._keys[last]
            self._matrix[row] = self._matrix[last]  # type: ignore[index]
            self._keys[row] = moved
            self._rows[moved] = row
        self._keys.pop()
        return True

    def top_k(self, query: np.ndarray, k: int, *, among: Iterable[str] | None = None) -> list[tuple[str, float]]:
        """The ``k`` most cosine-similar keys to ``query``, best first (ties broken by key)."""
        n = len(self._keys)
        if k <= 0 or n == 0:
            return []
        q = normalize(query)
        if among is not None:
            rows = np.fromiter((self._rows[a] for a in among if a in self._rows), dtype=np.int64)
            if rows.size == 0:
                return []
            scores = dot_rows(self._matrix[rows], q)  # type: ignore[index]
            keys = [self._keys[r] for r in rows]
        else:
            scores = dot_rows(self.matrix, q)
            keys = self._keys
        return [(keys[i], s) for i, s in top_k(scores, k, keys)]
