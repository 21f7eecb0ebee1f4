"""A third benchmark written from the recipe of docs/ARCHITECTURE.md "Add a benchmark" alone: one
class (this file) and one config (``conf/benchmark/quiz.yaml``). Each sample is a question; the
method answers once (solve); the answer passes when it contains the expected word (grade)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

from benchmarks.records import ASSISTANT, USER, RunDir
from benchmarks.task import Benchmark, RunEnv
from reconmem.platform.context import ContextManager, Session


@dataclass(frozen=True)
class QuizSettings:
    """The quiz's options (``conf/benchmark/quiz.yaml`` mirrors them)."""

    questions: list[dict[str, str]]  # {id, question, answer}
    system_prompt: str = "Answer in one word."


@dataclass
class QuizShared:
    """What every question shares: the settings and the backbone's client."""

    settings: QuizSettings
    llm: Any


@dataclass
class QuizAnswer:
    """A solved question: the method's reply."""

    text: str


class Quiz(Benchmark[SimpleNamespace, QuizShared, QuizAnswer]):
    family = "locoeval"  # samples of tasks judged pass / fail
    settings_class = QuizSettings

    def load(self, cfg: Any) -> list[SimpleNamespace]:
        return [SimpleNamespace(**q) for q in self.settings_for(cfg).questions]

    def setup(self, env: RunEnv[QuizShared], samples: Sequence[SimpleNamespace]) -> QuizShared:
        return QuizShared(settings=self.settings_for(env.cfg), llm=env.clients.backbone)

    def solve(self, sample: SimpleNamespace, method: ContextManager, env: RunEnv[QuizShared]) -> QuizAnswer:
        assert env.shared is not None
        method.start(Session(sample_id=sample.id, llm=env.shared.llm, embedder=None, repo=None,
                             system_prompt=env.shared.settings.system_prompt, context_window=4096))
        env.recorder.message(1, USER, sample.question)
        with env.ledger.tags(turn=1, role="assistant"):
            reply = method.respond(sample.question, purpose="task_generation")
        env.recorder.message(1, ASSISTANT, reply.text)
        env.recorder.context(1, reply.context.to_dict())
        return QuizAnswer(reply.text)

    def grade(self, sample: SimpleNamespace, solved: QuizAnswer, env: RunEnv[QuizShared]) -> dict[str, Any]:
        passed = sample.answer.lower() in solved.text.lower()
        return {"subset": "quiz", "tasks": [{"req_id": sample.id, "namespace": None, "outcome": "pass" if passed else "fail",
                           "passed": passed}]}

    def error_result(self, sample: SimpleNamespace) -> dict[str, Any]:
        return {"subset": "quiz", "n_tasks": 1,
                "tasks": [{"req_id": sample.id, "namespace": None, "outcome": "not_run", "passed": False}]}

    def score(self, run_path: Path, sample_ids: Sequence[str]) -> dict[str, Any]:
        tasks = [t for r in RunDir(run_path).selection_results(sample_ids) for t in r.get("tasks") or []]
        return {"pass_at_1": sum(t["passed"] for t in tasks) / len(tasks) if tasks else None}


def reply(messages: Any, purpose: str) -> str:
    """The scripted backbone: answers every question with "Paris"."""
    return "Paris"
