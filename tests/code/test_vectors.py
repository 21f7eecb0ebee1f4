"""The platform's one exact top-k (reconmem.platform.vectors): scores, deterministic ties, the keyed store."""

from __future__ import annotations

import numpy as np

from reconmem.platform import embed, vectors
from reconmem.platform.code import search
from reconmem.memory import graph, stores


def test_every_caller_uses_the_one_implementation():
    assert embed.cosine_top_k is vectors.cosine_top_k
    assert graph.VectorStore is vectors.VectorStore and graph.top_k_scores is vectors.top_k
    assert stores.RepositoryVectors is search.RepositoryVectors


def test_top_k_ties_by_index_or_key_whatever_argpartition_returns():
    scores = np.array([0.5, 0.9, 0.5, 0.9, 0.1, 0.5], dtype=np.float32)
    assert [i for i, _ in vectors.top_k(scores, 3)] == [1, 3, 0]
    assert [i for i, _ in vectors.top_k(scores, 4)] == [1, 3, 0, 2]
    keys = ["m5", "m2", "m10", "m1", "m3", "m0"]
    assert [i for i, _ in vectors.top_k(scores, 3, keys)] == [3, 1, 5]  # "m1" < "m2"; then "m0" < "m10" < "m5"
    assert vectors.top_k(scores, 0) == [] and vectors.top_k(scores[:0], 3) == []
    assert [i for i, _ in vectors.top_k(scores, 10)] == [1, 3, 0, 2, 5, 4]


def test_top_k_matches_a_full_stable_sort():
    rng = np.random.default_rng(0)
    for _ in range(50):
        scores = rng.integers(0, 20, 500).astype(np.float32) / 7  # many ties
        k = int(rng.integers(1, 40))
        expected = sorted(range(500), key=lambda i: (-float(scores[i]), i))[:k]
        assert [i for i, _ in vectors.top_k(scores, k)] == expected


def test_vector_store_growth_reserve_and_swap_remove():
    rng = np.random.default_rng(1)
    store = vectors.VectorStore(capacity=1)
    rows = rng.standard_normal((300, 8)).astype(np.float32)
    for i, row in enumerate(rows):
        store.upsert(f"k{i}", row)
    store.reserve(1000)
    assert len(store) == 300 and store.matrix.shape == (300, 8) and store.matrix.flags["C_CONTIGUOUS"]
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    q = rng.standard_normal(8).astype(np.float32)
    expected = sorted(range(300), key=lambda i: -float(unit[i] @ (q / np.linalg.norm(q))))[:5]
    assert [k for k, _ in store.top_k(q, 5)] == [f"k{i}" for i in expected]
    assert store.remove("k0") and not store.remove("k0") and "k299" in store and len(store) == 299
    assert [k for k, _ in store.top_k(q, 5)] == [f"k{i}" for i in expected if i != 0][:5]


def test_a_large_matrix_scored_in_two_halves_is_bit_identical_to_one_pass(monkeypatch):
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((20_001, 384)).astype(np.float32)  # odd rows: unequal halves
    query = rng.standard_normal(384).astype(np.float32)
    assert matrix.size >= vectors.SPLIT_MIN_VALUES
    monkeypatch.setattr(vectors, "CORES", 2)
    split = vectors.dot_rows(matrix, query)
    one_pass = np.einsum("ij,j->i", matrix, query)
    assert split.dtype == one_pass.dtype and np.array_equal(split, one_pass)
    monkeypatch.setattr(vectors, "SPLIT_MIN_VALUES", 10**12)  # the one-pass path gives the same
    assert np.array_equal(vectors.dot_rows(matrix, query), split)
    store = vectors.VectorStore(dim=384)
    for i, row in enumerate(matrix[:500]):
        store.upsert(f"m{i}", row)
    one_pass_hits = store.top_k(query, 5)
    monkeypatch.setattr(vectors, "SPLIT_MIN_VALUES", 1)  # a store's live-rows view (a slice) is split too
    assert store.top_k(query, 5) == one_pass_hits and len(one_pass_hits) == 5


def test_split_scoring_works_in_a_forked_child_after_use_in_the_parent(monkeypatch):
    """The helper thread does not survive fork(); a child must not wait on it forever."""
    import multiprocessing as mp

    monkeypatch.setattr(vectors, "SPLIT_MIN_VALUES", 1)
    monkeypatch.setattr(vectors, "CORES", 2)
    matrix = np.arange(40, dtype=np.float32).reshape(10, 4)
    query = np.ones(4, dtype=np.float32)
    expected = np.einsum("ij,j->i", matrix, query)
    assert np.array_equal(vectors.dot_rows(matrix, query), expected)  # the parent's helper exists now
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        result = pool.apply_async(_child_dot_rows, (matrix, query)).get(timeout=60)
    assert np.array_equal(result, expected)


def _child_dot_rows(matrix, query):
    vectors.SPLIT_MIN_VALUES = 1
    vectors.CORES = 2
    return vectors.dot_rows(matrix, query)
