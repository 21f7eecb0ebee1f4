"""Analysis of run records: the paper's tables and figures, bootstrap statistics, coverage aggregation.

Everything here reads only run records on disk (see docs/RECORDS.md) and makes no model call. Modules:
``records`` (``load_runs``: the ``RunSet`` of every run under some paths), ``run_records`` (one
run and its samples), ``counting`` (what is counted: selection, merging, missing samples,
exclusions), ``frames`` (the pandas frames), ``run_tables`` (manifests, budgets, validity),
``stats`` (cluster and paired bootstrap), ``tables`` (Tables 1, 3, 4, 6), ``cab_tables`` (Tables
2, 5), ``coverage`` (aggregation of the coverage judge's ``coverage.json``), ``figures`` (Figures
5, 6, 8), ``tsne`` (Figure 7), ``report`` (everything at once + report.md). Heavy libraries are
imported inside functions.
"""

from benchmarks.analysis.records import RunSet, load_runs

__all__ = ["RunSet", "load_runs"]
