"""CodeAssistBench tables: Table 2 (correctness, verbosity, turns) and Table 5 (tokens and cost per
issue and per turn, Eq. 12–13).

The metric definitions are the CAB benchmark's own (:mod:`benchmarks.cab.metrics`); this module
fixes the issue set and lays the numbers out as the paper does:

* every method of a backbone is scored on the same issues: an issue that any run of the benchmark
  recorded as ``init_failed`` / ``docker_unavailable`` (or with an ``excluded_reason``) is
  excluded for **every** method (the paper: the same 268 issues for every method);
* ``judge_error`` (after the run's retry with the same judge) and ``error`` issues are scored as
  INCORRECT and shown in an ``Errored`` row;
* an issue the run's manifest selected without a finished record (no result.json, or
  ``interrupted``) - or, for records passed in directly, scored for another method of the backbone
  but without a record here - is ``missing``: scored as INCORRECT, shown in a ``Missing`` row, and
  the method's Correct cell carries ``‡`` (incomplete);
* with repeats (``run.repeat=K``) every percentage is the mean ± sd over the repeats (counts summed);
* :func:`cab_paired` pairs ReConMem with every other method on the same issues (and repeat): the
  Correct and Partially-Correct rate differences with an exact McNemar test (Table 2's paired tests).

Columns follow the paper's order (Native Strands, Full History, Mem0, ReConMem); any other CAB
method present in the records is shown after them.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from benchmarks.analysis import labels
from benchmarks.analysis.labels import Labels
from benchmarks.analysis.render import MISSING, Block, Table, fmt_int, fmt_num, fmt_usd, is_missing

NAN = float("nan")
EXCLUDED_COUNTS = ("init_failed_count", "docker_unavailable_count", "judge_error_count", "error_count")
INCOMPLETE = "‡"
SCORED_STATES = ("judged", "errored", "missing")


def cab_records(runs: Any, benchmark: str | None = None) -> list[dict[str, Any]]:
    """Every CAB issue record (one per backbone × method × issue, run ids and shards merged) with
    its keys and ``excluded_reason`` (the issue's exclusion for every method, or None).

    ``turns`` falls back to ``n_turns``; a record without ``tokens`` / ``costs`` gets them from its
    ledger via :func:`benchmarks.cab.metrics.issue_tokens` / ``issue_costs``.
    """
    from benchmarks.analysis.run_records import CAB
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
            events = s.dir.ledger()
            if not isinstance(r.get("tokens"), dict) and events:
                r["tokens"] = issue_tokens(events)
            if not isinstance(r.get("costs"), dict):
                r["costs"] = issue_costs(events)
        out.append({"benchmark": s.run.benchmark, "backbone": s.run.backbone, "method": s.run.method,
                    "repeat": s.run.repeat, "excluded_reason": ex.get(s.sample_id), "result": r})
    return out


def _excluded_ids(records: Sequence[dict[str, Any]]) -> set[str]:
    """Issues excluded for every method: the records' ``excluded_reason`` or an excluding status."""
    from benchmarks.records import excluded_reason

    return {str(r["result"].get("sample_id")) for r in records
            if r.get("excluded_reason") or excluded_reason(r["result"])}


def _averaged(key: str) -> bool:
    return key.endswith(("_pct", "_per_issue", "_per_turn")) or key == "avg_turns"


def _over_repeats(per: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One row from the repeats' summaries: rates and means as mean (``<key>_sd``: sample sd), counts summed."""
    if len(per) == 1:
        return dict(per[0])
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for p in per for k in p):
        vals = [p.get(key) for p in per]
        if _averaged(key):
            nums = [float(v) for v in vals if v is not None and not is_missing(v)]
            out[key] = sum(nums) / len(nums) if nums else None
            out[f"{key}_sd"] = (pd.Series(nums).std(ddof=1) if len(nums) > 1 else None)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals if v is not None):
            out[key] = sum(v for v in vals if v is not None)
        else:
            out[key] = vals[0]
    return out


