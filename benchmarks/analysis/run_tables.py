"""What each run and each (backbone, method) was scored on, as the report quotes it: the runs'
manifests, their retrieval budgets (Table 6) and the validity block (:class:`RunTables`, part of
:class:`benchmarks.analysis.records.RunSet`)."""

from __future__ import annotations

from typing import Any

from benchmarks.analysis import labels
from benchmarks.analysis.counting import CountedRuns
from benchmarks.analysis.run_records import LOCOEVAL, config_section
from benchmarks.records import Status


class RunTables(CountedRuns):
    """Per-run and per-(backbone, method) tables of the counted runs."""

    def manifests(self) -> list[dict[str, Any]]:
        """One row per run: keys, models, status counts of its selected samples (and of the records
        outside its selection, left out), cost and the manifest fields."""
        out = []
        for r in self.runs:
            counts: dict[str, int] = {}
            for s in r.samples:
                counts[s.status] = counts.get(s.status, 0) + 1
            if r.unfinished:
                counts["unfinished"] = len(r.unfinished)
            if r.outside_selection:
                counts["outside selection (left out)"] = len(r.outside_selection)
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
            calibration = config_section(r.config, "method").get("calibration")
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
        (folders without result.json, interrupted records), outside_selection (records of samples
        their run's manifest did not select: left out) and outside_ids."""
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
                outside = [s.sample_id for r in group for s in r.outside_selection]
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
                    "outside_selection": len(outside), "outside_ids": ", ".join(sorted(set(outside))),
                })
        return pd.DataFrame(rows)
