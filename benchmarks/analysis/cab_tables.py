"""CodeAssistBench tables: Table 2 (correctness, verbosity, turns) and Table 5 (tokens per issue and
per turn, Eq. 12–13).

The metric definitions are the CAB benchmark's own (:mod:`benchmarks.cab.metrics`: evaluated issues
are ``status == "ok"``; ``init_failed`` / ``docker_unavailable`` / ``judge_error`` / ``error`` are
excluded and counted; maintainer vs memory tokens by ledger ``role`` / purpose); this module only
groups the records by backbone and method and lays the numbers out as the paper does.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from benchmarks.analysis import labels
from benchmarks.analysis.render import MISSING, Block, Table, fmt_int, fmt_num, is_missing

NAN = float("nan")
EXCLUDED_COUNTS = ("init_failed_count", "docker_unavailable_count", "judge_error_count", "error_count")


def cab_records(runs: Any, benchmark: str | None = None) -> list[dict[str, Any]]:
    """Every CAB issue record (one per backbone × method × issue, run ids merged) with its keys.

    ``turns`` falls back to ``n_turns``; a record without ``tokens`` gets them from its ledger via
    :func:`benchmarks.cab.metrics.issue_tokens`.
    """
    from benchmarks.analysis.records import CAB
    from benchmarks.cab.metrics import issue_tokens

    out = []
    for s in runs.merged_samples(benchmark, family=CAB):
        r = dict(s.result)
        r.setdefault("sample_id", s.sample_id)
        if "turns" not in r and "n_turns" in r:
            r["turns"] = r["n_turns"]
        if r.get("status") == "ok" and not isinstance(r.get("tokens"), dict):
            r["tokens"] = issue_tokens(s.ledger())
        out.append({"benchmark": s.run.benchmark, "backbone": s.run.backbone, "method": s.run.method, "result": r})
    return out


def cab_summary(records: Sequence[dict[str, Any]], *, methods: Sequence[str] | None = labels.CAB_METHODS) -> pd.DataFrame:
    """One row per (backbone, method): :func:`benchmarks.cab.metrics.summarize` of its issues.

    ``methods`` are always listed (missing ones as empty rows); methods present in the records are
    added after them."""
    from benchmarks.cab.metrics import summarize

    rows = []
    backbones = labels.order_backbones({r["backbone"] for r in records})
    for bb in backbones:
        present = {r["method"] for r in records if r["backbone"] == bb}
        for m in labels.order_methods(set(methods or ()) | present):
            results = [r["result"] for r in records if r["backbone"] == bb and r["method"] == m]
            row: dict[str, Any] = {"backbone": bb, "method": m, "n_records": len(results)}
            if results:
                row.update(summarize(results))
                row["excluded"] = sum(int(row.get(k) or 0) for k in EXCLUDED_COUNTS)
            rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.astype({c: float for c in frame.columns if c.endswith(("_pct", "_per_issue", "_per_turn"))
                         or c == "avg_turns"}) if len(frame) else frame


def _blocks(summary: pd.DataFrame, spec: Sequence[tuple[str, str, Any]]) -> list[Block]:
    blocks = []
    for bb in labels.order_backbones(set(summary["backbone"])) if len(summary) else []:
        sel = summary[summary["backbone"] == bb].set_index("method")
        methods = list(sel.index)
        columns = [("Metric",)] + [(labels.method_label(m),) for m in methods]
        rows = []
        for name, key, fmt in spec:
            rows.append([name] + [MISSING if key not in sel or is_missing(sel.loc[m, key]) or not sel.loc[m, "n_records"]
                                  else fmt(sel.loc[m, key]) for m in methods])
        blocks.append(Block(columns=columns, rows=rows, heading=labels.backbone_label(bb)))
    return blocks


def table2(summary: pd.DataFrame) -> Table:
    """Correct / Partially Correct / Appropriate / Verbose / Terse (%) and Avg. Turns per method."""
    pct = (lambda v: fmt_num(v, 2))
    spec = [("Correct (%)", "correct_pct", pct), ("Partially Correct (%)", "partially_correct_pct", pct),
            ("Appropriate (%)", "appropriate_pct", pct), ("Verbose (%)", "verbose_pct", pct),
            ("Terse (%)", "terse_pct", pct), ("Avg. Turns", "avg_turns", pct),
            ("Evaluated issues", "evaluated", lambda v: str(int(v))), ("Excluded issues", "excluded", lambda v: str(int(v)))]
    cols = ["backbone", "method", "correct_pct", "partially_correct_pct", "incorrect_pct", "appropriate_pct",
            "verbose_pct", "terse_pct", "avg_turns", "evaluated", "excluded", *EXCLUDED_COUNTS]
    data = summary.reindex(columns=cols)
    notes = ["Percentages over evaluated (judged) issues; Terse = the judge's CONCISE. Excluded and not scored: "
             "init_failed, docker_unavailable, judge_error and errored issues (benchmarks.cab.metrics)."]
    return Table("table2", "Table 2. Performance on CodeAssistBench", data, _blocks(summary, spec), notes)


def table5(summary: pd.DataFrame) -> Table:
    """Maintainer / Memory / Combined tokens per issue (mean) and per turn (macro over issues)."""
    spec = [(f"{k.capitalize()} Tok./{u.capitalize()}", f"{k}_tokens_per_{u}", fmt_int)
            for u in ("issue", "turn") for k in ("maintainer", "memory", "combined")]
    cols = ["backbone", "method", *(key for _, key, _ in spec), "evaluated"]
    data = summary.reindex(columns=cols)
    notes = ["Input + output tokens over evaluated issues; Tok./Turn = mean over issues of tokens / turns (Eq. 13). "
             "Maintainer = the Maintainer Agent's calls; Memory = the external memory mechanism's calls; user agent "
             "and judge excluded (benchmarks.cab.metrics)."]
    return Table("table5", "Table 5. Token consumption on CodeAssistBench", data, _blocks(summary, spec), notes)
