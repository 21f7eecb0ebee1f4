"""Analysis of run records: the paper's tables and figures, bootstrap statistics, coverage judge.

Everything here reads only run records on disk (see docs/RECORDS.md). Modules:
``records`` (loader and pandas frames), ``tokens`` (purpose accounting), ``stats`` (cluster and
paired bootstrap), ``tables`` (Tables 1, 3, 4, 6), ``cab_tables`` (Tables 2, 5), ``coverage``
(GT-item coverage judge and aggregation), ``figures`` (Figures 5, 6, 8), ``tsne`` (Figure 7),
``report`` (everything at once + report.md). Heavy libraries are imported inside functions.
"""

from benchmarks.analysis.records import RunSet, load_runs

__all__ = ["RunSet", "load_runs"]
