"""Code retrieval backends (reconmem/platform/code/retrieval.py) on the real boltons index: the
code-aware tokens, BM25 through bm25s, reciprocal-rank fusion, the spec, and the one switch every
repository-code retrieval reads (``Session.retriever``)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from reconmem.platform.code.retrieval import (
    CodeRetriever,
    RetrieverSpec,
    code_tokens,
    lexical_index,
    reciprocal_rank_fusion,
    search,
)

SLUGIFY_QUERY = "Turn a text into a slug: lowercase words joined by a delimiter, punctuation removed"


class BagOfWordsEmbedder:
    """A deterministic stand-in embedder (hashed code tokens), so the dense side needs no model."""

    model_id = "test-bag-of-words"
    dim = 64
    cache_dir = None

    def encode(self, texts):
        out = np.zeros((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            for tok in code_tokens(text):
                out[row, int(hashlib.sha256(tok.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def encode_one(self, text):
        return self.encode([text])[0]


def test_code_tokens_split_identifiers():
    toks = code_tokens("def parseHTTPHeader(self, max_line_length): returns LRUCache")
    assert toks[:5] == ["def", "parsehttpheader", "parse", "http", "header"]
    assert {"max_line_length", "max", "line", "length", "return", "lrucache", "lru", "cache"} <= set(toks)
    assert "the" not in code_tokens("the cache") and "a" not in code_tokens("a b")


def test_bm25_ranks_the_named_function_first(boltons_index):
    hits = boltons_index.search(SLUGIFY_QUERY, None, k=5, retriever="bm25")
    assert hits[0][0] == "boltons/strutils.py/slugify"
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert all(boltons_index.get(p).kind == "function" for p, _ in hits)


def test_bm25_edges(boltons_index):
    lex = lexical_index(boltons_index, ("function",))
    assert lex is lexical_index(boltons_index, ("function",))  # built once per index
    assert lex.top_k("", 5) == [] and lex.top_k("zzqxv wwqpt", 5) == []  # nothing matches: nothing returned
    among = ["boltons/strutils.py/asciify", "boltons/iterutils.py/chunked"]
    assert [p for p, _ in lex.top_k(SLUGIFY_QUERY, 5, among=among)] == ["boltons/strutils.py/asciify"]


def test_reciprocal_rank_fusion():
    a = [("x", 0.9), ("y", 0.8), ("z", 0.1)]
    b = [("y", 7.0), ("w", 3.0)]
    fused = reciprocal_rank_fusion([a, b], 3, rrf_k=60, order={"w": 0, "x": 1, "y": 2, "z": 3})
    assert fused[0] == ("y", round(1 / 62 + 1 / 61, 8))
    assert [p for p, _ in fused] == ["y", "x", "w"]  # x and w tie at 1/61: repository order decides
    assert reciprocal_rank_fusion([a, b], 0) == []


def test_hybrid_fuses_dense_and_bm25(boltons_index):
    emb = BagOfWordsEmbedder()
    spec = RetrieverSpec("hybrid", depth=20)
    dense = search(boltons_index, SLUGIFY_QUERY, emb, k=20, kinds=("function",), retriever="dense")
    lexical = search(boltons_index, SLUGIFY_QUERY, emb, k=20, kinds=("function",), retriever="bm25")
    hybrid = search(boltons_index, SLUGIFY_QUERY, emb, k=5, kinds=("function",), retriever=spec)
    from reconmem.platform.code.retrieval import repository_order

    assert hybrid == reciprocal_rank_fusion([dense, lexical], 5, rrf_k=60, order=repository_order(boltons_index))
    assert hybrid[0][0] in dict(dense) and hybrid[0][0] in dict(lexical)  # found by both beats found by one


def test_dense_default_is_the_embedding_search(boltons_index):
    from reconmem.platform.code import search as dense_search

    emb = BagOfWordsEmbedder()
    assert boltons_index.search("split a list into chunks", emb, k=4) == \
        dense_search.search(boltons_index, "split a list into chunks", emb, k=4, kinds=("function",))


def test_code_retriever_routes(boltons_index):
    from reconmem.platform.code.search import RepositoryVectors

    emb = BagOfWordsEmbedder()
    vectors = RepositoryVectors(boltons_index, emb, ("function", "type"))
    q = emb.encode_one(SLUGIFY_QUERY)
    dense = CodeRetriever(boltons_index, vectors, ("function", "type"), "dense")
    assert dense.repository(q, 3) == vectors.top_k(q, 3)
    bm25 = CodeRetriever(boltons_index, vectors, ("function", "type"), "bm25")
    assert bm25.repository(q, 1, text=SLUGIFY_QUERY)[0][0] == "boltons/strutils.py/slugify"
    graph = ["boltons/iterutils.py/chunked", "boltons/strutils.py/asciify"]
    assert [p for p, _ in bm25.among(graph, lambda n: [], 2, text=SLUGIFY_QUERY)] == ["boltons/strutils.py/asciify"]
    with pytest.raises(ValueError, match="query text"):
        bm25.repository(q, 1)


def test_spec_from_config_and_record():
    assert RetrieverSpec.of(None) == RetrieverSpec() == RetrieverSpec.of("dense")
    spec = RetrieverSpec.of({"name": "hybrid", "label": "Hybrid", "k1": 1.2, "rrf_k": 30})
    assert (spec.name, spec.k1, spec.b, spec.rrf_k) == ("hybrid", 1.2, 0.75, 30)
    record = spec.record()
    assert record["library"].startswith("bm25s==") and record["rrf_k"] == 30
    assert RetrieverSpec().record() == {"name": "dense"}
    with pytest.raises(ValueError, match="unknown backend"):
        RetrieverSpec.of("tfidf")


def test_repository_adaptation_follows_the_session(boltons_index):
    from baselines.repo_context import repo_items
    from reconmem.platform.context import Session
    from reconmem.platform.testing import ScriptedLLM

    session = Session(sample_id="t", llm=ScriptedLLM(["x"]), embedder=None, repo=boltons_index, retriever="bm25")
    items = repo_items(session, SLUGIFY_QUERY, 3)
    assert [i.id for i in items] == [p for p, _ in boltons_index.search(SLUGIFY_QUERY, None, k=3, retriever="bm25")]
    assert items[0].id == "boltons/strutils.py/slugify"
