"""The fork set on the run loop (``benchmark=locoeval_fork``): LoCoEval with the fork's judge.

Everything a method meets is LoCoEval's (:class:`benchmarks.locoeval.runner.LoCoEval`: the same
conversation, the same task query, the same brackets channel); two things differ, both set by the
benchmark and so the same for every method:

- **judging**: each task reply is judged by :class:`benchmarks.locoeval.fork.judge.ForkJudge` --
  DevEval Pass@1 with the fork's test files in place of the project's and the sample's other
  targets holding their fork bodies (``benchmark.evaluator``, a test's fake judge, still replaces it);
- **the indexed snapshot**: the public one with every target blanked and docstring-free (the
  samples must say ``target_docstrings: remove``) and every target's ``hidden_files`` removed (the
  test files that judge it and every other test file the fork makes fail).

The fork data is ``benchmark.forks`` (``forks.jsonl``, written by ``python -m scripts.build_fork_set
ship``); every task of a selected sample needs a record there, for the sample's project and version,
with the sample's file and test ids (checked before any model call).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchmarks.locoeval.fork.judge import ForkJudge, hidden_files
from benchmarks.locoeval.fork.ship import ForkDataError, ForkRecord, read_forks
from benchmarks.locoeval.runner import LoCoEval, LoCoEvalSettings, LoCoEvalShared, sample_index
from benchmarks.locoeval.schema import Sample
from benchmarks.task import RunEnv


@dataclass(frozen=True)
class ForkSettings(LoCoEvalSettings):
    """LoCoEval's options plus the fork data (``conf/benchmark/locoeval_fork.yaml`` mirrors them)."""

    forks: str = "package:benchmarks.locoeval/fork/set/forks.jsonl"  # the shipped fork records


@lru_cache(maxsize=4)
def _forks(path: str) -> dict[str, ForkRecord]:
    return read_forks(path)


def fork_problems(sample: Sample, forks: dict[str, ForkRecord], requirements: Sequence[Any] | None = None) -> list[str]:
    """Why a sample (its ``requirements``, default all) cannot be judged against the fork data (empty: it can)."""
    out = []
    if sample.target_docstrings != "remove":
        out.append(f"sample {sample.id!r}: target_docstrings must be 'remove' in the fork set")
    for req in sample.requirements if requirements is None else requirements:
        rec = forks.get(req.namespace)
        where = f"sample {sample.id!r}: {req.req_id} {req.namespace}"
        if rec is None:
            out.append(f"{where}: no record in the fork data")
            continue
        if rec.project_path != sample.project_path or sample.repo.get("version", rec.version) != rec.version:
            out.append(f"{where}: the fork is of {rec.project_path} {rec.version}, the sample's repository "
                       f"{sample.project_path} {sample.repo.get('version')}")
        if req.completion_path != rec.file:
            out.append(f"{where}: completion_path {req.completion_path!r}, the fork's file is {rec.file!r}")
        if list(req.tests) != list(rec.test_ids):
            out.append(f"{where}: tests differ from the fork record's test_ids")
    return out


class LoCoEvalFork(LoCoEval):
    """LoCoEval judged against the fork (module docstring)."""

    settings_class = ForkSettings

    def forks(self, cfg: Any) -> dict[str, ForkRecord]:
        from benchmarks.harness import resolve_data_path

        return _forks(str(resolve_data_path(self.settings_for(cfg).forks)))

    def data_files(self, cfg: Any) -> dict[str, Path]:
        from benchmarks.harness import resolve_data_path

        return {**super().data_files(cfg), "forks": resolve_data_path(self.settings_for(cfg).forks)}

    def check_data(self, cfg: Any, samples: Sequence[Sample]) -> None:
        """LoCoEval's checks, then every task's fork record (one-line ``DataError``)."""
        from benchmarks.errors import DataError

        super().check_data(cfg, samples)
        try:
            forks = self.forks(cfg)
        except (ForkDataError, FileNotFoundError) as exc:
            raise DataError(f"benchmark.forks: {exc}") from exc
        for s in samples:
            problems = fork_problems(s, forks)
            if problems:
                raise DataError(f"benchmark.forks: {problems[0]}")

    def setup(self, env: RunEnv[LoCoEvalShared], samples: Sequence[Sample]) -> LoCoEvalShared:
        shared = super().setup(env, samples)
        cfg = env.cfg
        settings = self.settings_for(cfg)
        forks = self.forks(cfg)
        cache_dir = Path(str(cfg.cache.dir)).expanduser()

        def indexes(sample: Sample) -> Any:
            return sample_index(sample, cache_dir, hide_task_tests=settings.hide_task_tests,
                                hidden_files=hidden_files(sample, forks))

        evaluate = shared.evaluate if settings.evaluator else ForkJudge(
            forks, sources_manifest=settings.manifest_file, executor_cfg=cfg.get("executor"))
        return replace(shared, evaluate=evaluate, indexes=indexes)
