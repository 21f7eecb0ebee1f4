"""Load run records from disk for the analysis (the format is :mod:`benchmarks.records`, docs/RECORDS.md).

    runs = load_runs(["results/locoeval", "results/cab"])
    tasks = runs.tasks_frame("locoeval")        # one row per task of every scored LoCoEval sample
    samples = runs.samples_frame("locoeval")    # one row per sample, with token and cost sums
    issues = runs.samples_frame("cab")          # CAB: one row per issue
    runs.validity("locoeval")                   # what each (backbone, method) was scored on

Everything downstream (tables, figures, statistics, the notebook, ``scripts.report``) reads records
only through this module, and this module parses files only through :mod:`benchmarks.records`.

What is counted (docs/RECORDS.md "What is counted"): every method is scored over the sample ids
its manifest selected (``selected``). A sample whose record says ``error`` (after the run's
retries) is *scored* — its tasks count as failed (LoCoEval) or the issue as incorrect (CAB) — and
is counted as ``errored``. A selected sample without a finished record (no ``result.json``, or
``interrupted``) is *missing*: scored the same way (its tasks failed) and counted as ``missing``;
the tables mark such a method incomplete. A sample with an excluding status (``init_failed``,
``docker_unavailable``, ``excluded`` or an ``excluded_reason``) in *any* run of a benchmark is
excluded for every method and backbone of that benchmark. Manifests written before ``selected``:
the selection is the run's records, its folders without ``result.json`` and, when ``n_selected``
says records are missing, the samples another method of the backbone has.

Repeats (``run.repeat=K``): each repeat is its own run (manifest ``repeat.index``); samples are
merged per repeat, and every frame has a ``repeat`` column (1 for an unrepeated run).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Sequence

from benchmarks import records as rec
from benchmarks.accounting import summarise_events
from benchmarks.analysis import labels
from benchmarks.locoeval import metrics
from benchmarks.records import Family, RecordError, RunDir, SampleDir, Status
from reconmem.memory.budgets import BUDGET_NAMES

log = logging.getLogger(__name__)

LOCOEVAL = Family.LOCOEVAL.value
CAB = Family.CAB.value
TASK_KEYS = ("benchmark", "backbone", "method", "run_id")
SCRIPTED_MARK = "scripted replies — not a model's result"

__all__ = ["CAB", "LOCOEVAL", "RecordError", "RunRecord", "RunSet", "SampleRecord", "load_run", "load_runs"]


def _section(config: dict[str, Any], name: str) -> dict[str, Any]:
    node = config.get(name)
    return node if isinstance(node, dict) else {}


@dataclass
class SampleRecord:
    """One sample (LoCoEval conversation or CAB issue) of one run."""

    run: "RunRecord"
    path: Path
    result: dict[str, Any]

    @property
    def sample_id(self) -> str:
        return str(self.result.get("sample_id") or self.result.get("task_id") or self.path.name)

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

    @property
    def records(self) -> SampleDir:
        return SampleDir(self.path)

    def ledger(self) -> list[dict[str, Any]]:
        return self.records.ledger()

    def contexts(self) -> list[dict[str, Any]]:
        return self.records.contexts()

    def conversation(self) -> list[dict[str, Any]]:
        return self.records.conversation()

    def coverage(self) -> dict[str, Any] | None:
        """The coverage judge's output for this sample (written by ``scripts/coverage.py``)."""
        return self.records.coverage()

    @cached_property
    def token_summary(self) -> dict[str, float]:
        out = summarise_events(self.ledger())
        if not out["n_events"] and self.result.get("cost_usd") is not None:
            out["cost_usd_all"] = float(self.result.get("cost_usd") or 0.0)  # no ledger: the result's total
        return out


@dataclass
class RunRecord:
    """One run directory ``results/<benchmark>/<backbone>/<method>/<run_id>/`` (all its shards)."""

    path: Path
    benchmark: str
    backbone: str
    method: str
    run_id: str
    family: str  # a benchmarks.records.Family value
    config: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    samples: list[SampleRecord] = field(default_factory=list)
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
    """Load one run directory (it must contain ``samples/``) through :class:`benchmarks.records.RunDir`."""
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
            value = _section(config, section).get(key)
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
    mlabels = manifest.get("model_labels") if isinstance(manifest.get("model_labels"), dict) else {}
    labels.remember_label("method", method, manifest.get("method_label") or _section(config, "method").get("label"))
    labels.remember_label("backbone", backbone, _section(config, "backbone").get("label") or mlabels.get("backbone"))
    models = manifest["models"]
    run = RunRecord(path=path, benchmark=benchmark, backbone=backbone, method=method, run_id=run_id,
                    family=str(manifest["family"]), config=config, manifest=manifest, summary=summary,
                    shards=run_dir.shard_manifests(), backbone_name=backbone, problems=list(run_dir.problems),
                    models={"backbone": models.get("backbone"), "user": models.get("user"),
                            "judge": models.get("judge")})
    for d in run_dir.sample_dirs():
        result = d.result()
        if result is None:
            run.unfinished.append(d.name)
            continue
        run.samples.append(SampleRecord(run=run, path=d.path, result=result))
    return run