def cab_summary(records: Sequence[dict[str, Any]], *, methods: Sequence[str] | None = labels.CAB_METHODS) -> pd.DataFrame:
    """One row per (backbone, method): :func:`benchmarks.cab.metrics.summarize` over the common
    issue set, with ``excluded`` (issues excluded for every method), ``missing`` (scored as
    INCORRECT) and, with repeats, mean ± sd over the repeats (``n_repeats``, ``<rate>_sd``).

    ``methods`` are always listed (missing ones as empty rows); methods present in the records are
    added after them."""
    from benchmarks.cab.metrics import issue_state, summarize
    from benchmarks.records import missing_result

    rows = []
    excluded = _excluded_ids(records)
    backbones = labels.order_backbones({r["backbone"] for r in records})
    for bb in backbones:
        present = {r["method"] for r in records if r["backbone"] == bb}
        repeats = sorted({int(r.get("repeat") or 1) for r in records if r["backbone"] == bb})
        universe = {rep: {str(r["result"].get("sample_id")) for r in records if r["backbone"] == bb
                          and int(r.get("repeat") or 1) == rep and issue_state(r["result"], excluded) in SCORED_STATES}
                    for rep in repeats}
        for m in dict.fromkeys([*(methods or ()), *labels.order_methods(present)]):
            row: dict[str, Any] = {"backbone": bb, "method": m, "n_records": 0}
            per = []
            for rep in repeats:
                results = [r["result"] for r in records if r["backbone"] == bb and r["method"] == m
                           and int(r.get("repeat") or 1) == rep]
                if not results:
                    continue
                have = {str(r.get("sample_id")) for r in results}
                stubs = [dict(missing_result({"sample_id": sid, "task_id": sid}))
                         for sid in sorted(universe[rep] - have)]
                row["n_records"] += len(results)
                per.append(summarize([*results, *stubs], excluded_ids=excluded))
            if per:
                row.update(_over_repeats(per))
                row["excluded"] = len(excluded)
                row["n_repeats"] = len(per)
            rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.astype({c: float for c in frame.columns if _averaged(c.removesuffix("_sd"))}) if len(frame) else frame


def cab_paired(records: Sequence[dict[str, Any]], *, proposed: str = labels.PROPOSED) -> pd.DataFrame:
    """ReConMem against every other method of a backbone on the issues both scored (same repeat):
    Correct and Partially-Correct rates, their difference (pp) and an exact McNemar test. An errored
    or missing issue is neither correct nor partially correct."""
    from benchmarks.analysis.stats import mcnemar
    from benchmarks.cab.metrics import issue_state

    excluded = _excluded_ids(records)
    outcome: dict[tuple[str, str], dict[tuple[int, str], tuple[bool, bool]]] = {}
    for r in records:
        res = r["result"]
        state = issue_state(res, excluded)
        if state not in SCORED_STATES:
            continue
        verdict = res.get("verdict") if state == "judged" else None
        outcome.setdefault((r["backbone"], r["method"]), {})[(int(r.get("repeat") or 1), str(res.get("sample_id")))] = (
            verdict == "CORRECT", verdict == "PARTIALLY CORRECT")
    rows = []
    for bb in labels.order_backbones({r["backbone"] for r in records}):
        mine = outcome.get((bb, proposed))
        if not mine:
            continue
        others = labels.order_methods({m for (b, m) in outcome if b == bb and m != proposed})
        for m in others:
            theirs = outcome[(bb, m)]
            keys = sorted(set(mine) & set(theirs))
            if not keys:
                continue
            for i, metric in enumerate(("correct", "partially_correct")):
                a = [mine[k][i] for k in keys]
                b = [theirs[k][i] for k in keys]
                t = mcnemar(a, b)
                rows.append({"backbone": bb, "method": proposed, "baseline": m, "metric": metric,
                             "n_paired": t.n_items, "rate_pct": 100 * sum(a) / len(a),
                             "baseline_rate_pct": 100 * sum(b) / len(b), "diff_pp": 100 * t.difference,
                             "only_method": t.a_only, "only_baseline": t.b_only, "p_value": t.p_value})
    return pd.DataFrame(rows, columns=["backbone", "method", "baseline", "metric", "n_paired", "rate_pct",
                                       "baseline_rate_pct", "diff_pp", "only_method", "only_baseline", "p_value"])


def _blocks(summary: pd.DataFrame, spec: Sequence[tuple[str, str, Any]], names: Labels, *,
            dagger_key: str | None = None) -> list[Block]:
    blocks = []
    for bb in labels.order_backbones(set(summary["backbone"])) if len(summary) else []:
        sel = summary[summary["backbone"] == bb].set_index("method")
        methods = list(sel.index)
        columns = [("Metric",)] + [(names.method_label(m),) for m in methods]
        rows = []
        for name, key, fmt in spec:
            line = [name]
            for m in methods:
                if key not in sel or is_missing(sel.loc[m, key]) or not sel.loc[m, "n_records"]:
                    line.append(MISSING)
                    continue
                text = fmt(sel.loc[m, key])
                sd = sel.loc[m, f"{key}_sd"] if f"{key}_sd" in sel else None
                if sd is not None and not is_missing(sd) and int(sel.loc[m].get("n_repeats") or 1) > 1:
                    text += f" ± {float(sd):.2f}"
                if key == dagger_key and "missing" in sel and not is_missing(sel.loc[m, "missing"]) \
                        and int(sel.loc[m, "missing"]) > 0:
                    text += INCOMPLETE
                line.append(text)
            rows.append(line)
        blocks.append(Block(columns=columns, rows=rows, heading=names.backbone_label(bb)))
    return blocks


