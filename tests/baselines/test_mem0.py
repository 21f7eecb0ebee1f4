"""Mem0: extraction -> masked-id decision -> ADD / UPDATE (id kept) / DELETE, with a history log.

Replies are scripted (ScriptedLLM); the decision script reads the masked ids from the real prompt.
"""

from __future__ import annotations

import json
import re

from baselines.mem0 import Mem0
from reconmem.platform.context import MEMORY, Turn

A = "The LRI cache in boltons/cacheutils.py must keep at most 128 entries."
A2 = "The LRI cache in boltons/cacheutils.py must keep at most 128 entries and count hits and misses."
B = "The user wants slugify in strutils to use '-' as the delimiter."
B_NEW = "The user now wants slugify in strutils to use '_' as the delimiter, not '-'."
C = "Tests for chunked in iterutils go into tests/test_iterutils.py."


def _shown_memories(prompt: str) -> dict[str, str]:
    """masked id -> text of the existing memories shown in the update prompt."""
    block = prompt.split("Existing memories:")[1].split("New facts:")[0]
    return {m["id"]: m["text"] for m in json.loads(block)}


def script(extractions: list[list[str]], decide):
    state = {"turn": 0}
    prompts_seen: list[str] = []

    def reply(messages, purpose):
        if purpose == "memory_extraction":
            facts = extractions[state["turn"]]
            state["turn"] += 1
            return {"facts": facts}
        assert purpose == "memory_update"
        prompt = messages[-1]["content"]
        prompts_seen.append(prompt)
        return {"memory": decide(_shown_memories(prompt))}

    return reply, prompts_seen


def _id_of(shown: dict[str, str], text: str) -> str:
    return next(k for k, v in shown.items() if v == text)


def test_mem0_update_keeps_id_and_delete_removes_contradicted(make_session):
    def decide(shown):
        if not shown:  # turn 1: empty store; the decision call is still made (upstream mem0)
            return [{"id": "new", "text": A, "event": "ADD"}, {"id": "new", "text": B, "event": "ADD"}]
        if A in shown.values():  # turn 2: A gets richer, B unchanged, C new
            return [{"id": _id_of(shown, A), "text": A2, "event": "UPDATE"},
                    {"id": _id_of(shown, B), "text": B, "event": "NONE"},
                    {"id": "new", "text": C, "event": "ADD"}]
        # turn 3: the delimiter decision is contradicted
        return [{"id": _id_of(shown, B), "text": B, "event": "DELETE"},
                {"id": "new", "text": B_NEW, "event": "ADD"}]

    reply, prompts_seen = script([[A, B], [A2, C], [B_NEW]], decide)
    session = make_session(reply)
    cm = Mem0(recall_k=10, similar_k=5)
    cm.start(session)

    cm.observe(Turn(0, "Set up an LRI cache of 128 entries and slugify with '-'.", "Done."))
    assert [m.text for m in cm.memories.values()] == [A, B]  # empty store: ADDed by the decision call
    assert _shown_memories(prompts_seen[0]) == {}
    id_a = next(m.id for m in cm.memories.values() if m.text == A)
    id_b = next(m.id for m in cm.memories.values() if m.text == B)

    cm.observe(Turn(1, "Also count hits and misses; put chunked tests in test_iterutils.", "Sure."))
    assert cm.memories[id_a].text == A2  # UPDATE kept the id
    assert cm.memories[id_a].updated_turn == 1 and cm.memories[id_a].created_turn == 0
    assert cm.memories[id_b].text == B
    assert C in [m.text for m in cm.memories.values()]
    # ids were masked as "0", "1", ...: the real ids never reach the model
    assert set(_shown_memories(prompts_seen[1])) == {"0", "1"}
    assert id_a not in prompts_seen[1] and id_b not in prompts_seen[1]

    cm.observe(Turn(2, "Actually use '_' in slugify instead of '-'.", "Changed."))
    assert id_b not in cm.memories  # the contradicted memory is gone
    assert B_NEW in [m.text for m in cm.memories.values()]

    events = [(h["memory_id"], h["event"]) for h in cm.history]
    assert (id_a, "UPDATE") in events and (id_b, "DELETE") in events
    update = next(h for h in cm.history if h["event"] == "UPDATE")
    assert update["old"] == A and update["new"] == A2
    assert [f["facts"] for f in cm.facts_per_turn] == [2, 2, 1]

    ledger = session.llm.ledger.totals()
    assert ledger["memory_extraction"]["calls"] == 3 and ledger["memory_update"]["calls"] == 3

    ctx = cm.context_for("Which delimiter does slugify use?")
    assert all(i.source == MEMORY and i.kind == "memory" for i in ctx.items)
    assert ctx.items[0].text == B_NEW
    assert B_NEW in ctx.messages[0]["content"]
    json.dumps(cm.state())


def test_mem0_ignores_invented_ids_and_bad_json(make_session):
    replies = [
        {"facts": [A]},
        {"memory": [{"id": "new", "text": A, "event": "ADD"}]},
        {"facts": [A2]},
        {"memory": [{"id": "7", "text": "x", "event": "UPDATE"}, {"id": "m0", "text": "y", "event": "DELETE"}]},
        {"facts": [C]},
        "this is not json at all",
    ]
    session = make_session(replies)
    cm = Mem0()
    cm.start(session)
    for i in range(3):
        cm.observe(Turn(i, f"turn {i}", "ok"))
    assert [m.text for m in cm.memories.values()] == [A]
    assert [r["reason"] for r in cm.rejected] == ["unknown id", "unknown id", "update output was not valid JSON"]
    assert session.llm.json_failures["memory_update"] == 1
    assert re.fullmatch(r"m\d+", next(iter(cm.memories)))