def _placeholder_tasks(n: int) -> list[dict[str, Any]]:
    return [{"req_id": f"#{i + 1}", "namespace": None, "outcome": "not_run", "passed": False} for i in range(n)]


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

    def register_labels(self) -> None:
        """Make :mod:`labels` name this set's backbones and methods (model ids and config labels):
        the tables built from this set's frames then label rows by the models these runs called."""
        for r in self.runs:
            labels.remember_model(r.backbone, r.models.get("backbone"))
            labels.remember_label("method", r.method, r.manifest.get("method_label")
                                  or _section(r.config, "method").get("label"))
            labels.remember_label("backbone", r.backbone, _section(r.config, "backbone").get("label")
                                  or labels.backbone_config_label(r.backbone_name))

    @property
    def scripted_runs(self) -> list[RunRecord]:
        return [r for r in self.runs if r.scripted]

    def merged_samples(self, benchmark: str | None = None, **kw: Any) -> list[SampleRecord]:
        """One record per (benchmark, backbone, method, repeat, sample id) across run ids and shards.

        Several run ids of the same setting and repeat are merged sample by sample (an ``ok`` record
        wins over others, then the newest run by manifest ``started``); duplicates are noted in
        ``warnings``. Records only: selected samples without a record are :meth:`missing_samples`.
        """
        self.register_labels()
        chosen: dict[tuple[str, str, str, int, str], SampleRecord] = {}
        for run in sorted(self.select(benchmark, **kw), key=lambda r: str(r.manifest.get("started") or "")):
            for s in run.samples:
                key = (run.benchmark, run.backbone, run.method, run.repeat, s.sample_id)
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

    def missing_samples(self, benchmark: str | None = None, **kw: Any) -> list[SampleRecord]:
        """A ``missing`` record (every task failed, :func:`benchmarks.records.missing_result`) for each
        sample a run's manifest selected that no run of the same setting and repeat recorded.

        The entry (subset, tasks) is the manifest's; a manifest written before ``selected`` names no
        ids, so its selection is the run's folders without result.json plus, when ``n_selected``
        exceeds the records, the samples another method of the backbone has (their fields borrowed
        from such a record)."""
        merged = self.merged_samples(benchmark, **kw)
        have: dict[tuple[str, str, str, int], set[str]] = {}
        for s in merged:
            have.setdefault((s.run.benchmark, s.run.backbone, s.run.method, s.run.repeat), set()).add(s.sample_id)
        universe: dict[tuple[str, str, int], dict[str, SampleRecord]] = {}
        for s in merged:
            if s.ok or s.errored:
                universe.setdefault((s.run.benchmark, s.run.backbone, s.run.repeat), {}).setdefault(s.sample_id, s)
        out: dict[tuple[str, str, str, int, str], SampleRecord] = {}
        for run in sorted(self.select(benchmark, **kw), key=lambda r: str(r.manifest.get("started") or "")):
            key = (run.benchmark, run.backbone, run.method, run.repeat)
            recorded = have.get(key, set())
            entries = run.selection
            if entries is None:
                entries = self._legacy_selection(run, recorded, universe.get((run.benchmark, run.backbone, run.repeat), {}))
            for sid, entry in entries.items():
                if sid in recorded:
                    continue
                result = dict(rec.missing_result({**entry, "sample_id": sid}))
                out[(*key, sid)] = SampleRecord(run=run, path=RunDir(run.path).sample(sid).path, result=result)
        return list(out.values())

    def _legacy_selection(self, run: RunRecord, recorded: set[str], others: dict[str, SampleRecord]
                          ) -> dict[str, dict[str, Any]]:
        """The selection of a run whose manifest has no ``selected``: its records, its folders without
        result.json and - when ``n_selected`` exceeds what it recorded - the other methods' samples."""
        keep = ("subset", "project", "repo_cluster", "n_turns", "n_tasks", "task_id", "repo")

        def entry(sid: str) -> dict[str, Any]:
            other = others.get(sid)
            if other is None:
                return {"sample_id": sid}
            r = other.result
            tasks = r.get("tasks") if isinstance(r.get("tasks"), list) else []
            return {"sample_id": sid, **{k: r[k] for k in keep if r.get(k) is not None},
                    "tasks": [{"req_id": t.get("req_id"), "namespace": t.get("namespace")} for t in tasks]}

        n_selected = run.manifest.get("n_selected")
        n_records = len({s.sample_id for s in run.samples})
        if n_selected is not None and n_records >= int(n_selected):
            return {}
        ids = dict.fromkeys(run.unfinished)
        if n_selected is None or int(n_selected) > n_records + len(ids):
            ids.update(dict.fromkeys(sorted(others)))
        return {sid: entry(sid) for sid in ids if sid not in recorded}

    def selected_samples(self, benchmark: str | None = None, **kw: Any) -> list[SampleRecord]:
        """:meth:`merged_samples` plus :meth:`missing_samples`: one record per selected sample."""
        return [*self.merged_samples(benchmark, **kw), *self.missing_samples(benchmark, **kw)]

    # ------------------------------------------------------------------ what is counted
    def excluded(self, benchmark: str) -> dict[str, str]:
        """Sample id -> reason, for samples excluded for every method and backbone of ``benchmark``
        (an excluding status in any of its runs, e.g. ``init_failed in full, mem0``)."""
        seen: dict[str, dict[str, list[str]]] = {}
        for s in self.merged_samples(benchmark):
            reason = s.excluded_reason
            if reason:
                seen.setdefault(s.sample_id, {}).setdefault(reason, []).append(
                    f"{s.run.backbone}/{s.run.method}")
        return {sid: "; ".join(f"{reason} in {', '.join(sorted(where))}" for reason, where in sorted(by.items()))
                for sid, by in sorted(seen.items())}

    def samples_with_exclusions(self, benchmark: str | None = None, *, family: str | None = None,
                                ) -> list[tuple[SampleRecord, dict[str, str]]]:
        """Each merged sample with its benchmark's exclusions (sample id -> why), computed once per benchmark."""
        excluded: dict[str, dict[str, str]] = {}
        out = []
        for s in self.selected_samples(benchmark, family=family):
            if s.run.benchmark not in excluded:
                excluded[s.run.benchmark] = self.excluded(s.run.benchmark)
            out.append((s, excluded[s.run.benchmark]))
        return out

    def scored_samples(self, benchmark: str | None = None, *, family: str | None = None) -> list[SampleRecord]:
        """Samples that enter the scores: ok, errored or missing, and not excluded for the benchmark."""
        out = []
        for s, ex in self.samples_with_exclusions(benchmark, family=family):
            if s.sample_id in ex or not s.scored:
                continue
            out.append(s)
        return out

    def _task_lists(self, benchmark: str | None) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """(benchmark, sample id) -> a recorded task list (to name the tasks of an errored sample
        that recorded none, as old runners wrote them)."""
        out: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for s in self.merged_samples(benchmark, family=LOCOEVAL):
            tasks = s.result.get("tasks")
            if isinstance(tasks, list) and tasks and all("req_id" in t for t in tasks):
                out.setdefault((s.run.benchmark, s.sample_id), tasks)
        return out

    def sample_tasks(self, s: SampleRecord, known: dict[tuple[str, str], list[dict[str, Any]]] | None = None
                     ) -> list[dict[str, Any]]:
        """The tasks a scored sample counts: its own for ``ok``; for an errored or missing one every
        task of the sample as failed (its recorded list, else another run's list of the same sample,
        else ``n_tasks`` placeholders ``#1..``)."""
        tasks = s.result.get("tasks")
        if s.ok:
            if not isinstance(tasks, list):
                raise RecordError(f"{s.path / rec.RESULT}: status ok but no 'tasks' list")
            return tasks
        if isinstance(tasks, list) and tasks:
            return [{**t, "passed": False, "outcome": t.get("outcome") or "not_run"} for t in tasks]
        known = known if known is not None else self._task_lists(s.run.benchmark)
        borrowed = known.get((s.run.benchmark, s.sample_id))
        if borrowed:
            return [{"req_id": t["req_id"], "namespace": t.get("namespace"), "outcome": "not_run", "passed": False}
                    for t in borrowed]
        n = s.result.get("n_tasks")
        if n is None:
            msg = f"{s.path / rec.RESULT}: {s.status} sample records neither 'tasks' nor 'n_tasks'; it counts 0 tasks"
            if msg not in self.warnings:
                self.warnings.append(msg)
            return []
        return _placeholder_tasks(int(n))

    # ------------------------------------------------------------------ frames
    def samples_frame(self, benchmark: str | None = None, *, family: str | None = None,
                      tokens: bool = True) -> "Any":
        """One row per sample: keys, status, ``errored`` / ``excluded_reason``, result fields and
        per-sample token and cost sums (unfinished folders have no row)."""
        import pandas as pd

        rows = []
        for s, ex in self.samples_with_exclusions(benchmark, family=family):
            r = s.result
            row: dict[str, Any] = {
                "benchmark": s.run.benchmark, "backbone": s.run.backbone, "method": s.run.method,
                "run_id": s.run.run_id, "repeat": s.run.repeat, "family": s.run.family, "sample_id": s.sample_id,
                "status": s.status, "error": r.get("error"), "errored": s.errored, "missing": s.missing,
                "excluded_reason": ex.get(s.sample_id), "scored": s.scored and s.sample_id not in ex,
                "model": s.run.models.get("backbone"),
            }
            for k, v in r.items():
                if k in row or k in ("tasks", "cost_usd") or isinstance(v, (dict, list)):
                    continue
                row[k] = v
            if s.run.family == LOCOEVAL:
                row.setdefault("repo_cluster", r.get("repo_cluster") or r.get("project"))
            if tokens:
                row.update(s.token_summary)
            rows.append(row)
        frame = pd.DataFrame(rows)
        if not frame.empty:
            num_cols = [c for c in frame.columns if c.startswith("tok_") or c.startswith("cost_")
                        or c in ("n_events", "n_events_without_cost")]
            frame[num_cols] = frame[num_cols].fillna(0)
        return frame

    def tasks_frame(self, benchmark: str | None = None) -> "Any":
        """One row per task of every scored LoCoEval-format sample: an ok sample's tasks as
        recorded, an errored or missing sample's tasks all failed (``errored`` / ``missing`` true,
        outcome ``not_run``)."""
        import pandas as pd

        rows = []
        known = self._task_lists(benchmark)
        for s in self.scored_samples(benchmark, family=LOCOEVAL):
            r = s.result
            tasks = self.sample_tasks(s, known)
            for t in tasks:
                if "req_id" not in t or (s.ok and "passed" not in t):
                    raise RecordError(f"{s.path / rec.RESULT}: task without 'req_id'/'passed': {t}")
                rows.append({
                    "benchmark": s.run.benchmark, "backbone": s.run.backbone, "method": s.run.method,
                    "run_id": s.run.run_id, "repeat": s.run.repeat, "sample_id": s.sample_id, "subset": r.get("subset"),
                    "project": r.get("project"), "repo_cluster": r.get("repo_cluster") or r.get("project"),
                    "n_turns": r.get("n_turns"), "n_tasks": r.get("n_tasks", len(tasks)),
                    "req_id": t["req_id"], "namespace": t.get("namespace"), "outcome": t.get("outcome"),
                    "passed": metrics.task_passed(r, t), "errored": s.errored, "missing": s.missing,
                })
        cols = ["benchmark", "backbone", "method", "run_id", "repeat", "sample_id", "subset", "project", "repo_cluster",
                "n_turns", "n_tasks", "req_id", "namespace", "outcome", "passed", "errored", "missing"]
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
        """One row per run: keys, models, sample status counts, cost and the manifest fields."""
        out = []
        for r in self.runs:
            counts: dict[str, int] = {}
            for s in r.samples:
                counts[s.status] = counts.get(s.status, 0) + 1
            if r.unfinished:
                counts["unfinished"] = len(r.unfinished)
            cost = r.summary.get("cost_usd")
            if cost is None:
                cost = sum(s.token_summary.get("cost_usd_all", 0.0) for s in r.samples)
            out.append({**r.manifest, "benchmark": r.benchmark, "backbone": r.backbone, "method": r.method,
                        "run_id": r.run_id, "model": r.models.get("backbone"), "user_model": r.models.get("user"),
                        "judge_model": r.models.get("judge"), "scripted": r.scripted, "path": str(r.path),
                        "status_counts": counts, "cost_usd": float(cost or 0.0),
                        "n_shards": r.manifest.get("n_shards") or (len(r.shards) or None),
                        "budgets": r.budgets or None})
        return out

    def budgets(self, benchmark: str | None = None) -> dict[tuple[str, str], dict[str, Any]]:
        """(backbone, method) -> the retrieval budgets its runs recorded (Table 6); runs of one
        setting with different budgets are reported in ``warnings`` (the newest run's win)."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for r in sorted(self.select(benchmark), key=lambda r: str(r.manifest.get("started") or "")):
            b = r.budgets
            if not b:
                continue
            calibration = _section(r.config, "method").get("calibration")
            if isinstance(calibration, dict) and calibration:
                b = {**b, "calibrated": True, "tolerance": calibration.get("tolerance"),
                     "calibration_within_tolerance": calibration.get("within_tolerance")}
            key = (r.backbone, r.method)
            if key in out and out[key] != b:
                msg = f"{r.benchmark}/{r.backbone}/{r.method}: runs used different budgets ({out[key]} and {b})"
                if msg not in self.warnings:
                    self.warnings.append(msg)
            out[key] = b
        return out

    # ------------------------------------------------------------------ validity
    def validity(self, benchmark: str) -> "Any":
        """One row per (backbone, method) of ``benchmark``: what it was scored on.

        Columns: backbone, method, model, user_model, judge_model, scripted, run_ids, repeats,
        selected (manifest ``n_selected``, summed over repeats), records, scored samples (ok +
        errored + missing, over all repeats), tasks (LoCoEval), errored, missing (selected, no
        finished record: counted as failed), excluded and why (for every method alike), unfinished
        (folders without result.json, interrupted records)."""
        import pandas as pd

        runs = self.select(benchmark)
        excluded = self.excluded(benchmark)
        merged = self.merged_samples(benchmark)
        selected = self.selected_samples(benchmark)
        known = self._task_lists(benchmark)
        rows = []
        for bb in labels.order_backbones({r.backbone for r in runs}):
            for m in labels.order_methods({r.method for r in runs if r.backbone == bb}):
                group = [r for r in runs if r.backbone == bb and r.method == m]
                mine = [s for s in selected if s.run.backbone == bb and s.run.method == m]
                recorded = [s for s in merged if s.run.backbone == bb and s.run.method == m]
                scored = [s for s in mine if s.scored and s.sample_id not in excluded]
                unfinished = sum(1 for s in recorded if Status.parse(s.status).unfinished) + sum(len(r.unfinished) for r in group)
                n_tasks = (sum(len(self.sample_tasks(s, known)) for s in scored)
                           if group[0].family == LOCOEVAL else None)
                mine_excluded = sorted({s.sample_id for s in recorded if s.sample_id in excluded})
                models = group[0].models
                rows.append({
                    "benchmark": benchmark, "backbone": bb, "method": m, "model": models.get("backbone"),
                    "user_model": models.get("user"), "judge_model": models.get("judge"),
                    "scripted": any(r.scripted for r in group),
                    "run_ids": ", ".join(sorted({r.run_id + (f" ({r.manifest.get('n_shards')} shards)"
                                                             if r.manifest.get("n_shards") else "") for r in group})),
                    "repeats": len({r.repeat for r in group}),
                    "selected": sum(int(r.manifest.get("n_selected") or 0) for r in group) or None,
                    "records": len(recorded), "scored": len(scored), "tasks": n_tasks,
                    "errored": sum(1 for s in scored if s.errored),
                    "missing": sum(1 for s in scored if s.missing),
                    "excluded": len(mine_excluded),
                    "excluded_why": "; ".join(f"{sid}: {excluded[sid]}" for sid in mine_excluded),
                    "unfinished": unfinished,
                })
        return pd.DataFrame(rows)


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
                    labels.remember_label("backbone", r.backbone, labels.backbone_config_label(name))
    for r in runs:
        labels.remember_model(r.backbone, r.models.get("backbone"))


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
                runset.warnings.append(f"{s.path}: status {s.status}: counted as failed (missing); resume the run")
        if selection is not None:
            extra = sorted({s.sample_id for s in r.samples} - set(selection))
            if extra:
                runset.warnings.append(f"{r.path}: {len(extra)} record(s) outside the manifest's selection "
                                       f"(scored all the same): {', '.join(extra[:5])}")
        else:
            runset.warnings.append(f"{r.path}: manifest without 'selected' (written before it): selection taken "
                                   "from the records, their folders and n_selected")
    return runset
