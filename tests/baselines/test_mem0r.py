"""Mem0^R: candidate paths resolved against the real boltons index; recall loads the linked code.

Replies are scripted (ScriptedLLM).
"""

from __future__ import annotations

import json

import pytest

from baselines.mem0r import Mem0R
from reconmem.platform.context import MEMORY, REPO_WIDE, Turn

GET = "boltons/cacheutils.py/LRI/get"
GETITEM = "boltons/cacheutils.py/LRI/__getitem__"
F1 = "LRI.get must return the default value on a cache miss."
F1_MERGED = "LRI.get and LRI.__getitem__ must count soft misses and return the default on a miss."


def test_mem0r_resolves_partial_paths_and_returns_code(make_session, boltons_index):
    def reply(messages, purpose):
        text = messages[-1]["content"]
        if purpose == "memory_extraction" and "turn 0" in text:
            return {"facts": [{"text": F1, "paths": ["LRI/get", "no_such_module/NoSuchThing"]}]}
        if purpose == "memory_extraction":
            return {"facts": [{"text": F1_MERGED, "paths": ["cacheutils.py/LRI/__getitem__"]}]}
        shown = json.loads(text.split("Existing memories:")[1].split("New facts:")[0])
        if not shown:  # turn 0: empty store, the decision call is still made (upstream mem0)
            return {"memory": [{"id": "new", "text": F1, "event": "ADD"}]}
        assert shown == [{"id": "0", "text": F1, "paths": [GET]}]  # masked id, resolved paths
        return {"memory": [{"id": "0", "text": F1_MERGED, "event": "UPDATE", "paths": []}]}

    session = make_session(reply)
    cm = Mem0R(recall_k=10, similar_k=5, repo_k=0)
    cm.start(session)
    cm.observe(Turn(0, "turn 0: LRI.get should fall back to the default.", "Yes, it catches KeyError."))
    (mem,) = cm.memories.values()
    assert mem.paths == [GET]  # "LRI/get" localized; the unknown path dropped
    assert {"candidate": "no_such_module/NoSuchThing", "resolved": None} in cm.resolutions

    cm.observe(Turn(1, "turn 1: and __getitem__ should count soft misses too.", "Agreed."))
    (mem2,) = cm.memories.values()
    assert mem2.id == mem.id and mem2.text == F1_MERGED
    assert mem2.paths == [GET, GETITEM]  # UPDATE merged the path lists

    ctx = cm.context_for("What happens on a cache miss in LRI?")
    code = {i.id: i for i in ctx.items if i.kind == "code"}
    assert list(code) == [GET, GETITEM]
    assert boltons_index.display_source(GET) in code[GET].text
    assert "def get(self, key, default=None)" in ctx.messages[0]["content"]
    assert all(i.source == MEMORY for i in code.values())
    assert code[GET].meta["compression"] == "full" and code[GET].meta["memory_id"] == mem.id
    json.dumps(cm.state())


def test_mem0r_large_artifact_is_summarised(make_session):
    session = make_session([{"facts": [{"text": "The LRI class is the base cache.", "paths": ["cacheutils.py/LRI"]}]},
                            {"memory": [{"id": "new", "text": "The LRI class is the base cache.", "event": "ADD"}]}])
    cm = Mem0R(repo_k=0, max_artifact_chars=500)
    cm.start(session)
    cm.observe(Turn(0, "Tell me about LRI.", "It is a dict subclass."))
    ctx = cm.context_for("LRI cache")
    (item,) = [i for i in ctx.items if i.kind == "code"]
    assert item.id == "boltons/cacheutils.py/LRI" and item.meta["compression"] == "summary"
    assert len(item.text) < len(session.repo.source("boltons/cacheutils.py/LRI"))


@pytest.mark.slow
def test_mem0r_repository_retrieval_is_deduplicated(make_session):
    """Repository retrieval (query = user query + memory texts) skips code already linked by memories."""
    session = make_session([{"facts": [{"text": F1, "paths": ["LRI/get"]}]}, {"memory": [{"id": "new", "text": F1, "event": "ADD"}]}])
    cm = Mem0R(repo_k=5)
    cm.start(session)
    cm.observe(Turn(0, "LRI.get default?", "It returns the default."))
    ctx = cm.context_for("How does LRI.get handle a missing key?")
    code = [i for i in ctx.items if i.kind == "code"]
    assert code[0].id == GET and code[0].source == MEMORY
    repo_wide = [i for i in code if i.source == REPO_WIDE]
    assert len(repo_wide) == 5 and GET not in [i.id for i in repo_wide]
    assert len({i.id for i in code}) == len(code)
