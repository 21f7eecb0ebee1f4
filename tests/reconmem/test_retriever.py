"""ReConMem's code-side routes follow the session's code retriever (dense stays the paper's)."""

from __future__ import annotations

from reconmem.platform.context import REPO_WIDE, Session

QUERY = "Turn a text into a slug: lowercase words joined by a delimiter, punctuation removed"


def _start(boltons_index, embedder, retriever):
    from reconmem.memory.method import ReConMem
    from reconmem.platform.testing import ScriptedLLM
    from rm_helpers import PurposeScript

    method = ReConMem(k31=3)
    method.start(Session(sample_id="t", llm=ScriptedLLM(PurposeScript()), embedder=embedder, repo=boltons_index,
                         retriever=retriever))
    return method


def test_repository_wide_route_by_bm25(boltons_index, embedder):
    from reconmem.memory.recall import CODE_KINDS
    from reconmem.platform.code.retrieval import lexical_index

    ctx = _start(boltons_index, embedder, "bm25").context_for(QUERY)
    repo_wide = [i.id for i in ctx.items if i.source == REPO_WIDE]
    assert repo_wide == [p for p, _ in lexical_index(boltons_index, CODE_KINDS).top_k(QUERY, 3)]
    assert "boltons/strutils.py/slugify" in repo_wide


def test_dense_route_unchanged(boltons_index, embedder):
    method = _start(boltons_index, embedder, "dense")
    assert method.recaller.code_retriever is None  # the graph's and repository's vectors, as before
    ctx = method.context_for(QUERY)
    vectors = method.recaller.code_vectors
    expected = [p for p, _ in vectors.top_k(embedder.encode_one(QUERY), 3)]
    assert [i.id for i in ctx.items if i.source == REPO_WIDE] == expected
