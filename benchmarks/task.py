"""The benchmark interface: what a benchmark supplies to the one run loop (:mod:`benchmarks.runloop`).

In the spirit of inspect_ai's ``Task`` and lm-eval-harness's task registry, a benchmark is a class
named from its config by ``_target_`` (``conf/benchmark/<name>.yaml``) that supplies

* :meth:`Benchmark.load` — the samples (each with an id, :meth:`Benchmark.sample_id`);
* :meth:`Benchmark.run_sample` — one sample end to end with a fresh method, writing its own records
  (conversation, contexts, ...) into ``env.out_dir`` and returning the ``result.json`` payload;
* :meth:`Benchmark.score` — the run's metrics over the finished records of the selected samples.

Everything else — id/limit selection, sharding, resume/retry, workers, progress, error records,
ledger slicing, cost and JSON-failure accounting, manifest and summary — is the run loop's.
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from reconmem.platform.context import ContextManager

ROLES = ("backbone", "user_backbone", "judge_backbone")


def method_facing_id(sample_id: str) -> str:
    """The id a method gets for a conversation (``Session.sample_id``): stable per sample, but opaque.

    A benchmark's own ids carry labels (LoCoEval's ``-sh`` / ``-mh`` subset suffix, a CAB subset name);
    the records keep those, a method sees ``conversation-<12 hex digits of sha256(id)>``.
    """
    return "conversation-" + hashlib.sha256(sample_id.encode("utf-8")).hexdigest()[:12]


@dataclass
class RunEnv:
    """What the loop hands a benchmark: the config, the run's shared ledger and per-sample paths.

    ``shared`` holds what :meth:`Benchmark.setup` built once per run (LLM clients, executors ...).
    ``out_dir`` / ``sample_id`` / ``attempt`` / ``recorder`` are set for the sample being run: the
    benchmark writes its rows through ``recorder`` as they happen (``benchmarks.records.SampleRecorder``).
    """

    cfg: Any
    ledger: Any
    run_path: Path
    progress: bool = True
    shared: dict[str, Any] = field(default_factory=dict)
    out_dir: Path | None = None
    sample_id: str | None = None
    attempt: str | None = None
    recorder: Any = None

    def sample_events(self) -> list[dict[str, Any]]:
        """This sample attempt's ledger events (every field kept): the one slicing rule."""
        from benchmarks.records import attempt_events

        return attempt_events([self.ledger], self.attempt) if self.attempt else []


class Benchmark(abc.ABC):
    """Base class of a benchmark; subclasses set ``family`` and the statuses they may return."""

    #: how its records are read (a ``benchmarks.records.Family`` value: ``locoeval`` | ``cab``)
    family: ClassVar[str] = ""
    #: ``benchmarks.records.Status`` values run_sample may return besides ok (the loop adds error /
    #: interrupted itself); whether one is final, scored or excluded is the status's own meaning
    statuses: ClassVar[frozenset[str]] = frozenset()
    #: privileged inputs run_sample can hand a bracket method (reconmem/platform/brackets.py)
    privileged_inputs: ClassVar[frozenset[str]] = frozenset()
    #: run_sample can skip generating preparation replies for a method that reads no earlier turn
    can_skip_prep_replies: ClassVar[bool] = False
    #: judged by running code in ``cfg.executor`` (the manifest then records the executor)
    uses_executor: ClassVar[bool] = False

    def __init__(self, cfg: Any = None, **_: Any) -> None:
        self.cfg = cfg

    # ---- identity and selection
    def sample_id(self, sample: Any) -> str:
        return str(sample.id)

    def uses(self, cfg: Any) -> tuple[str, ...]:
        """The backbone roles this benchmark calls (``benchmark.uses_backbones``; default all three)."""
        uses = cfg.benchmark.get("uses_backbones")
        return ROLES if uses is None else tuple(str(u) for u in uses)

    def models(self, cfg: Any, samples: Sequence[Any]) -> dict[str, str | None]:
        """Model ids the run calls per role (``None`` for a role this run does not use)."""
        uses = self.uses(cfg)
        return {"backbone": str(cfg.backbone.model),
                "user": str(cfg.user_backbone.model) if "user_backbone" in uses else None,
                "judge": str(cfg.judge_backbone.model) if "judge_backbone" in uses else None}

    def select(self, samples: Sequence[Any], *, ids: Sequence[str] | None, limit: int | None) -> list[Any]:
        """Apply ``run.ids`` (file order kept; unknown ids are an error naming them) then ``run.limit``."""
        from benchmarks.harness import ConfigError

        chosen = list(samples)
        if ids:
            known = {self.sample_id(s) for s in chosen}
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise ConfigError(f"run.ids: unknown id(s) {unknown[:5]} (available e.g. {sorted(known)[:3]})")
            wanted = set(ids)
            chosen = [s for s in chosen if self.sample_id(s) in wanted]
        if limit is not None:
            if int(limit) < 0:
                raise ConfigError(f"run.limit must be >= 0, got {limit}")
            chosen = chosen[: int(limit)]
        return chosen

    # ---- the three things a benchmark supplies
    @abc.abstractmethod
    def load(self, cfg: Any) -> list[Any]:
        """Every sample of the configured data (selection is the loop's)."""

    @abc.abstractmethod
    def run_sample(self, sample: Any, method: ContextManager, env: RunEnv) -> dict[str, Any]:
        """Run one sample, write its records into ``env.out_dir`` and return the result payload.

        Raise on failure: the loop writes ``error.txt`` and an ``error`` result from :meth:`error_result`.
        """

    @abc.abstractmethod
    def score(self, run_path: Path, sample_ids: Sequence[str]) -> dict[str, Any]:
        """The run's metrics over the finished records of ``sample_ids``."""

    # ---- optional hooks
    def data_files(self, cfg: Any) -> dict[str, Path]:
        """Data files whose checksums go into the manifest."""
        return {}

    def check_data(self, cfg: Any, samples: Sequence[Any]) -> None:
        """Validate auxiliary data files before the first sample (raise DataError naming file:line)."""

    def setup(self, env: RunEnv, samples: Sequence[Any]) -> None:
        """Build what every sample shares (clients, executors) into ``env.shared``; only called with work to do."""

    def error_result(self, sample: Any) -> dict[str, Any]:
        """Fields of the result of a sample that did not finish: every task listed with passed=false."""
        return {"n_tasks": 0, "tasks": []}

    def max_workers(self, cfg: Any) -> int | None:
        cap = cfg.benchmark.get("max_workers")
        return int(cap) if cap else None
