"""Shared test helpers for tests/analysis (a uniquely named module; conftest.py is not importable safely)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
RESULTS = FIXTURES / "results"


def hash_embed(texts) -> np.ndarray:
    """Deterministic bag-of-words hashing embedding (a test stand-in for all-MiniLM-L6-v2)."""
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().split():
            out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)
