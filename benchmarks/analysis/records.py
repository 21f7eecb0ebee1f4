"""Load run records from disk for the analysis (the format is :mod:`benchmarks.records`, docs/RECORDS.md).

    runs = load_runs(["results/locoeval", "results/cab"])
    tasks = runs.tasks_frame("locoeval")        # one row per task of every scored LoCoEval sample
    samples = runs.samples_frame("locoeval")    # one row per sample, with token and cost sums
    issues = runs.samples_frame("cab")          # CAB: one row per issue
    runs.validity("locoeval")                   # what each (backbone, method) was scored on

Everything downstream (tables, figures, statistics, the notebook, ``scripts.report``) reads records
only through this module, and this module parses files only through :mod:`benchmarks.records`.

The concepts: one run (:mod:`benchmarks.analysis.run_records`), what is counted
(:mod:`benchmarks.analysis.counting`), the frames (:mod:`benchmarks.analysis.frames`) and the
per-run tables (:mod:`benchmarks.analysis.run_tables`); :class:`RunSet` is all of them over the
loaded runs.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Iterable

from benchmarks import records as rec
from benchmarks.analysis.labels import Labels
from benchmarks.analysis.frames import RunFrames
from benchmarks.analysis.run_records import RunRecord, load_run
from benchmarks.analysis.run_tables import RunTables
from benchmarks.records import RunDir, Status


class RunSet(RunFrames, RunTables):
    """All runs found under the given paths: what is counted, the frames and the per-run tables;
    :attr:`labels` names their methods and backbones (hand it to the tables and figures)."""

    @cached_property
    def labels(self) -> Labels:
        """The display labels of these runs (:meth:`benchmarks.analysis.labels.Labels.of_runs`)."""
        return Labels.of_runs(self.runs)


def _split_backbones_by_model(runs: list[RunRecord], warnings: list[str]) -> None:
    """Runs that share a backbone config name but called different models get distinct backbone
    keys (``name@model``) so their numbers are never pooled under one row label."""
    by_name: dict[tuple[str, str], set[str]] = {}
    for r in runs:
        by_name.setdefault((r.benchmark, r.backbone), set()).add(str(r.models.get("backbone")))
    for (bench, name), models in by_name.items():
        if len(models) > 1:
            warnings.append(f"{bench}: backbone '{name}' was run with different models ({', '.join(sorted(models))}); "
                            "their rows are kept apart")
            for r in runs:
                if r.benchmark == bench and r.backbone == name:
                    r.backbone = f"{name}@{r.models.get('backbone')}"


def load_runs(paths: str | Path | Iterable[str | Path]) -> RunSet:
    """Find and load every run directory under ``paths`` (results roots or run directories)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    seen: set[Path] = set()
    runs: list[RunRecord] = []
    for p in paths:
        for found in RunDir.discover(p):
            d = found.path
            rd = d.resolve()
            if rd in seen:
                continue
            seen.add(rd)
            runs.append(load_run(d))
    runset = RunSet(runs=runs)
    _split_backbones_by_model(runs, runset.warnings)
    for r in runs:
        runset.warnings.extend(r.problems)
        selection = r.selection
        if r.unfinished:
            folders = None if selection is None else {rec.safe_name(sid) for sid in selection}
            counted = [u for u in r.unfinished if folders is None or u in folders]
            ignored = [u for u in r.unfinished if u not in counted]
            if counted:
                runset.warnings.append(f"{r.path}: {len(counted)} unfinished sample(s) (no result.json): "
                                       "counted as failed (missing); resume the run")
            if ignored:
                runset.warnings.append(f"{r.path}: {len(ignored)} unfinished sample folder(s) (no result.json) outside "
                                       f"the manifest's selection ignored: {', '.join(ignored[:5])}")
        for s in r.samples:
            if Status.parse(s.status).unfinished:
                runset.warnings.append(f"{s.dir.path}: status {s.status}: counted as failed (missing); resume the run")
        if selection is not None:
            if r.outside_selection:
                extra = sorted(s.sample_id for s in r.outside_selection)
                runset.warnings.append(f"{r.path}: {len(extra)} record(s) outside the manifest's selection left out "
                                       f"of every table: {', '.join(extra[:5])}" + (", ..." if len(extra) > 5 else ""))
        else:
            runset.warnings.append(f"{r.path}: manifest without 'selected' (written before it): selection taken "
                                   "from the records, their folders and n_selected")
    return runset
