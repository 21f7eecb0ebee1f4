"""Load run records from disk (the format is described in docs/RECORDS.md).

    runs = load_runs(["results/locoeval", "results/cab"])
    tasks = runs.tasks_frame("locoeval")        # one row per task-run of an ok LoCoEval sample
    samples = runs.samples_frame("locoeval")    # one row per sample, with token sums
    issues = runs.samples_frame("cab")          # CAB: one row per issue

Everything downstream (tables, figures, statistics, notebook) reads records only through this
module. Nothing is filled in: a sample without ``result.json`` is *unfinished* and a sample whose
status is not ``ok`` contributes no numbers (it is counted in the frames' ``status`` column).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Sequence

from benchmarks.analysis import labels
from benchmarks.analysis.tokens import summarise_events

log = logging.getLogger(__name__)

LOCOEVAL = "locoeval"
CAB = "cab"
TASK_KEYS = ("benchmark", "backbone", "method", "run_id")


class RecordError(ValueError):
    """A malformed record; the message names the file and field."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RecordError(f"{path}: invalid JSON ({exc})") from exc


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """JSON lines; a truncated last line (crash mid-append) is skipped, other bad lines are errors."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    rows: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if i == len(lines) - 1:
                log.warning("%s: ignoring truncated last line", path)
                continue
            raise RecordError(f"{path}:{i + 1}: invalid JSON line ({exc})") from exc
    return rows


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise RecordError(f"{path}: invalid YAML ({exc})") from exc
    return data if isinstance(data, dict) else {}


@dataclass
class SampleRecord:
    """One sample (LoCoEval conversation or CAB issue) of one run."""

    run: "RunRecord"
    path: Path
    result: dict[str, Any]

    @property
    def sample_id(self) -> str:
        return str(self.result.get("sample_id") or self.path.name)

    @property
    def status(self) -> str:
        return str(self.result.get("status") or "missing")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def ledger(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.path / "ledger.jsonl")

    def contexts(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.path / "contexts.jsonl")

    def conversation(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.path / "conversation.jsonl")

    def coverage(self) -> dict[str, Any] | None:
        """The coverage judge's output for this sample (written by ``scripts/coverage.py``)."""
        p = self.path / "coverage.json"
        return _read_json(p) if p.is_file() else None

    @cached_property
    def token_summary(self) -> dict[str, float]:
        return summarise_events(self.ledger())


@dataclass
class RunRecord:
    """One run directory ``results/<benchmark>/<backbone>/<method>/<run_id>/``."""

    path: Path
    benchmark: str
    backbone: str
    method: str
    run_id: str
    family: str  # "locoeval" (LoCoEval and the LoCoEval-format demo) or "cab"
    config: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    samples: list[SampleRecord] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)  # sample folders without result.json

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.benchmark, self.backbone, self.method, self.run_id)


def _family(config: dict[str, Any], benchmark: str, first_result: dict[str, Any] | None) -> str:
    runner = str((config.get("benchmark") or {}).get("runner") or "")
    if ".cab." in runner or benchmark == CAB:
        return CAB
    if ".locoeval." in runner or benchmark in (LOCOEVAL, "demo"):
        return LOCOEVAL
    if first_result is not None:
        if "verdict" in first_result or "verbosity" in first_result:
            return CAB
        if "subset" in first_result or "tasks" in first_result:
            return LOCOEVAL
    return LOCOEVAL


