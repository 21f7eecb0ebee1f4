"""LD-Agent: a topic boundary closes the session into an event with noun-lemma topics; retrieval by
topic overlap × time decay; per-turn persona. Replies are scripted (ScriptedLLM)."""

from __future__ import annotations

import json
import math

from baselines.ld_agent import LDAgent, topic_overlap
from baselines.nouns import noun_lemmas
from reconmem.platform.context import MEMORY, RECENT, Turn

CACHE_SUMMARY = ("The user and the assistant reviewed the LRI cache in cacheutils: the eviction of the oldest "
                 "entries, the hit counters and the maximum size of the cache.")
SLUG_SUMMARY = "The user asked for URL slugs; the assistant explained the delimiter of slugify in strutils."


def _script(summaries):
    def reply(messages, purpose):
        if purpose == "persona":
            return {"user_traits": ["prefers type hints"], "agent_traits": ["answers with code"]}
        assert purpose == "memory_summarisation"
        return summaries.pop(0)
    return reply


def test_ld_agent_closes_session_stores_topics_and_retrieves_by_overlap(make_session, boltons_index):
    session = make_session(_script([CACHE_SUMMARY, SLUG_SUMMARY]))
    cm = LDAgent(short_term_turns=30, retrieve_k=1, decay_rate=0.01)
    cm.start(session)
    src = boltons_index.source
    cm.observe(Turn(0, "How does LRI evict entries?", src("boltons/cacheutils.py/LRI/_remove_from_ll"), {"topic": "cache"}))
    cm.observe(Turn(1, "And the hit counters?", src("boltons/cacheutils.py/LRI/get"), {"topic": "cache"}))
    assert cm.events == []  # same topic: still one session
    cm.observe(Turn(2, "Now, how do I make URL slugs?", src("boltons/strutils.py/slugify"), {"topic": "strings"}))
    (event,) = cm.events  # the topic change closed the cache session
    assert event.summary == CACHE_SUMMARY and (event.first_turn, event.last_turn) == (0, 1)
    assert event.topics == noun_lemmas(CACHE_SUMMARY)
    assert {"cache", "eviction", "entry", "counter", "size", "lri", "cacheutils"} <= set(event.topics)
    assert len(event.embedding) == 384
    assert [t.index for t in cm.current] == [2]

    cm.observe(Turn(3, "Different subject.", "OK.", {"session_boundary": True}))  # explicit boundary
    assert [e.summary for e in cm.events] == [CACHE_SUMMARY, SLUG_SUMMARY]

    query = "What was the maximum size of the cache and how does eviction work?"
    (best, score), = cm.retrieve(query)
    assert best.summary == CACHE_SUMMARY
    q = set(noun_lemmas(query))
    shared = q & set(event.topics)
    expected = (0.5 * len(shared) / len(q) + 0.5 * len(shared) / len(event.topics)) * math.exp(-0.01 * (3 - 1))
    assert score == expected
    assert topic_overlap(q, set(cm.events[1].topics)) < topic_overlap(q, set(event.topics))

    ctx = cm.context_for(query)
    kinds = [(i.kind, i.source) for i in ctx.items]
    assert ("summary", MEMORY) in kinds and ("persona", MEMORY) in kinds and ("history_turn", RECENT) in kinds
    system = ctx.messages[0]["content"]
    assert CACHE_SUMMARY in system and SLUG_SUMMARY not in system and "prefers type hints" in system
    assert ctx.messages[1]["content"] == "Different subject."  # short-term memory: the current session
    assert session.llm.ledger.totals()["persona"]["calls"] == 4
    assert session.llm.ledger.totals()["memory_summarisation"]["calls"] == 2
    json.dumps(cm.state())


def test_ld_agent_time_decay_prefers_recent_events(make_session):
    same = "The cache eviction of the LRU cache was discussed."
    session = make_session(_script([same, same]))
    cm = LDAgent(short_term_turns=2, retrieve_k=2, decay_rate=0.1)
    cm.start(session)
    for i in range(4):  # sessions close at the 2-turn window: events after turns 1 and 3
        cm.observe(Turn(i, f"cache question {i}", "answer"))
    assert [(e.first_turn, e.last_turn) for e in cm.events] == [(0, 1), (2, 3)]
    ranked = cm.retrieve("How does cache eviction work?")
    assert [e.last_turn for e, _ in ranked] == [3, 1]
    assert math.isclose(ranked[1][1] / ranked[0][1], math.exp(-0.1 * 2))


def test_noun_lemmas_heuristic():
    nouns = noun_lemmas("Implement an LRU cache in boltons.cacheutils that evicts the oldest entries when maxsize is reached.")
    assert nouns == ["lru", "cache", "boltons.cacheutils", "entry", "maxsize"]
    assert "cover" not in noun_lemmas("We cover the tests.") and "test" in noun_lemmas("We cover the tests.")
