"""Judging the GT-item coverage of whole runs (``python -m scripts.coverage``): every ok sample of
the selected LoCoEval(-format) runs, each sample's ``coverage.json`` written as it is judged.

GT items come from the sample file named in the run's ``config.yaml`` (``benchmark.samples``) or
the ``samples`` argument. Samples already judged with the same judge model, prompt version and
views version are skipped unless ``overwrite``. Judging one sample: :mod:`benchmarks.analysis.coverage`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from benchmarks.analysis.coverage import VIEWS_VERSION, CoverageJudge, judge_sample
from benchmarks.analysis.records import LOCOEVAL, load_runs
from benchmarks.records import COVERAGE, atomic_write_json
from reconmem.platform.llm import UsageLedger

log = logging.getLogger(__name__)


@dataclass
class CoverageCounts:
    judged: int = 0
    skipped: int = 0
    failed: int = 0


def load_sample_specs(source: str | Path) -> dict[str, dict[str, Any]]:
    """GT items of every LoCoEval sample of ``source`` (any source benchmarks.locoeval.loader reads:
    a JSONL path, ``package:...``, ``hf:...``, the official layout), as ``{id: {requirements: ...}}``."""
    from benchmarks.locoeval.loader import load_samples

    return {s.id: {"id": s.id, "requirements": [
        {"req_id": r.req_id, "gt_items": [{"id": g.id, "text": g.text} for g in r.gt_items]} for r in s.requirements]}
        for s in load_samples(source)}


def judge_runs(judge: CoverageJudge, ledger: UsageLedger, runs: Sequence[str], *, judge_model: str, judge_name: str,
               methods: Sequence[str] = ("reconmem",), samples: str | None = None, overwrite: bool = False,
               limit: int | None = None) -> CoverageCounts:
    """Judge every ok sample of ``runs`` (results roots or run directories) of ``methods``; at most
    ``limit`` samples. Raises :class:`benchmarks.analysis.records.RecordError` on bad records and
    ``ValueError`` naming the run when its sample file cannot be read."""
    counts = CoverageCounts()
    spec_cache: dict[str, dict[str, dict[str, Any]]] = {}
    for run in load_runs(runs).select(family=LOCOEVAL):
        if run.method not in methods:
            continue
        spec_path = str(samples or (run.config.get("benchmark") or {}).get("samples") or "")
        try:
            if spec_path not in spec_cache:
                spec_cache[spec_path] = load_sample_specs(spec_path)
            specs = spec_cache[spec_path]
        except (FileNotFoundError, ValueError) as exc:
            raise ValueError(f"run {run.path}: {exc}") from exc
        for sample in run.samples:
            if not sample.ok:
                continue
            if limit is not None and counts.judged >= limit:
                break
            existing = sample.coverage()
            if existing and not overwrite and existing.get("judge_model") == judge_model \
                    and existing.get("prompt_version") == judge.prompt_version \
                    and existing.get("views_version") == VIEWS_VERSION:
                counts.skipped += 1
                continue
            spec = specs.get(sample.sample_id)
            if spec is None:
                log.error("%s: sample %s not in %s", run.path, sample.sample_id, spec_path)
                counts.failed += 1
                continue
            start = len(ledger.events)
            try:
                with ledger.tags(sample=sample.sample_id, role="coverage_judge"):
                    record = judge_sample(judge, sample, spec, judge_name=judge_name)
            except ValueError as exc:  # a corrupt context record: name it, judge the rest
                log.error("%s: sample %s: %s", run.path, sample.sample_id, exc)
                counts.failed += 1
                continue
            record["judge_model"] = judge_model
            record["ledger"] = ledger.events[start:]
            atomic_write_json(sample.path / COVERAGE, record)
            counts.judged += 1
            bad = sum(1 for t in record["task_runs"] if "error" in t or
                      any(not v["complete"] for v in (t.get("views") or {}).values()))
            log.info("%s/%s/%s %s: %d task-run(s), %d incomplete or unjudged", run.benchmark, run.backbone,
                     run.method, sample.sample_id, len(record["task_runs"]), bad)
    return counts
