"""GT-item coverage of ReConMem's retrieved contexts (paper §3.3.1 Eq. 11, §4.4, Fig. 6): the
aggregation of the judge's ``coverage.json`` records.

The judging (views, the LLM judge, whole runs) is a scorer step over finished runs,
:mod:`benchmarks.locoeval.coverage_judge` (``python -m scripts.coverage``); this module only reads
what it wrote: per task-run coverage of the ``original``, ``dual`` and ``combined`` views, the
complementarity split, the macro averages with repository-cluster bootstrap CIs and the report table.
Task-runs whose judgment is incomplete are left out of the aggregates (and counted).
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from benchmarks.locoeval.coverage_judge import VIEWS

CATEGORIES = ("only_original", "both", "only_dual", "neither")
CATEGORY_LABELS = {"only_original": "Original only", "both": "Both", "only_dual": "Dual only", "neither": "Neither"}
VIEW_LABELS = {"original": "Original-query", "dual": "Dual-query", "combined": "Combined"}


# ---------------------------------------------------------------------------- aggregation

def task_run_coverage(entry: dict[str, Any]) -> dict[str, Any] | None:
    """Per-task-run coverage fractions and complementarity split; None if not judged."""
    views = entry.get("views")
    items = entry.get("gt_item_ids") or []
    if not views or not items:
        return None
    n = len(items)
    sup = {v: set(views[v]["supported"]) & set(items) for v in VIEWS}
    o, d = sup["original"], sup["dual"]
    return {"n_items": n, "complete": all(views[v].get("complete", False) for v in VIEWS),
            **{f"cov_{v}": len(sup[v]) / n for v in VIEWS},
            "only_original": len(o - d) / n, "both": len(o & d) / n, "only_dual": len(d - o) / n,
            "neither": (n - len(o | d)) / n}


def coverage_frame(samples: Iterable[Any]) -> "Any":
    """One row per judged task-run from the samples' ``coverage.json`` (SampleRecords of ok samples)."""
    import pandas as pd

    rows = []
    for s in samples:
        if not s.ok:
            continue
        cov = s.dir.coverage()
        if not cov:
            continue
        for entry in cov.get("task_runs") or []:
            values = task_run_coverage(entry)
            if values is None:
                continue
            rows.append({"benchmark": s.run.benchmark, "backbone": s.run.backbone, "method": s.run.method,
                         "sample_id": s.sample_id, "req_id": entry["req_id"], "subset": s.result.get("subset"),
                         "repo_cluster": s.result.get("repo_cluster") or s.result.get("project"),
                         "view_source": entry.get("view_source", "provenance"), **values})
    return pd.DataFrame(rows)


SUMMARY_METRICS = (*(f"cov_{v}" for v in VIEWS), *CATEGORIES, "combined_minus_original")


def coverage_summary(frame: "Any", *, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> "Any":
    """Macro-averaged coverage, complementarity shares and the combined − original gain (all in %),
    with percentile CIs from one joint repository-cluster bootstrap over complete task-runs."""
    import pandas as pd

    from benchmarks.analysis.stats import cluster_bootstrap

    cols = ["metric", "estimate", "low", "high", "n_task_runs", "n_clusters", "n_incomplete", "n_provenance_views"]
    if frame is None or frame.empty:
        return pd.DataFrame(columns=cols)
    done = frame[frame["complete"]]
    n_incomplete = int(len(frame) - len(done))
    if done.empty:
        return pd.DataFrame(columns=cols)
    values = np.column_stack([*(done[f"cov_{v}"] for v in VIEWS), *(done[c] for c in CATEGORIES),
                              done["cov_combined"] - done["cov_original"]]) * 100
    ci = cluster_bootstrap(values, done["repo_cluster"].astype(str).to_numpy(), n_resamples=n_resamples, seed=seed,
                           confidence=confidence)
    sources = done["view_source"] if "view_source" in done else pd.Series(["provenance"] * len(done))
    n_provenance = int((sources != "independent").sum())
    return pd.DataFrame([{"metric": m, "estimate": float(ci.estimate[i]), "low": float(ci.low[i]),
                          "high": float(ci.high[i]), "n_task_runs": ci.n_units, "n_clusters": ci.n_clusters,
                          "n_incomplete": n_incomplete, "n_provenance_views": n_provenance}
                         for i, m in enumerate(SUMMARY_METRICS)], columns=cols)


def coverage_table(summary: "Any") -> "Any":
    """The coverage summary as a report table (``coverage.md/.tex/.csv``)."""
    from benchmarks.analysis.render import Block, Table, fmt_num

    names = {**{f"cov_{v}": f"{VIEW_LABELS[v]} coverage" for v in VIEWS},
             **{c: f"Share: {CATEGORY_LABELS[c]}" for c in CATEGORIES},
             "combined_minus_original": "Combined − Original (pp)"}
    rows = [[names.get(r.metric, r.metric), fmt_num(r.estimate, 2), f"[{r.low:.2f}, {r.high:.2f}]"]
            for r in summary.itertuples()]
    notes = []
    if len(summary):
        first = summary.iloc[0]
        notes.append(f"Macro-average over {int(first.n_task_runs)} judged task-runs in {int(first.n_clusters)} "
                     f"repositories; 95% percentile CIs from repository-cluster bootstrap; "
                     f"{int(first.n_incomplete)} task-run(s) with an incomplete judgment excluded.")
        n_prov = int(first.get("n_provenance_views", 0) or 0)
        if n_prov:
            notes.append(f"{n_prov} task-run(s) come from records without independent branch views: their "
                         "original/dual split is the legacy first-route attribution (undercounts 'Both').")
    return Table("coverage", "GT-item coverage of the retrieved contexts (%)", summary,
                 [Block(columns=[("Metric",), ("Value (%)",), ("95% CI",)], rows=rows)], notes)
