"""Runner: preparation dialogue, read-only tasks, records, ledger tags, budgets (SCRIPTED backbone)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baselines.full import FullHistory
from benchmarks.locoeval.mock_user import MockUser
from benchmarks.locoeval.runner import (LoCoEval, LoCoEvalSettings, LoCoEvalShared, backbone_defaults, sample_index,
                                        task_query)
from benchmarks.records import RunDir
from benchmarks.runloop import run_one
from benchmarks.task import RunEnv
from benchmarks.locoeval.schema import parse_sample
from conftest import tiny_sample
from reconmem.platform.context import Context, ContextManager, Turn, build_messages
from reconmem.platform.testing import ScriptedLLM
from scripted_backbone import GOOD_ADD, fake_evaluate


def _evaluate(sample, req, text):
    return fake_evaluate(req.namespace, text, repo_spec=sample.repo_spec, executor=None)


def _run(sample, cm, llm, run_path, index=None, **settings):
    """One sample through the run loop's ``run_one`` (LoCoEval.solve then grade) with scripted clients."""
    options = LoCoEvalSettings(samples="(tests)", **settings)
    shared = LoCoEvalShared(settings=options, llm=llm.with_defaults(backbone_defaults(options)), embedder=None,
                            evaluate=_evaluate, indexes=lambda s: index)
    env = RunEnv(cfg=None, ledger=llm.ledger, run_path=run_path, progress=False, shared=shared)
    result = run_one(LoCoEval(), sample, env, RunDir(run_path), method=cm)
    return result, RunDir(run_path).sample_dir(sample.id)


def _replies(messages, purpose):
    return GOOD_ADD if purpose == "task_generation" else f"ack ({purpose})"


class CountingMemory(ContextManager):
    """A toy method with a visible memory: the list of observed user queries."""

    name = "counting"

    def __init__(self, leak_on_read_only: bool = False) -> None:
        super().__init__()
        self.memory: list[str] = []
        self.leak = leak_on_read_only

    def context_for(self, query, *, read_only=False):
        if read_only and self.leak:
            self.memory.append("leaked: " + query[:20])  # a bug: memory mutated during a task
        s = self._session()
        return Context(query=query, messages=build_messages(s.system_prompt, ["\n".join(self.memory)], [], query))

    def observe(self, turn: Turn) -> None:
        self.memory.append(turn.user)

    def state(self):
        return {"memory": list(self.memory)}


def _read(p: Path):
    return [json.loads(line) for line in p.read_text().splitlines()]


def test_full_history_run_records(tiny_repo, tmp_path):
    sample = parse_sample(tiny_sample(tiny_repo, n_turns=5))
    llm = ScriptedLLM(_replies)
    index = sample_index(sample, tmp_path / "cache")
    assert "raise NotImplementedError" in index.source("tinypkg/ops.py/add") and "return a + b" not in index.source("tinypkg/ops.py/add")
    result, out = _run(sample, FullHistory(), llm, tmp_path / "run", index, turn_max_tokens=77, task_max_tokens=99)
    assert result["status"] == "ok" and result["n_turns"] == 5 and result["n_tasks"] == 1
    assert result["tasks"] == [{"req_id": "R1", "namespace": "tinypkg.ops.add", "outcome": "pass", "passed": True}]
    assert set(result["seconds"]) == {"solve", "grade"} and result["wall_seconds"] >= result["seconds"]["solve"]
    conv = _read(out / "conversation.jsonl")  # one row per message: the user's, then the assistant's
    assert [(r["turn"], r["phase"]) for r in conv][::2] == [(1, "prep"), (2, "prep"), (3, "prep"), (4, "prep"), (5, "prep"), (6, "task")]
    assert [r["role"] for r in conv] == ["user", "assistant"] * 6
    assert conv[2]["content"] == "add should return a - b." and conv[2]["kind"] == "distractor" and conv[2]["req_id"] == "R1"
    task_user = conv[-2]["content"]
    assert "def add(a, b):" in task_user and "tinypkg/ops.py" in task_user and task_user.startswith("Please write add now.")
    ctx = _read(out / "contexts.jsonl")
    assert len(ctx) == 6 and ctx[-1]["phase"] == "task" and ctx[-1]["req_id"] == "R1"
    # Full history: the task prompt holds all five preparation turns
    assert len([m for m in ctx[-1]["context"]["messages"] if m["role"] == "user"]) == 6
    tests = json.loads((out / "tests.json").read_text())
    assert tests[0]["outcome"] == "pass" and tests[0]["completion"] and "log" in tests[0]
    ledger = _read(out / "ledger.jsonl")  # the attempt's events, written by the loop
    assert ledger == llm.ledger.events and len(ledger) == 6 and {e["sample"] for e in ledger} == {"tiny-1"}
    assert {e["attempt"] for e in ledger} == {result["attempt"]}
    assert [(e["turn"], e["phase"], e["role"], e["purpose"]) for e in ledger][-1] == (6, "task", "assistant", "task_generation")
    assert set(ledger[0]) >= {"purpose", "input_tokens", "output_tokens", "cached", "model", "seconds", "sample", "turn", "phase", "role"}
    # per-purpose budgets reach the backbone through the session's LLM proxy
    assert [c["params"]["max_tokens"] for c in llm.calls] == [77] * 5 + [99]
    assert json.loads((out / "memory.json").read_text())["turns"]  # the loop writes the method's state


