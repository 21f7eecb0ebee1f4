"""Tidy pandas views of the counted runs: one row per sample, per task, per ledger event
(:class:`RunFrames`, part of :class:`benchmarks.analysis.records.RunSet`)."""

from __future__ import annotations

from typing import Any, Sequence

from benchmarks import records as rec
from benchmarks.analysis.counting import CountedRuns
from benchmarks.analysis.run_records import LOCOEVAL
from benchmarks.locoeval import metrics
from benchmarks.records import RecordError


class RunFrames(CountedRuns):
    """The frames the tables and figures are computed from."""

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
                    raise RecordError(f"{s.dir.file(rec.RESULT)}: task without 'req_id'/'passed': {t}")
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

    def outside_selection_frame(self, benchmark: str | None = None) -> "Any":
        """One row per record left out because its run's manifest did not select its sample
        (:meth:`CountedRuns.outside_selection`): keys, sample id, subset, status."""
        import pandas as pd

        cols = ["benchmark", "backbone", "method", "run_id", "repeat", "sample_id", "subset", "status"]
        return pd.DataFrame([[s.run.benchmark, s.run.backbone, s.run.method, s.run.run_id, s.run.repeat, s.sample_id,
                              s.result.get("subset"), s.status] for s in self.outside_selection(benchmark)], columns=cols)

    def ledger_frame(self, benchmark: str | None = None, *, methods: Sequence[str] | None = None,
                     ok_only: bool = True) -> "Any":
        """Every ledger event of the selected samples, with the run keys."""
        import pandas as pd

        rows = []
        for s in self.merged_samples(benchmark):
            if (ok_only and not s.ok) or (methods is not None and s.run.method not in methods):
                continue
            for ev in s.dir.ledger():
                rows.append({**ev, "benchmark": s.run.benchmark, "backbone": s.run.backbone,
                             "method": s.run.method, "sample_id": s.sample_id,
                             "subset": s.result.get("subset")})
        return pd.DataFrame(rows)
