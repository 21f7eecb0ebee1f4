"""Vanilla RAG: the 5 past turns whose queries are most similar, whole, in chronological order."""

from __future__ import annotations

import json

import numpy as np

from baselines.vanilla_rag import VanillaRAG
from reconmem.platform.context import MEMORY, Turn

# 12 turns over real boltons code; the 5 about caching are interleaved with 7 unrelated ones.
QUERIES = [
    ("How does slugify in strutils turn a title into a URL slug?", "boltons/strutils.py/slugify"),
    ("How does the LRU cache in cacheutils evict the least recently used entry?", "boltons/cacheutils.py/LRU/__getitem__"),
    ("What does mkdir_p do when the directory already exists?", "boltons/fileutils.py/mkdir_p"),
    ("Can the LRI cache report its hit and miss counts?", "boltons/cacheutils.py/LRI/get"),
    ("How do I split a list into chunks of size 3 with chunked?", "boltons/iterutils.py/chunked"),
    ("How does the cachedproperty decorator cache a computed attribute?", "boltons/cacheutils.py/cachedproperty"),
    ("How is relative_time formatted for dates in the past?", "boltons/timeutils.py/relative_time"),
    ("How does the cached decorator memoize a function with a cache object?", "boltons/cacheutils.py/cached"),
    ("What does bytes2human print for 1024 bytes?", "boltons/strutils.py/bytes2human"),
    ("How does camel2under convert CamelCase names?", "boltons/strutils.py/camel2under"),
    ("What is the maximum size of a cache before entries are evicted (max_size)?", "boltons/cacheutils.py/LRI/__init__"),
    ("How does windowed produce sliding windows over an iterable?", "boltons/iterutils.py/windowed"),
]
CACHE_TURNS = [1, 3, 5, 7, 10]


def test_vanilla_rag_returns_the_five_most_similar_turns_in_order(make_session, boltons_index, embedder):
    session = make_session()
    cm = VanillaRAG(k=5)
    cm.start(session)
    turns = [Turn(index=i, user=q, assistant=boltons_index.source(p)) for i, (q, p) in enumerate(QUERIES)]
    for t in turns:
        cm.observe(t)
    query = "I want to tune the caching: how does the cache decide which entries to evict?"
    ctx = cm.context_for(query)

    retrieved = [int(i.id) for i in ctx.items if i.kind == "history_turn"]
    assert retrieved == CACHE_TURNS  # the caching turns, chronological
    # independent check of the ranking with plain numpy over the same embeddings
    q = embedder.encode_one(query)
    sims = embedder.encode([t.user for t in turns]) @ q
    assert retrieved == sorted(np.argsort(-sims)[:5].tolist())
    assert all(i.source == MEMORY for i in ctx.items)
    # whole turns, as chat history in chronological order, then the query
    history = ctx.messages[1:-1]
    assert [m["content"] for m in history] == [x for i in CACHE_TURNS for x in (turns[i].user, turns[i].assistant)]
    assert ctx.messages[-1]["content"] == query
    json.dumps(cm.state())


def test_vanilla_rag_with_fewer_turns_than_k(make_session):
    cm = VanillaRAG(k=5)
    cm.start(make_session())
    assert cm.context_for("anything").items == []
    cm.observe(Turn(index=0, user="Use slugify for the URLs.", assistant="OK."))
    ctx = cm.context_for("slugify")
    assert [i.id for i in ctx.items] == ["0"]