def test_memory_is_read_only_during_tasks(tiny_repo, tmp_path):
    sample = parse_sample(tiny_sample(tiny_repo, n_turns=4))
    cm = CountingMemory()
    result, _ = _run(sample, cm, ScriptedLLM(_replies), tmp_path / "ok")
    assert result["status"] == "ok"
    assert cm.state() == {"memory": [st.text for st in sample.outline]}  # unchanged by the task

    result, out = _run(sample, CountingMemory(leak_on_read_only=True), ScriptedLLM(_replies), tmp_path / "bad")
    assert result["status"] == "error" and "changed its memory while answering read-only task R1" in result["error"]
    assert "ReadOnlyViolation" in (out / "error.txt").read_text()
    assert [t["outcome"] for t in result["tasks"]] == ["not_run"]  # never graded
    # the partial records are there (written incrementally)
    assert len(_read(out / "conversation.jsonl")) == 8  # four turns, two messages each
    assert not (out / "tests.json").exists()


def test_mock_user_scripted_and_generated(tiny_repo):
    obj = tiny_sample(tiny_repo, n_turns=4)
    del obj["outline"][3]["text"]
    sample = parse_sample(obj)
    llm = ScriptedLLM(lambda m, p: '"Quick unrelated question: how do I rebase?"')
    user = MockUser(llm, max_tokens=50)
    assert user.query_for(sample, sample.outline[0], None) == "I need add(a, b) in tinypkg/ops.py." and not llm.calls
    q = user.query_for(sample, sample.outline[3], "previous answer")
    assert q == "Quick unrelated question: how do I rebase?"
    assert llm.calls[0]["purpose"] == "mock_user" and llm.calls[0]["params"]["max_tokens"] == 50
    assert "previous answer" in llm.calls[0]["messages"][-1]["content"]
    # conveying steps hand the item texts to the mock user verbatim
    msgs = user.messages_for(sample, sample.outline[1], "x")
    assert "add returns a - b." in msgs[-1]["content"] and "verbatim" in msgs[-1]["content"]
    with pytest.raises(RuntimeError, match="no user backbone"):
        MockUser(None).query_for(sample, sample.outline[3], None)


def test_empty_mock_user_reply_never_hands_the_brief_to_the_method(tiny_repo):
    """Scripted empty replies: a conveying step falls back to its facts, any other step errors."""
    obj = tiny_sample(tiny_repo)
    for step in obj["outline"]:
        step.pop("text", None)
    sample = parse_sample(obj)
    user = MockUser(ScriptedLLM(lambda m, p: '""'), max_tokens=50)
    conveying = next(s for s in sample.outline if s.item_ids and s.kind in ("info", "distractor", "revision"))
    q = user.query_for(sample, conveying, "x")
    assert q and conveying.brief not in q and q == "\n".join(user.facts_for(sample, conveying))
    assert user.empty_fallbacks == 1
    other = next(s for s in sample.outline if not s.item_ids)
    with pytest.raises(RuntimeError, match="empty query"):
        user.query_for(sample, other, "x")


def test_task_query_states_signature_and_file(tiny_repo):
    obj = tiny_sample(tiny_repo)
    obj["requirements"][0]["completion_path"] = "Tiny/tinyrepo/tinypkg/ops.py"  # DevEval-style path
    obj["requirements"][0]["signature"] = "    def add(self, a, b):"
    sample = parse_sample(obj)
    q = task_query(sample, sample.requirements[0], "Write it.")
    assert "`tinypkg/ops.py`" in q and "\ndef add(self, a, b):\n" in q and "`add`" in q


def test_budgets_apply_to_chat_and_chat_json():
    """The benchmark's per-purpose max_tokens reach plain and JSON calls; an explicit value wins."""
    from benchmarks.locoeval.runner import backbone_defaults

    llm = ScriptedLLM(["hi", {"ok": 1}, {"ok": 2}, "free"])
    options = LoCoEvalSettings(samples="(tests)", turn_max_tokens=48, purpose_max_tokens={"memory_sketching": 128,
                                                                                            "memory_update": None})
    budgeted = llm.with_defaults(backbone_defaults(options))
    budgeted.chat([{"role": "user", "content": "q"}], purpose="turn_generation")
    assert budgeted.chat_json([{"role": "user", "content": "q"}], purpose="memory_sketching") == {"ok": 1}
    budgeted.chat_json([{"role": "user", "content": "q"}], purpose="memory_sketching", max_tokens=7)
    budgeted.chat([{"role": "user", "content": "q"}], purpose="memory_update")
    sent = [c["params"].get("max_tokens") for c in llm.calls]
    assert sent[:3] == [48, 128, 7]
    assert sent[3] != 128  # no budget configured for memory_update -> the client's own default
