"""Full history: whole history until the window, then exactly the oldest turns are dropped."""

from __future__ import annotations

import json

from baselines.full import FullHistory
from reconmem.platform.context import RECENT

PATHS = ["boltons/strutils.py/slugify", "boltons/strutils.py/camel2under", "boltons/iterutils.py/chunked",
         "boltons/iterutils.py/windowed", "boltons/fileutils.py/mkdir_p", "boltons/cacheutils.py/LRI/get",
         "boltons/timeutils.py/relative_time", "boltons/strutils.py/bytes2human"]


def _observe_all(cm, turns):
    for t in turns:
        cm.observe(t)


def test_full_keeps_everything_when_it_fits(make_session, code_turns):
    session = make_session()
    cm = FullHistory()
    cm.start(session)
    turns = code_turns(PATHS)
    _observe_all(cm, turns)
    ctx = cm.context_for("Now write tests for slugify.")
    assert ctx.meta["truncated_turns"] == 0
    assert [i.id for i in ctx.items] == [str(t.index) for t in turns]
    assert all(i.source == RECENT for i in ctx.items)
    # system, then user/assistant per turn in order, then the query
    assert len(ctx.messages) == 1 + 2 * len(turns) + 1
    assert ctx.messages[1]["content"] == turns[0].user and ctx.messages[2]["content"] == turns[0].assistant
    assert ctx.messages[-1] == {"role": "user", "content": "Now write tests for slugify."}
    json.dumps(cm.state())


def test_full_truncates_exactly_the_oldest_turns_at_the_window(make_session, code_turns):
    turns = code_turns(PATHS)
    query = "Combine chunked and windowed into one helper."
    probe = make_session()
    sizes = [probe.llm.count_tokens([{"role": "user", "content": t.user}, {"role": "assistant", "content": t.assistant}])
             for t in turns]
    # a window that holds roughly the newest half of the history (+ system, query and the answer reserve)
    window = sum(sizes[len(sizes) // 2:]) + 200 + 300
    session = make_session(context_window=window, max_output_tokens=300)
    cm = FullHistory()
    cm.start(session)
    _observe_all(cm, turns)
    ctx = cm.context_for(query)
    budget = window - 300
    dropped = ctx.meta["truncated_turns"]
    assert 0 < dropped < len(turns)
    kept_ids = [i.id for i in ctx.items]
    assert kept_ids == [str(t.index) for t in turns[dropped:]]  # a suffix: only the oldest were dropped
    count = session.llm.count_tokens
    assert count(ctx.messages) <= budget
    # dropping one turn fewer would not fit: the truncation is minimal
    from baselines.common import turn_messages
    from reconmem.platform.context import build_messages

    one_more = build_messages(session.system_prompt, [], [m for t in turns[dropped - 1:] for m in turn_messages(t)], query)
    assert count(one_more) > budget
    # and it never touches the query or system prompt
    assert ctx.messages[0]["role"] == "system" and ctx.messages[-1]["content"] == query
    # the shared guard's record of it
    assert ctx.meta["trimmed_history"] == dropped and ctx.meta["tokens_after"] <= budget < ctx.meta["tokens_before"]


def test_full_answer_reserve_override(make_session, code_turns):
    turns = code_turns(PATHS)
    probe = make_session()
    probe_cm = FullHistory()
    probe_cm.start(probe)
    _observe_all(probe_cm, turns)
    total = probe.llm.count_tokens(probe_cm.context_for("q").messages)
    session = make_session(context_window=total + 200, max_output_tokens=100)
    loose, tight = FullHistory(), FullHistory(answer_reserve=total // 2)
    for cm in (loose, tight):
        cm.start(session)
        _observe_all(cm, turns)
    assert loose.context_for("q").meta["truncated_turns"] == 0
    assert tight.context_for("q").meta["truncated_turns"] > 0
