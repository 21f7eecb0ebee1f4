"""A third benchmark written from the recipe of docs/ARCHITECTURE.md "Add a benchmark" alone: one
class (this file) and one config (``conf/benchmark/quiz.yaml``). Each sample is a question; the
method answers once; the answer passes when it contains the expected word."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

from benchmarks.records import ASSISTANT, USER, RunDir
from benchmarks.task import Benchmark, RunEnv
from reconmem.platform.context import ContextManager, Session


class Quiz(Benchmark):
    family = "locoeval"  # samples of tasks judged pass / fail

    def load(self, cfg: Any) -> list[Any]:
        return [SimpleNamespace(**dict(q)) for q in cfg.benchmark.questions]

    def setup(self, env: RunEnv, samples: Sequence[Any]) -> None:
        from benchmarks.harness import build_llm

        env.shared["llm"] = build_llm(env.cfg.backbone, env.cfg, env.ledger, option="backbone")

    def run_sample(self, sample: Any, method: ContextManager, env: RunEnv) -> dict[str, Any]:
        method.start(Session(sample_id=sample.id, llm=env.shared["llm"], embedder=None, repo=None,
                             system_prompt="Answer in one word.", context_window=4096))
        env.recorder.message(1, USER, sample.question)
        with env.ledger.tags(turn=1, role="assistant"):
            reply = method.respond(sample.question, purpose="task_generation")
        env.recorder.message(1, ASSISTANT, reply.text)
        env.recorder.context(1, reply.context.to_dict())
        passed = sample.answer.lower() in reply.text.lower()
        return {"tasks": [{"req_id": sample.id, "namespace": None, "outcome": "pass" if passed else "fail",
                           "passed": passed}]}

    def error_result(self, sample: Any) -> dict[str, Any]:
        return {"n_tasks": 1, "tasks": [{"req_id": sample.id, "namespace": None, "outcome": "not_run", "passed": False}]}

    def score(self, run_path: Path, sample_ids: Sequence[str]) -> dict[str, Any]:
        tasks = [t for r in RunDir(run_path).selection_results(sample_ids) for t in r.get("tasks") or []]
        return {"pass_at_1": sum(t["passed"] for t in tasks) / len(tasks) if tasks else None}


def reply(messages: Any, purpose: str) -> str:
    """The scripted backbone: answers every question with "Paris"."""
    return "Paris"