def load_run(path: str | Path) -> RunRecord:
    """Load one run directory (it must contain ``samples/``)."""
    path = Path(path)
    samples_dir = path / "samples"
    if not samples_dir.is_dir():
        raise RecordError(f"{path}: not a run directory (no samples/ folder)")
    config = _read_yaml(path / "config.yaml")
    manifest = _read_json(path / "manifest.json") if (path / "manifest.json").is_file() else {}
    summary = _read_json(path / "summary.json") if (path / "summary.json").is_file() else {}
    parts = path.resolve().parts
    fallback = dict(zip(("benchmark", "backbone", "method", "run_id"), parts[-4:])) if len(parts) >= 4 else {}

    def pick(section: str, key: str, default_key: str) -> str:
        node = config.get(section) or {}
        value = node.get(key) if isinstance(node, dict) else None
        value = value if value is not None else fallback.get(default_key)
        if value is None:
            raise RecordError(f"{path}: cannot tell the {default_key} (no config.yaml {section}.{key}, path too short)")
        return str(value)

    benchmark = pick("benchmark", "name", "benchmark")
    backbone = pick("backbone", "name", "backbone")
    method = pick("method", "name", "method")
    run_id = pick("run", "run_id", "run_id")
    labels.remember_label("method", method, (config.get("method") or {}).get("label"))
    labels.remember_label("backbone", backbone, (config.get("backbone") or {}).get("label"))

    samples: list[SampleRecord] = []
    unfinished: list[str] = []
    run = RunRecord(path=path, benchmark=benchmark, backbone=backbone, method=method, run_id=run_id,
                    family=LOCOEVAL, config=config, manifest=manifest, summary=summary)
    for d in sorted(p for p in samples_dir.iterdir() if p.is_dir()):
        rp = d / "result.json"
        if not rp.is_file():
            unfinished.append(d.name)
            continue
        result = _read_json(rp)
        if not isinstance(result, dict):
            raise RecordError(f"{rp}: expected a JSON object")
        samples.append(SampleRecord(run=run, path=d, result=result))
    run.samples = samples
    run.unfinished = unfinished
    run.family = _family(config, benchmark, samples[0].result if samples else None)
    return run


def discover_run_dirs(root: str | Path) -> list[Path]:
    """Run directories at or below ``root`` (any folder holding ``samples/``; ``.hydra`` skipped)."""
    root = Path(root)
    if not root.exists():
        raise RecordError(f"{root}: no such file or directory")
    if (root / "samples").is_dir():
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if "samples" in dirnames and Path(dirpath, "samples").is_dir():
            found.append(Path(dirpath))
            dirnames[:] = []  # a run's samples are not runs
    return found