def _count(v: Any) -> str:
    return str(int(v))


def table2(summary: pd.DataFrame, paired: pd.DataFrame | None = None, *, names: Labels | None = None) -> Table:
    """Correct / Partially Correct / Appropriate / Verbose / Terse (%) and Avg. Turns per method,
    over the same scored issues for every method, with the errored, missing and excluded counts;
    ``paired`` (:func:`cab_paired`) adds a block of ReConMem's Δ against each method with its McNemar p."""
    pct = (lambda v: fmt_num(v, 2))
    spec = [("Correct (%)", "correct_pct", pct), ("Partially Correct (%)", "partially_correct_pct", pct),
            ("Appropriate (%)", "appropriate_pct", pct), ("Verbose (%)", "verbose_pct", pct),
            ("Terse (%)", "terse_pct", pct), ("Avg. Turns", "avg_turns", pct),
            ("Scored issues", "scored", _count), ("Errored issues", "errored", _count),
            ("Missing issues (counted incorrect)", "missing", _count),
            ("Excluded issues (all methods)", "excluded", _count)]
    cols = ["backbone", "method", "correct_pct", "partially_correct_pct", "incorrect_pct", "errored_pct",
            "missing_pct", "appropriate_pct", "verbose_pct", "terse_pct", "avg_turns", "scored", "evaluated", "errored",
            "missing", "excluded", "n_repeats", "correct_pct_sd", "partially_correct_pct_sd", *EXCLUDED_COUNTS]
    data = summary.reindex(columns=cols)
    notes = ["Percentages over the scored issues, the same for every method of a backbone: an errored issue "
             "(judge_error after the retry with the same judge, or a crash after the run's retries) counts as "
             "Incorrect and has no verbosity label; Terse = the judge's CONCISE. Excluded for every method alike: "
             "issues any run recorded as init_failed or docker_unavailable (see the validity block). "
             f"Missing = selected issues without a finished record (no result.json, or interrupted): counted as "
             f"Incorrect with no verbosity label; {INCOMPLETE} = the method has some (incomplete)."]
    if len(summary) and "n_repeats" in summary and pd.to_numeric(summary["n_repeats"], errors="coerce").max() > 1:
        notes.append("Repeats (run.repeat): percentages are the mean ± sample sd over the repeats; issue counts are "
                     "summed over the repeats.")
    names = names if names is not None else Labels()
    blocks = _blocks(summary, spec, names, dagger_key="correct_pct")
    if paired is not None and len(paired):
        for bb in labels.order_backbones(set(paired["backbone"])):
            sel = paired[paired["backbone"] == bb]
            rows = []
            for _, r in sel.iterrows():
                rows.append([f"{names.method_label(r['method'])} vs {names.method_label(r['baseline'])}",
                             "Correct" if r["metric"] == "correct" else "Partially Correct", str(int(r["n_paired"])),
                             fmt_num(r["rate_pct"], 2), fmt_num(r["baseline_rate_pct"], 2),
                             f"{r['diff_pp']:+.2f}", f"{int(r['only_method'])} / {int(r['only_baseline'])}",
                             f"{r['p_value']:.3f}"])
            blocks.append(Block(columns=[("Comparison",), ("Rate",), ("Issues paired",), ("Method (%)",),
                                         ("Baseline (%)",), ("Δ (pp)",), ("Discordant (method / baseline)",),
                                         ("McNemar p",)],
                                rows=rows, heading=f"{names.backbone_label(bb)}: paired tests"))
        notes.append("Paired tests: the same issues (and repeat) scored for both methods; Δ = method − baseline rate; "
                     "exact two-sided McNemar test on the discordant issues (binomial, p = 1 when there are none). "
                     "An errored or missing issue is neither correct nor partially correct.")
    return Table("table2", "Table 2. Performance on CodeAssistBench", data, blocks, notes)


def table5(summary: pd.DataFrame, *, names: Labels | None = None) -> Table:
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
    return Table("table5", "Table 5. Token consumption on CodeAssistBench", data,
                 _blocks(summary, spec, names if names is not None else Labels()), notes)
