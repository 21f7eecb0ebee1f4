"""CodeAssistBench tables: Table 2 (correctness, verbosity, turns) and Table 5 (tokens and cost per
issue and per turn, Eq. 12–13).

The metric definitions are the CAB benchmark's own (:mod:`benchmarks.cab.metrics`); this module
fixes the issue set and lays the numbers out as the paper does:

* every method of a backbone is scored on the same issues: an issue that any run of the benchmark
  recorded as ``init_failed`` / ``docker_unavailable`` (or with an ``excluded_reason``) is
  excluded for **every** method (the paper: the same 268 issues for every method);
* ``judge_error`` (after the run's retry with the same judge) and ``error`` issues are scored as
  INCORRECT and shown in an ``Errored`` row;
* an issue scored for another method of the backbone but without a record here is ``missing`` (the
  cell carries a † and the validity block lists it).

Columns follow the paper's order (Native Strands, Full History, Mem0, ReConMem); any other CAB
method present in the records is shown after them.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from benchmarks.analysis import labels
from benchmarks.analysis.render import MISSING, Block, Table, fmt_int, fmt_num, fmt_usd, is_missing

NAN = float("nan")
EXCLUDED_COUNTS = ("init_failed_count", "docker_unavailable_count", "judge_error_count", "error_count")
DAGGER = "†"


def cab_records(runs: Any, benchmark: str | None = None) -> list[dict[str, Any]]:
    """Every CAB issue record (one per backbone × method × issue, run ids and shards merged) with
    its keys and ``excluded_reason`` (the issue's exclusion for every method, or None).

    ``turns`` falls back to ``n_turns``; a record without ``tokens`` / ``costs`` gets them from its
    ledger via :func:`benchmarks.cab.metrics.issue_tokens` / ``issue_costs``.
    """
    from benchmarks.analysis.records import CAB
    from benchmarks.cab.metrics import issue_costs, issue_tokens

    out = []
    for s, ex in runs.samples_with_exclusions(benchmark, family=CAB):
        r = dict(s.result)
        r.setdefault("sample_id", s.sample_id)
        if "turns" not in r and "n_turns" in r:
            r["turns"] = r["n_turns"]
        needs_ledger = (r.get("status") in ("ok", "judge_error", "error") and
                        (not isinstance(r.get("tokens"), dict) or not isinstance(r.get("costs"), dict)))
        if needs_ledger:
            events = s.ledger()
            if not isinstance(r.get("tokens"), dict) and events:
                r["tokens"] = issue_tokens(events)
            if not isinstance(r.get("costs"), dict):
                r["costs"] = issue_costs(events)
        out.append({"benchmark": s.run.benchmark, "backbone": s.run.backbone, "method": s.run.method,
                    "excluded_reason": ex.get(s.sample_id), "result": r})
    return out


def _excluded_ids(records: Sequence[dict[str, Any]]) -> set[str]:
    """Issues excluded for every method: the records' ``excluded_reason`` or an excluding status."""
    from benchmarks.cab.metrics import EXCLUDING_STATUSES

    return {str(r["result"].get("sample_id")) for r in records
            if r.get("excluded_reason") or r["result"].get("excluded_reason")
            or r["result"].get("status") in EXCLUDING_STATUSES}


def cab_summary(records: Sequence[dict[str, Any]], *, methods: Sequence[str] | None = labels.CAB_METHODS) -> pd.DataFrame:
    """One row per (backbone, method): :func:`benchmarks.cab.metrics.summarize` over the common
    issue set, with ``excluded`` (issues excluded for every method) and ``missing``.

    ``methods`` are always listed (missing ones as empty rows); methods present in the records are
    added after them."""
    from benchmarks.cab.metrics import issue_state, summarize

    rows = []
    excluded = _excluded_ids(records)
    backbones = labels.order_backbones({r["backbone"] for r in records})
    for bb in backbones:
        present = {r["method"] for r in records if r["backbone"] == bb}
        universe = {str(r["result"].get("sample_id")) for r in records if r["backbone"] == bb
                    and issue_state(r["result"], excluded) in ("judged", "errored")}
        for m in dict.fromkeys([*(methods or ()), *labels.order_methods(present)]):
            results = [r["result"] for r in records if r["backbone"] == bb and r["method"] == m]
            row: dict[str, Any] = {"backbone": bb, "method": m, "n_records": len(results)}
            if results:
                row.update(summarize(results, excluded_ids=excluded))
                row["excluded"] = len(excluded)
                have = {str(r.get("sample_id")) for r in results}
                row["missing"] = len(universe - have)
            rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.astype({c: float for c in frame.columns if c.endswith(("_pct", "_per_issue", "_per_turn"))
                         or c == "avg_turns"}) if len(frame) else frame


def _blocks(summary: pd.DataFrame, spec: Sequence[tuple[str, str, Any]], *, dagger_key: str | None = None) -> list[Block]:
    blocks = []
    for bb in labels.order_backbones(set(summary["backbone"])) if len(summary) else []:
        sel = summary[summary["backbone"] == bb].set_index("method")
        methods = list(sel.index)
        columns = [("Metric",)] + [(labels.method_label(m),) for m in methods]
        rows = []
        for name, key, fmt in spec:
            line = [name]
            for m in methods:
                if key not in sel or is_missing(sel.loc[m, key]) or not sel.loc[m, "n_records"]:
                    line.append(MISSING)
                    continue
                text = fmt(sel.loc[m, key])
                if key == dagger_key and "missing" in sel and not is_missing(sel.loc[m, "missing"]) \
                        and int(sel.loc[m, "missing"]) > 0:
                    text += DAGGER
                line.append(text)
            rows.append(line)
        blocks.append(Block(columns=columns, rows=rows, heading=labels.backbone_label(bb)))
    return blocks


def _count(v: Any) -> str:
    return str(int(v))


def table2(summary: pd.DataFrame) -> Table:
    """Correct / Partially Correct / Appropriate / Verbose / Terse (%) and Avg. Turns per method,
    over the same scored issues for every method, with the errored and excluded counts."""
    pct = (lambda v: fmt_num(v, 2))
    spec = [("Correct (%)", "correct_pct", pct), ("Partially Correct (%)", "partially_correct_pct", pct),
            ("Appropriate (%)", "appropriate_pct", pct), ("Verbose (%)", "verbose_pct", pct),
            ("Terse (%)", "terse_pct", pct), ("Avg. Turns", "avg_turns", pct),
            ("Scored issues", "scored", _count), ("Errored issues", "errored", _count),
            ("Excluded issues (all methods)", "excluded", _count)]
    cols = ["backbone", "method", "correct_pct", "partially_correct_pct", "incorrect_pct", "errored_pct",
            "appropriate_pct", "verbose_pct", "terse_pct", "avg_turns", "scored", "evaluated", "errored", "excluded",
            "missing", *EXCLUDED_COUNTS]
    data = summary.reindex(columns=cols)
    notes = ["Percentages over the scored issues, the same for every method of a backbone: an errored issue "
             "(judge_error after the retry with the same judge, or a crash after the run's retries) counts as "
             "Incorrect and has no verbosity label; Terse = the judge's CONCISE. Excluded for every method alike: "
             "issues any run recorded as init_failed or docker_unavailable (see the validity block). "
             f"{DAGGER} = some scored issues have no record for this method (missing)."]
    return Table("table2", "Table 2. Performance on CodeAssistBench", data,
                 _blocks(summary, spec, dagger_key="correct_pct"), notes)


def table5(summary: pd.DataFrame) -> Table:
    """Maintainer / Memory / Combined tokens per issue (mean) and per turn (macro over issues), and
    the cost per issue."""
    spec = [(f"{k.capitalize()} Tok./{u.capitalize()}", f"{k}_tokens_per_{u}", fmt_int)
            for u in ("issue", "turn") for k in ("maintainer", "memory", "combined")]
    spec += [("Combined Cost/Issue (USD)", "combined_cost_per_issue", fmt_usd),
             ("All-calls Cost/Issue (USD)", "all_calls_cost_per_issue", fmt_usd),
             ("Issues with tokens", "n_token_issues", _count), ("Errored issues", "errored", _count)]
    cols = ["backbone", "method", *(key for _, key, _ in spec), "scored", "events_without_cost"]
    data = summary.reindex(columns=cols)
    notes = ["Input + output tokens over the scored issues that recorded a conversation (errored ones included when "
             "they did); Tok./Turn = mean over issues of tokens / turns (Eq. 13). Maintainer = the Maintainer "
             "Agent's calls; Memory = the external memory mechanism's calls; user agent and judge excluded "
             "(benchmarks.cab.metrics). Combined Cost = Σ cost_usd of those calls (what was paid: a cache hit costs $0); "
             "All-calls Cost adds the user agent and the judge."]
    if len(summary) and "events_without_cost" in summary:
        missing = int(pd.to_numeric(summary["events_without_cost"], errors="coerce").fillna(0).sum())
        if missing:
            notes.append(f"{missing} ledger events carry no cost_usd and count as $0 (records written before "
                         "pricing, or a model missing from the price map).")
    return Table("table5", "Table 5. Token consumption on CodeAssistBench", data, _blocks(summary, spec), notes)
