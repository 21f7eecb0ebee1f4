"""The bracket methods on the real boltons index with SCRIPTED backbone replies (not a model's):
no_memory keeps nothing, oracle_context adds exactly what the privileged channel hands it."""

from __future__ import annotations

import json

import pytest

from baselines.brackets import STATEMENT, NoMemory, OracleContext
from reconmem.platform.brackets import PrivilegedInputError, Statement, TaskOracle
from reconmem.platform.context import Turn

ORACLE = TaskOracle((Statement(2, "I need clamp(x, lower, upper) in boltons/mathutils.py."),
                     Statement(7, "Correction: if upper < lower, clamp raises ValueError.")))
QUERY = "Please write clamp now, exactly as we agreed."


def _prompt(ctx) -> str:
    return "\n".join(str(m["content"]) for m in ctx.messages)


def test_no_memory_sees_only_the_query_and_the_repository(make_session):
    cm = NoMemory(repo_context_k=2)
    cm.start(make_session())
    before = json.dumps(cm.state())
    cm.observe(Turn(1, "Earlier question about slugify?", "Earlier answer."))
    ctx = cm.context_for(QUERY)
    assert [m["role"] for m in ctx.messages] == ["system", "user"] and ctx.messages[-1]["content"] == QUERY
    assert "Earlier question" not in _prompt(ctx) and "Earlier answer" not in _prompt(ctx)
    assert [i.kind for i in ctx.items] == ["code", "code"]  # the baselines' repository adaptation, k=2
    assert json.dumps(cm.state()) == before == json.dumps({"method": "no_memory"})
    assert NoMemory.reads_history is False and not NoMemory.accepts
    with pytest.raises(PrivilegedInputError):
        with cm.task_oracle(ORACLE):
            pass


def test_oracle_context_adds_the_statements_only_inside_the_channel(make_session):
    session = make_session()
    floor, ceiling = NoMemory(repo_context_k=2), OracleContext(repo_context_k=2)
    floor.start(session)
    ceiling.start(session)
    assert ceiling.context_for(QUERY).messages == floor.context_for(QUERY).messages  # no oracle: the floor
    state = json.dumps(ceiling.state())
    with ceiling.task_oracle(ORACLE):
        ctx = ceiling.context_for(QUERY, read_only=True)
    assert ceiling.oracle is None and json.dumps(ceiling.state()) == state  # never part of the memory state
    prompt = _prompt(ctx)
    for s in ORACLE.statements:
        assert s.text in prompt
    assert [i.id for i in ctx.items if i.kind == STATEMENT] == ["turn-2", "turn-7"]
    assert ctx.meta["oracle_turns"] == [2, 7]
    code = [i.id for i in ctx.items if i.kind == "code"]
    assert code == [i.id for i in floor.context_for(QUERY).items]  # the same repository context as the floor


def test_the_window_guard_drops_code_before_statements(make_session):
    probe = make_session()
    cm = OracleContext(repo_context_k=5)
    cm.start(probe)
    with cm.task_oracle(ORACLE):
        full = cm.context_for(QUERY)
    small = full.meta["tokens_before"] // 2
    cm = OracleContext(repo_context_k=5)
    cm.start(make_session(context_window=small + 64, max_output_tokens=64))
    with cm.task_oracle(ORACLE):
        ctx = cm.context_for(QUERY)
    assert ctx.meta["trimmed_items"] and all(not t.startswith("turn-") for t in ctx.meta["trimmed_items"])
    assert {i.id for i in ctx.items if i.kind == STATEMENT} == {"turn-2", "turn-7"}
