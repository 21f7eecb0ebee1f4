"""LD-Agent: every session_turns turns the session closes into an event with noun-lemma topics of its raw text; retrieval by
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


def test_ld_agent_sessions_close_by_turn_count_topics_from_raw_session(make_session, boltons_index):
    """No labels: sessions close every ``session_turns`` turns; topics are the raw session's nouns."""
    session = make_session(_script([CACHE_SUMMARY, SLUG_SUMMARY]))
    cm = LDAgent(short_term_turns=30, session_turns=2, decay_rate=0.01)
    cm.start(session)
    src = boltons_index.source
    t0 = Turn(0, "How does LRI evict entries?", src("boltons/cacheutils.py/LRI/_remove_from_ll"))
    t1 = Turn(1, "And the hit counters and the maximum size of the cache?", src("boltons/cacheutils.py/LRI/get"))
    cm.observe(t0)
    assert cm.events == []  # one turn: the session is still open
    cm.observe(t1)
    (event,) = cm.events  # two turns = session_turns: the session closed
    assert event.summary == CACHE_SUMMARY and (event.first_turn, event.last_turn) == (0, 1)
    raw = f"{t0.user}\n{t0.assistant}\n{t1.user}\n{t1.assistant}"
    assert event.topics == noun_lemmas(raw)  # from the session's own words, not the LLM summary
    assert event.topics != noun_lemmas(CACHE_SUMMARY)
    assert {"lri", "entry", "counter", "size", "cache"} <= set(event.topics)
    assert len(event.embedding) == 384
    assert cm.current == []

    cm.observe(Turn(2, "Now, how do I make URL slugs with slugify?", src("boltons/strutils.py/slugify")))
    cm.observe(Turn(3, "Which delimiter does slugify use?", "A dash by default."))
    assert [e.summary for e in cm.events] == [CACHE_SUMMARY, SLUG_SUMMARY]
    cm.observe(Turn(4, "Different subject.", "OK."))

    query = "What was the maximum size of the cache and how does eviction work?"
    (best, score), = cm.retrieve(query)  # the single best event
    assert best.summary == CACHE_SUMMARY
    q = set(noun_lemmas(query))
    shared = q & set(event.topics)
    expected = (0.5 * len(shared) / len(q) + 0.5 * len(shared) / len(event.topics)) * math.exp(-0.01 * (4 - 1))
    assert score == expected
    assert cm.retrieve("zebra giraffe") == []  # no shared topic: no event at all

    ctx = cm.context_for(query)
    kinds = [(i.kind, i.source) for i in ctx.items]
    assert ("summary", MEMORY) in kinds and ("persona", MEMORY) in kinds and ("history_turn", RECENT) in kinds
    system = ctx.messages[0]["content"]
    assert CACHE_SUMMARY in system and SLUG_SUMMARY not in system and "prefers type hints" in system
    assert ctx.messages[1]["content"] == "Different subject."  # short-term memory: the current session
    assert ctx.meta["trimmed_items"] == [] and ctx.meta["tokens_after"] == ctx.meta["tokens_before"]
    assert session.llm.ledger.totals()["persona"]["calls"] == 5
    assert session.llm.ledger.totals()["memory_summarisation"]["calls"] == 2
    json.dumps(cm.state())


def test_ld_agent_ignores_turn_meta_and_rejects_boundary_keys(make_session):
    import pytest

    session = make_session(_script([CACHE_SUMMARY]))
    cm = LDAgent(session_turns=3)
    cm.start(session)
    cm.observe(Turn(0, "cache?", "yes", {"topic": "a"}))
    cm.observe(Turn(1, "cache again?", "yes", {"topic": "b", "session_boundary": True}))
    assert cm.events == []  # labels (if any reached it) are ignored
    with pytest.raises(ValueError, match="boundary_keys was removed"):
        LDAgent(boundary_keys=["topic"])


def test_ld_agent_time_decay_prefers_recent_events(make_session):
    same = "The cache eviction of the LRU cache was discussed."
    session = make_session(_script([same, same]))
    cm = LDAgent(short_term_turns=2, session_turns=2, retrieve_k=2, decay_rate=0.1)
    cm.start(session)
    for i in range(4):  # sessions close at the 2-turn window: events after turns 1 and 3
        cm.observe(Turn(i, f"A question about the cache eviction, part {i}.", "The answer."))
    assert [(e.first_turn, e.last_turn) for e in cm.events] == [(0, 1), (2, 3)]
    ranked = cm.retrieve("How does cache eviction work?")
    assert [e.last_turn for e, _ in ranked] == [3, 1]
    assert math.isclose(ranked[1][1] / ranked[0][1], math.exp(-0.1 * 2))


def test_noun_lemmas_heuristic():
    nouns = noun_lemmas("Implement an LRU cache in boltons.cacheutils that evicts the oldest entries when maxsize is reached.")
    assert nouns == ["lru", "cache", "boltons.cacheutils", "entry", "maxsize"]
    assert "cover" not in noun_lemmas("We cover the tests.") and "test" in noun_lemmas("We cover the tests.")