@dataclass
class RunSet:
    """All runs found under the given paths, with tidy pandas views."""

    runs: list[RunRecord]
    warnings: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ selection
    def benchmarks(self, family: str | None = None) -> list[str]:
        return sorted({r.benchmark for r in self.runs if family is None or r.family == family})

    def select(self, benchmark: str | None = None, *, family: str | None = None,
               backbone: str | None = None, method: str | None = None) -> list[RunRecord]:
        return [r for r in self.runs
                if (benchmark is None or r.benchmark == benchmark) and (family is None or r.family == family)
                and (backbone is None or r.backbone == backbone) and (method is None or r.method == method)]

    def merged_samples(self, benchmark: str | None = None, **kw: Any) -> list[SampleRecord]:
        """One record per (benchmark, backbone, method, sample id) across run ids.

        Several run ids of the same setting are merged sample by sample (an ``ok`` record wins over
        others, then the newest run by manifest ``started``); duplicates are noted in ``warnings``.
        """
        chosen: dict[tuple[str, str, str, str], SampleRecord] = {}
        for run in sorted(self.select(benchmark, **kw), key=lambda r: str(r.manifest.get("started") or "")):
            for s in run.samples:
                key = (run.benchmark, run.backbone, run.method, s.sample_id)
                prev = chosen.get(key)
                if prev is None:
                    chosen[key] = s
                    continue
                msg = (f"sample {s.sample_id} of {run.benchmark}/{run.backbone}/{run.method} appears in run ids "
                       f"{prev.run.run_id} and {run.run_id}; using the ")
                if prev.ok and not s.ok:
                    msg += f"ok record of {prev.run.run_id}"
                else:
                    chosen[key] = s
                    msg += f"record of {run.run_id}"
                if msg not in self.warnings:
                    self.warnings.append(msg)
        return list(chosen.values())

    # ------------------------------------------------------------------ frames
    def samples_frame(self, benchmark: str | None = None, *, family: str | None = None,
                      tokens: bool = True) -> "Any":
        """One row per sample: keys, status, result fields and per-sample token sums."""
        import pandas as pd

        rows = []
        for s in self.merged_samples(benchmark, family=family):
            r = s.result
            row: dict[str, Any] = {
                "benchmark": s.run.benchmark, "backbone": s.run.backbone, "method": s.run.method,
                "run_id": s.run.run_id, "family": s.run.family, "sample_id": s.sample_id,
                "status": s.status, "error": r.get("error"),
            }
            for k, v in r.items():
                if k in row or k in ("tasks",) or isinstance(v, (dict, list)):
                    continue
                row[k] = v
            if s.run.family == LOCOEVAL:
                row.setdefault("repo_cluster", r.get("repo_cluster") or r.get("project"))
            if tokens:
                row.update(s.token_summary)
            rows.append(row)
        frame = pd.DataFrame(rows)
        if not frame.empty:
            tok_cols = [c for c in frame.columns if c.startswith("tok_")]
            frame[tok_cols] = frame[tok_cols].fillna(0)
        return frame

    def tasks_frame(self, benchmark: str | None = None) -> "Any":
        """One row per task-run of every ok LoCoEval-format sample."""
        import pandas as pd

        rows = []
        for s in self.merged_samples(benchmark, family=LOCOEVAL):
            if not s.ok:
                continue
            r = s.result
            tasks = r.get("tasks")
            if not isinstance(tasks, list):
                raise RecordError(f"{s.path / 'result.json'}: status ok but no 'tasks' list")
            for t in tasks:
                if "passed" not in t or "req_id" not in t:
                    raise RecordError(f"{s.path / 'result.json'}: task without 'req_id'/'passed': {t}")
                rows.append({
                    "benchmark": s.run.benchmark, "backbone": s.run.backbone, "method": s.run.method,
                    "run_id": s.run.run_id, "sample_id": s.sample_id, "subset": r.get("subset"),
                    "project": r.get("project"), "repo_cluster": r.get("repo_cluster") or r.get("project"),
                    "n_turns": r.get("n_turns"), "n_tasks": r.get("n_tasks", len(tasks)),
                    "req_id": t["req_id"], "namespace": t.get("namespace"), "outcome": t.get("outcome"),
                    "passed": bool(t["passed"]),
                })
        cols = ["benchmark", "backbone", "method", "run_id", "sample_id", "subset", "project", "repo_cluster",
                "n_turns", "n_tasks", "req_id", "namespace", "outcome", "passed"]
        return pd.DataFrame(rows, columns=cols)

    def ledger_frame(self, benchmark: str | None = None, *, methods: Sequence[str] | None = None,
                     ok_only: bool = True) -> "Any":
        """Every ledger event of the selected samples, with the run keys."""
        import pandas as pd

        rows = []
        for s in self.merged_samples(benchmark):
            if (ok_only and not s.ok) or (methods is not None and s.run.method not in methods):
                continue
            for ev in s.ledger():
                rows.append({**ev, "benchmark": s.run.benchmark, "backbone": s.run.backbone,
                             "method": s.run.method, "sample_id": s.sample_id,
                             "subset": s.result.get("subset")})
        return pd.DataFrame(rows)

    def manifests(self) -> list[dict[str, Any]]:
        """One row per run: keys, sample status counts and the manifest fields."""
        out = []
        for r in self.runs:
            counts: dict[str, int] = {}
            for s in r.samples:
                counts[s.status] = counts.get(s.status, 0) + 1
            if r.unfinished:
                counts["unfinished"] = len(r.unfinished)
            out.append({"benchmark": r.benchmark, "backbone": r.backbone, "method": r.method, "run_id": r.run_id,
                        "model": (r.config.get("backbone") or {}).get("model"), "path": str(r.path),
                        "status_counts": counts, **r.manifest})
        return out


def load_runs(paths: str | Path | Iterable[str | Path]) -> RunSet:
    """Find and load every run directory under ``paths`` (results roots or run directories)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    seen: set[Path] = set()
    runs: list[RunRecord] = []
    for p in paths:
        for d in discover_run_dirs(p):
            rd = d.resolve()
            if rd in seen:
                continue
            seen.add(rd)
            runs.append(load_run(d))
    runset = RunSet(runs=runs)
    for r in runs:
        if r.unfinished:
            runset.warnings.append(f"{r.path}: {len(r.unfinished)} unfinished sample(s) (no result.json) ignored")
    return runset
