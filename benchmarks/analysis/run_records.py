"""One run directory as the analysis reads it: :class:`RunRecord` (keys, models, manifest, its
samples) and :class:`SampleRecord` (one finished sample: its result, what it counts as, its token
and cost sums), loaded by :func:`load_run` through :class:`benchmarks.records.RunDir` (the format
is :mod:`benchmarks.records`, docs/RECORDS.md). Many runs: :func:`benchmarks.analysis.records.load_runs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from benchmarks import records as rec
from benchmarks.accounting import summarise_events
from benchmarks.records import Family, RecordError, RunDir, SampleDir, Status
from reconmem.memory.budgets import BUDGET_NAMES

LOCOEVAL = Family.LOCOEVAL.value
CAB = Family.CAB.value
SCRIPTED_MARK = "scripted replies — not a model's result"


def config_section(config: dict[str, Any], name: str) -> dict[str, Any]:
    """``config[name]`` when it is a mapping, else ``{}``."""
    node = config.get(name)
    return node if isinstance(node, dict) else {}


@dataclass
class SampleRecord:
    """One sample (LoCoEval conversation or CAB issue) of one run: the :class:`benchmarks.records.SampleDir`
    its run directory returned (``dir``: its files, read through it as they are) and its result."""

    run: "RunRecord"
    dir: SampleDir
    result: dict[str, Any]

    @property
    def sample_id(self) -> str:
        return str(self.result.get("sample_id") or self.result.get("task_id") or self.dir.name)

    @property
    def status(self) -> str:
        return str(self.result.get("status") or Status.MISSING.value)

    @cached_property
    def kind(self) -> str:
        """``ok`` | ``errored`` | ``missing`` | ``excluded`` (:func:`benchmarks.records.sample_class`)."""
        return rec.sample_class(self.result)

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    @property
    def excluded_reason(self) -> str | None:
        """Why this sample is out of the comparison for every method (None: it is not)."""
        return rec.excluded_reason(self.result)

    @property
    def errored(self) -> bool:
        """Scored as a failure: crashed after the run's retries or a judgment that still failed."""
        return self.kind == "errored"

    @property
    def missing(self) -> bool:
        """Selected but never finished (interrupted, or no result.json): scored as failed."""
        return self.kind == "missing"

    @property
    def scored(self) -> bool:
        """Enters the scores (before benchmark-wide exclusions): ok, errored or missing."""
        return self.kind != "excluded"

    @cached_property
    def token_summary(self) -> dict[str, float]:
        out = summarise_events(self.dir.ledger())
        if not out["n_events"] and self.result.get("cost_usd") is not None:
            out["cost_usd_all"] = float(self.result.get("cost_usd") or 0.0)  # no ledger: the result's total
        return out


@dataclass
class RunRecord:
    """One run directory ``results/<benchmark>/<backbone>/<method>/<run_id>/`` (all its shards):
    ``dir`` is the :class:`benchmarks.records.RunDir` it was read through."""

    dir: RunDir
    path: Path
    benchmark: str
    backbone: str
    method: str
    run_id: str
    family: str  # a benchmarks.records.Family value
    config: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    samples: list[SampleRecord] = field(default_factory=list)  # the records of the selected samples
    outside_selection: list[SampleRecord] = field(default_factory=list)  # records of samples the manifest did not select
    unfinished: list[str] = field(default_factory=list)  # sample folders without result.json
    shards: list[dict[str, Any]] = field(default_factory=list)  # per-shard manifests (sharded runs)
    models: dict[str, str | None] = field(default_factory=dict)  # {backbone, user, judge} model ids
    backbone_name: str = ""  # the conf/backbone name (``backbone`` may carry @model when names collide)
    problems: list[str] = field(default_factory=list)  # inconsistencies found while loading

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.benchmark, self.backbone, self.method, self.run_id)

    @property
    def repeat(self) -> int:
        """The repeat index of a ``run.repeat=K`` run (1..K); 1 for an unrepeated run."""
        rep = self.manifest.get("repeat")
        return int(rep.get("index") or 1) if isinstance(rep, dict) else 1

    @property
    def selection(self) -> dict[str, dict[str, Any]] | None:
        """Sample id -> manifest entry of every selected sample (None: a manifest written before ``selected``)."""
        return rec.manifest_selection(self.manifest)  # type: ignore[return-value]

    @property
    def scripted(self) -> bool:
        """Whether any model this run called was a scripted test hook (never a benchmark number)."""
        return bool(self.manifest.get("scripted")) or rec.is_scripted(self.models)

    @property
    def budgets(self) -> dict[str, Any]:
        """ReConMem retrieval budgets (k1, k2, k31, k32) the run used, from the manifest's
        ``method_params`` ({} for methods without budgets)."""
        params = self.manifest.get("method_params") or {}
        return {k: params[k] for k in BUDGET_NAMES if params.get(k) is not None}


def load_run(path: str | Path) -> RunRecord:
    """Load one run directory (it must contain ``samples/``) through :class:`benchmarks.records.RunDir`.

    Records of samples outside the manifest's ``selected`` (left from an earlier ``run.ids`` /
    ``run.limit`` of the same run directory) go to ``outside_selection``, not ``samples``: no count
    reads them. A manifest without ``selected`` (written before it) keeps every record."""
    run_dir = RunDir(path)
    path = run_dir.path
    if not run_dir.samples_path.is_dir():
        raise RecordError(f"{path}: not a run directory (no samples/ folder)")
    config = run_dir.config()
    manifest = dict(run_dir.manifest)
    summary = run_dir.summary()
    parts = path.resolve().parts
    fallback = dict(zip(("benchmark", "backbone", "method", "run_id"), parts[-4:])) if len(parts) >= 4 else {}

    def pick(section: str, key: str, default_key: str) -> str:
        value = manifest.get(default_key)
        if value is None:
            value = config_section(config, section).get(key)
        if value is None:
            value = fallback.get(default_key)
        if value is None:
            raise RecordError(f"{path}: cannot tell the {default_key} (no manifest '{default_key}', "
                              f"no config.yaml {section}.{key}, path too short)")
        return str(value)

    benchmark = pick("benchmark", "name", "benchmark")
    backbone = pick("backbone", "name", "backbone")
    method = pick("method", "name", "method")
    run_id = pick("run", "run_id", "run_id")
    models = manifest["models"]
    run = RunRecord(dir=run_dir, path=path, benchmark=benchmark, backbone=backbone, method=method, run_id=run_id,
                    family=str(manifest["family"]), config=config, manifest=manifest, summary=summary,
                    shards=run_dir.shard_manifests(), backbone_name=backbone, problems=list(run_dir.problems),
                    models={"backbone": models.get("backbone"), "user": models.get("user"),
                            "judge": models.get("judge")})
    selection = run.selection
    for d in run_dir.sample_dirs():
        result = d.result()
        if result is None:
            run.unfinished.append(d.name)
            continue
        sample = SampleRecord(run=run, dir=d, result=result)
        (run.samples if selection is None or sample.sample_id in selection else run.outside_selection).append(sample)
    return run
