"""A toy benchmark for run-loop tests (no model, no repository): each sample records scripted
ledger events (fixed tokens and dollars), may mark replies as malformed JSON, fail, or stop on the
cost limit exactly as the LLM client does (CostLimitReached before a paid call)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.records import RunDir
from benchmarks.task import Benchmark
from reconmem.platform.llm import CostLimitReached, Usage

CALLS: list[str] = []
_LOCK = threading.Lock()


def reply(messages: Any, purpose: str) -> str:
    """The scripted backbone hook named in the toy config (the toy benchmark never calls it)."""
    return "ok"


@dataclass
class ToyShared:
    """What the toy's setup builds once per run (a marker that it ran)."""

    built: bool = True


@dataclass
class ToySolved:
    """The toy's solved state: the status its grade will report."""

    status: str


class ToyBenchmark(Benchmark[Any, ToyShared, ToySolved]):
    family = "locoeval"
    statuses = frozenset({"excluded"})

    def load(self, cfg: Any) -> list[Any]:
        from types import SimpleNamespace

        items = cfg.benchmark.get("items")
        if items is None:
            raise ValueError(f"{cfg.benchmark.get('data', 'toy.jsonl')}:3: invalid JSON (toy)")
        return [SimpleNamespace(**dict(i)) for i in items]

    def setup(self, env: Any, samples: Any) -> ToyShared:
        if env.cfg.benchmark.get("explode_on_setup"):
            raise AssertionError("setup must not run")
        return ToyShared()

    def solve(self, sample: Any, method: Any, env: Any) -> ToySolved:
        assert isinstance(env.shared, ToyShared)  # the loop hands back what setup returned
        with _LOCK:
            CALLS.append(sample.id)
        bad_json = int(getattr(sample, "bad_json", 0))
        for turn in range(int(getattr(sample, "calls", 2))):
            if env.ledger.limit_reached():  # the client's rule: no paid call once the limit is reached
                raise CostLimitReached("toy: limit reached")
            with env.ledger.tags(turn=turn, role="assistant"):
                event = env.ledger.record("turn_generation", Usage(10, 5), cached=False, model="toy/model", seconds=0.01,
                                          cost_usd=float(getattr(sample, "cost", 0.1)), custom_field=sample.id)
            if turn < bad_json:  # as the client's chat_json marks a reply without usable JSON
                event["json_ok"] = False
            time.sleep(0.01)
        env.recorder.message(0, "user", f"toy {sample.id}")
        if getattr(sample, "fail", False):
            raise RuntimeError(f"toy failure in {sample.id}")
        return ToySolved(status=getattr(sample, "status", "ok"))

    def grade(self, sample: Any, solved: ToySolved, env: Any) -> dict[str, Any]:
        return {"status": solved.status, "n_tasks": 1, "tasks": [{"req_id": sample.id, "passed": True, "outcome": "pass"}]}

    def error_result(self, sample: Any) -> dict[str, Any]:
        return {"n_tasks": 1, "tasks": [{"req_id": sample.id, "passed": False, "outcome": "not_run"}]}

    def score(self, run_path: Path, sample_ids: Any) -> dict[str, Any]:
        rs = RunDir(run_path).results(sample_ids)
        tasks = [t for r in rs for t in r["tasks"]]
        return {"pass_at_1": sum(t["passed"] for t in tasks) / len(sample_ids) if sample_ids else None}
