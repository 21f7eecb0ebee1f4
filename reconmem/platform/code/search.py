"""Embedding search over repository entities, with vectors cached per repository content.

Vectors are cached at two levels: in memory on the index (per embedder model id and kinds) and on
disk as ``$RECONMEM_CACHE/embeddings/entities/<content-hash>-<model>-<kinds>.npz`` (atomic write),
so re-indexing an unchanged repository never re-embeds. Besides, the embedder caches every text.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from reconmem.platform.code.entities import KINDS

if TYPE_CHECKING:
    from reconmem.platform.code.index import RepositoryIndex

MAX_CODE_CHARS = 512  # MiniLM truncates at 256 word pieces; shorter snippets embed ~2x faster


def entity_text(index: "RepositoryIndex", path: str, *, max_code_chars: int = MAX_CODE_CHARS) -> str:
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


def _disk_path(index: "RepositoryIndex", model_id: str, kinds: tuple[str, ...], cache_dir: Path | None) -> Path | None:
    if cache_dir is None:
        return None
    tag = hashlib.sha256(f"{model_id}\0{','.join(kinds)}\0{MAX_CODE_CHARS}".encode()).hexdigest()[:16]
    return cache_dir / "entities" / f"{index.content_hash[:32]}-{tag}.npz"


def entity_vectors(index: "RepositoryIndex", embedder: Any, kinds: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(paths, float32 matrix) of the entities of ``kinds`` in index order."""
    kinds_t = _check_kinds(kinds)
    model_id = getattr(embedder, "model_id", type(embedder).__name__)
    key = (model_id, kinds_t)
    cached = index._vector_cache.get(key)
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
    with index._lock:
        index._vector_cache[key] = (paths, matrix)
    return paths, matrix


def search(index: "RepositoryIndex", query: str, embedder: Any, *, k: int, kinds: Sequence[str]) -> list[tuple[str, float]]:
    """Top-``k`` (path, cosine) of entities of ``kinds`` for ``query``."""
    from reconmem.platform.embed import cosine_top_k

    paths, matrix = entity_vectors(index, embedder, kinds)
    if k <= 0 or not paths:
        return []
    q = embedder.encode_one(query)
    return [(paths[i], score) for i, score in cosine_top_k(q, matrix, k, normalized=True)]
