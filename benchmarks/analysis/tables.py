"""LoCoEval tables of the paper: Table 1 (Pass@1, CR), Table 3 (end-to-end tokens), Table 4
(ReConMem's stage breakdown) and Table 6 (ablations) — pure functions over record frames, laid out
from the compared sets and cells of :mod:`benchmarks.analysis.cells`.

Inputs are ``RunSet.tasks_frame(benchmark)`` (every task of every scored sample; an errored
sample's tasks are failed rows with ``errored`` true) and ``RunSet.samples_frame(benchmark)``
(one row per sample with token and cost sums). What is counted (docs/RECORDS.md):

* Tables 1 and 6 compare their methods over the samples *every compared method of the row* (same
  backbone, same subset, every repeat) was scored on: the intersection of the runs' selections,
  errored and missing samples included (:func:`~benchmarks.analysis.cells.compared_samples`); a run that selected more
  (``run.limit`` / ``run.ids`` elsewhere) is cut to them and named in the notes. Pass@1, the
  strongest baseline, Δ and its paired bootstrap all come from those tasks.
* Pass@1 of a cell (:func:`benchmarks.locoeval.metrics.pass_at_1` over the cell's task rows) =
  passed tasks / all tasks of the method's scored samples in that cell: a sample that errored
  after the run's retries counts its tasks as failed and is shown in the ``Err.`` column next to
  the score.
* CR(M) (:func:`benchmarks.locoeval.metrics.cr`) = Σ input tokens of Full History under M's code
  retriever (:func:`~benchmarks.analysis.cells.reference_method`:
  ``full`` for dense, ``full_bm25`` for a BM25 run, ...) / Σ input tokens of M, both summed over
  the samples that *every compared method of the row* finished ``ok`` (same backbone, same
  subset); the table prints that count; without that Full run CR is missing (—). Only counted
  calls (:func:`benchmarks.accounting.is_counted`: mock-user / judge / coverage-judge calls excluded). Token and cost tables use the same common samples (an
  errored sample's tokens are partial).
* Overall / Average rows need the method on every backbone of the block, else they are missing.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from benchmarks.accounting import is_counted
from benchmarks.analysis import brackets, labels
from benchmarks.analysis.labels import Labels
from benchmarks.analysis.render import (MISSING, Block, Table, fmt_count, fmt_delta, fmt_num, fmt_ratio,
                                        fmt_tokens_k, fmt_usd, is_missing)
from benchmarks.analysis.cells import (CUT_NOTE, ERRORED_NOTE, INCOMPLETE, INCOMPLETE_NOTE, NAN, common_samples,
                                       compared_rows, cost_note, cr_cell, fmt_mean_sd, mean_sd, missing_samples,
                                       of_repeat, ok_samples, paired_cell, pass_cell, reference_method, repeats_of,
                                       row_backbones, scored_mask, subsets_of, unpriced_mark, within_common)
from benchmarks.analysis.stats import PAIRED_EMPTY, paired_statistic_bootstrap
from benchmarks.locoeval import metrics
from reconmem.memory.budgets import BUDGET_NAMES, RECALL_BUDGET_NAMES
from reconmem.platform.llm.purposes import PURPOSES

OVERALL = "overall"
STAGE_LABELS = {**{stage: PURPOSES[stage].label for stage in metrics.STAGES}, "other": "Other"}  # Table 4's columns


# ---------------------------------------------------------------------------- Table 1

def _table1_cells(tasks: pd.DataFrame, samples: pd.DataFrame, methods: Sequence[str], subset: str,
                  backbones: Sequence[str]) -> tuple[dict[tuple[str, str], dict[str, Any]], dict[str, set[str]]]:
    """One repeat's cells: (backbone | overall, method) -> Pass@1, counts and CR; and the CR samples."""
    common = {bb: common_samples(samples, methods, bb, subset) for bb in backbones}
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for bb in backbones:
        for m in methods:
            cells[(bb, m)] = {**pass_cell(tasks, m, [bb], subset),
                              **cr_cell(samples, m, [bb], subset, common={bb: common[bb]})}
            cells[(bb, m)]["n_missing"] = max(cells[(bb, m)]["n_missing"], missing_samples(samples, m, [bb], subset))
    for m in methods:
        if all(not is_missing(cells[(bb, m)]["pass1"]) for bb in backbones):
            cells[(OVERALL, m)] = {**pass_cell(tasks, m, backbones, subset),
                                   **cr_cell(samples, m, backbones, subset, common=common)}
            cells[(OVERALL, m)]["n_missing"] = sum(cells[(bb, m)]["n_missing"] for bb in backbones)
            if any(is_missing(cells[(bb, m)]["cr"]) for bb in backbones):
                cells[(OVERALL, m)]["cr"] = NAN
        else:
            cells[(OVERALL, m)] = {"pass1": NAN, "cr": NAN, "n_common": 0, "n_passed": 0,
                                   **{k: sum(cells[(bb, m)][k] for bb in backbones)
                                      for k in ("n_tasks", "n_samples", "n_errored", "n_missing")}}
    return cells, common


def _over_repeats(per: list[dict[str, Any]]) -> dict[str, Any]:
    """A cell over repeats: mean ± sd of Pass@1 and CR, counts summed."""
    pass1, pass1_sd, n_rep = mean_sd([c["pass1"] for c in per])
    cr, cr_sd, _ = mean_sd([c["cr"] for c in per])
    return {"pass1": pass1, "pass1_sd": pass1_sd, "n_repeats": n_rep, "cr": cr, "cr_sd": cr_sd,
            **{k: sum(int(c.get(k) or 0) for c in per) for k in ("n_tasks", "n_samples", "n_passed", "n_errored",
                                                                  "n_missing", "n_common")}}


def table1(tasks: pd.DataFrame, samples: pd.DataFrame, *, methods: Sequence[str] = labels.TABLE1_METHODS,
           proposed: str = labels.PROPOSED, n_resamples: int = 2000, seed: int = 0,
           names: Labels | None = None) -> Table:
    """Pass@1 (with errored and missing counts) and CR per subset × backbone × method, the Overall
    row, Δ (pp) of ``proposed`` against the strongest *complete* baseline by overall Pass@1 in that
    subset, and a paired repository-cluster bootstrap of that difference over the tasks both methods
    were scored on. Every number of a row is over the samples every compared method of the row was
    scored on (:func:`compared_samples`); the notes name the runs cut to them. With repeats
    (``run.repeat=K``) every number is the mean ± sd over the repeats (each repeat scored on its own;
    the paired bootstrap pools the repeats' paired tasks, repeat i with repeat i). ``names``: the
    runs' labels (:attr:`benchmarks.analysis.records.RunSet.labels`; default the config labels)."""
    names = names if names is not None else Labels()
    baselines = [m for m in methods if m != proposed]
    repeats = repeats_of(tasks, samples)
    multi = len(repeats) > 1
    rows: list[dict[str, Any]] = []
    blocks: list[Block] = []
    notes: list[str] = []
    for subset in subsets_of(tasks, samples):
        backbones = row_backbones(tasks, samples, subset)
        kept, cut = compared_rows(tasks, methods, backbones, subset, names)
        if cut:
            notes.append(f"{subset.capitalize()}: {CUT_NOTE}; runs cut to them: {'; '.join(cut)}.")
        row_tasks, row_samples = within_common(tasks, kept), within_common(samples, kept)
        per_repeat = [_table1_cells(of_repeat(row_tasks, r), of_repeat(row_samples, r), methods, subset, backbones)
                      for r in repeats]
        keys = [*((bb, m) for bb in backbones for m in methods), *((OVERALL, m) for m in methods)]
        cells = {k: _over_repeats([c[k] for c, _ in per_repeat]) for k in keys}
        common = {bb: set().union(*(cm[bb] for _, cm in per_repeat)) for bb in backbones}
        scored = [(cells[(OVERALL, m)]["pass1"], -i, m) for i, m in enumerate(baselines)
                  if not is_missing(cells[(OVERALL, m)]["pass1"]) and not cells[(OVERALL, m)]["n_missing"]]
        passed_over = [m for m in baselines if not is_missing(cells[(OVERALL, m)]["pass1"])
                       and cells[(OVERALL, m)]["n_missing"]]
        best = max(scored)[2] if scored else None
        best_label = names.method_label(best) if best else "strongest complete baseline"
        if passed_over:
            notes.append(f"{subset.capitalize()}: incomplete (missing samples, not candidates for the strongest "
                         f"baseline): {', '.join(names.method_label(m) for m in passed_over)}.")
        columns = [("Model", "")]
        for m in methods:
            columns += [(names.method_label(m), "Pass@1"), (names.method_label(m), "Err."),
                        (names.method_label(m), "Miss."), (names.method_label(m), "CR")]
        columns += [("CR samples", "n"), (f"Δ vs {best_label}", "pp"), ("Paired Δ [95% CI]", "pp"), ("Paired", "p")]
        columns += brackets.table1_columns(names) if brackets.present(tasks) else []
        display: list[list[str]] = []
        for bb in [*backbones, OVERALL]:
            row_bbs = backbones if bb == OVERALL else [bb]
            n_common = sum(len(common[b]) for b in row_bbs)
            line = [names.backbone_label(bb) if bb != OVERALL else "Overall"]
            row_index: dict[str, int] = {}
            for m in methods:
                row_index[m] = len(rows)
                c = cells[(bb, m)]
                has = not is_missing(c["pass1"])
                mark = INCOMPLETE if has and c["n_missing"] else ""
                line += [fmt_mean_sd(c["pass1"], c["pass1_sd"], c["n_repeats"]) + mark,
                         fmt_count(c["n_errored"]) if has else MISSING, fmt_count(c["n_missing"]) if has else MISSING,
                         fmt_mean_sd(c["cr"], c["cr_sd"], c["n_repeats"], fmt_ratio, 1)]
                rows.append({"subset": subset, "backbone": bb, "method": m, "pass1": c["pass1"],
                             "pass1_sd": c["pass1_sd"], "cr": c["cr"], "cr_sd": c["cr_sd"], "n_repeats": c["n_repeats"],
                             "n_tasks": c["n_tasks"], "n_samples": c["n_samples"], "n_errored": c["n_errored"],
                             "n_missing": c["n_missing"], "incomplete": bool(c["n_missing"]),
                             "n_cr_samples": c.get("n_common", 0), "n_common_samples": n_common,
                             "n_compared_samples": sum(len(kept[b]) for b in row_bbs)})
            delta = delta_sd = NAN
            paired = dict(PAIRED_EMPTY)
            if best is not None and proposed in row_index:
                delta, delta_sd, _ = mean_sd([c[(bb, proposed)]["pass1"] - c[(bb, best)]["pass1"] for c, _ in per_repeat])
                if not is_missing(delta):
                    paired = paired_cell(row_tasks, proposed, best, row_bbs, subset, n_resamples, seed)
            mark = INCOMPLETE if proposed in row_index and cells[(bb, proposed)]["n_missing"] and not is_missing(delta) else ""
            if proposed in row_index:
                rows[row_index[proposed]].update({"baseline": best, "delta_pp": delta, "delta_sd_pp": delta_sd, **paired})
            ci = (MISSING if is_missing(paired["paired_diff_pp"]) else
                  f"{paired['paired_diff_pp']:+.3f} [{paired['ci_low_pp']:+.3f}, {paired['ci_high_pp']:+.3f}]")
            n_rep = cells[(bb, proposed)]["n_repeats"] if proposed in row_index else 0
            line += [str(n_common), fmt_mean_sd(delta, delta_sd, n_rep, fmt_delta) + mark, ci + (mark if ci != MISSING else ""),
                     MISSING if is_missing(paired["p_value"]) else f"{paired['p_value']:.3f}"]
            if brackets.present(tasks):  # floor, ceiling and memory headroom beside the methods
                bracket_cells = brackets.bracket_cells(tasks, row_bbs, subset)
                line += brackets.table1_values(bracket_cells)
                rows += brackets.table1_rows(bracket_cells, subset, bb)
            display.append(line)
        blocks.append(Block(columns=columns, rows=display, heading=subset.capitalize()))
    notes.insert(0, "Pass@1 in % over every task of the samples every compared method of the row was scored on (the "
                    "intersection of the runs' selections). " + ERRORED_NOTE + " " + INCOMPLETE_NOTE)
    if multi:
        notes.insert(1, f"Repeats: {len(repeats)} (run.repeat; repeats {', '.join(map(str, repeats))}). Pass@1, CR and Δ "
                        "are the mean ± sample sd over the repeats, each repeat scored on its own; Err. and Miss. "
                        "count sample-runs over all repeats; the paired bootstrap pools the repeats' paired tasks.")
    notes.append("CR = cumulative input tokens of Full History under the method's code retriever (Full History (BM25) "
                 "for a BM25 run; — when that run is absent) / of the method over the samples that every compared "
                 "method of the row finished ok (their number: CR samples); mock-user and judge calls excluded. "
                 "Overall = pooled over the backbones of the block, shown only when the method has every backbone.")
    notes.append(f"Δ = {names.method_label(proposed)} − strongest complete baseline by overall Pass@1 (pp). Paired Δ: "
                 f"the same difference over the tasks both were scored on, 95% percentile CI from {n_resamples} "
                 "repository-cluster bootstrap resamples, two-sided bootstrap p.")
    if brackets.present(tasks):
        notes.append(brackets.HEADROOM_NOTE)
    data = pd.DataFrame(rows, columns=["subset", "backbone", "method", "pass1", "pass1_sd", "cr", "cr_sd", "n_repeats",
                                       "n_tasks", "n_samples", "n_errored", "n_missing", "incomplete", "n_cr_samples",
                                       "n_common_samples", "n_compared_samples", "baseline", "delta_pp", "delta_sd_pp",
                                       "paired_diff_pp", "ci_low_pp", "ci_high_pp", "p_value", "n_paired"])
    return Table("table1", "Table 1. Pass@1 (%) and compression ratio (CR) on LoCoEval", data, blocks, notes)


# ---------------------------------------------------------------------------- Table 3

def table3(samples: pd.DataFrame, *, methods: Sequence[str] = labels.TABLE1_METHODS,
           names: Labels | None = None) -> Table:
    """Average end-to-end tokens (input + output of response and memory calls) and cost per
    conversation, over the samples every compared method of the row finished ok (``names``: the runs' labels)."""
    names = names if names is not None else Labels()
    ok = ok_samples(samples)
    rows, blocks = [], []
    empty = pd.DataFrame()
    for subset in subsets_of(empty, samples):
        backbones = row_backbones(empty, samples, subset)
        columns = [("Model", "")]
        for m in methods:
            columns += [(names.method_label(m), "Tok."), (names.method_label(m), "Cost")]
        columns += [("Samples", "n"), ("Errored / missing", "n")]
        display = []
        per: dict[tuple[str, str], tuple[float, float]] = {}
        for bb in backbones:
            common = common_samples(samples, methods, bb, subset)
            errored = samples[(samples["backbone"] == bb) & (samples["subset"] == subset) & scored_mask(samples)
                              & (samples["status"] != "ok")] if not samples.empty else samples
            line = [names.backbone_label(bb)]
            for m in methods:
                sel = ok[(ok["method"] == m) & (ok["backbone"] == bb) & (ok["subset"] == subset)
                         & ok["sample_id"].isin(common)] if not ok.empty else ok
                tok = float(sel["e2e_tokens"].mean()) if len(sel) else NAN
                cost = float(sel["cost_usd"].mean()) if len(sel) and "cost_usd" in sel else NAN
                per[(bb, m)] = (tok, cost)
                line += [fmt_tokens_k(tok), fmt_usd(cost) + unpriced_mark(sel)]
                rows.append({"subset": subset, "backbone": bb, "method": m, "e2e_tokens_per_conversation": tok,
                             "cost_usd_per_conversation": cost, "n_samples": len(sel),
                             "n_errored": int((errored["method"] == m).sum()) if len(errored) else 0})
            line += [str(len(common)), str(len(errored))]
            display.append(line)
        line = ["Average"]
        for m in methods:
            vals = [per[(bb, m)] for bb in backbones]
            ok_all = vals and not any(is_missing(t) for t, _ in vals)
            tok = float(np.mean([t for t, _ in vals])) if ok_all else NAN
            cost = float(np.mean([c for _, c in vals])) if ok_all and not any(is_missing(c) for _, c in vals) else NAN
            line += [fmt_tokens_k(tok), fmt_usd(cost)]
            rows.append({"subset": subset, "backbone": "average", "method": m, "e2e_tokens_per_conversation": tok,
                         "cost_usd_per_conversation": cost, "n_samples": NAN, "n_errored": NAN})
        line += ["", ""]
        display.append(line)
        blocks.append(Block(columns=columns, rows=display, heading=subset.capitalize()))
    data = pd.DataFrame(rows, columns=["subset", "backbone", "method", "e2e_tokens_per_conversation",
                                       "cost_usd_per_conversation", "n_samples", "n_errored"])
    notes = ["Mean input + output tokens (Tok.) and cost of response-generation and context-management calls per "
             "conversation (mock user and judge excluded), over the samples that every compared method of the row "
             "finished ok (Samples); Errored / missing = scored samples of the row that errored or never finished "
             "(their tokens are partial or absent, so they are left out of token means). Average = mean across the backbones, shown only when all are present."]
    cost = cost_note(ok)
    if cost:
        notes.append(cost)
    if len(repeats_of(samples)) > 1:
        notes.append(f"Repeats: {len(repeats_of(samples))}; token and cost means pool the conversations of every repeat.")
    return Table("table3", "Table 3. Average end-to-end LLM tokens per conversation on LoCoEval", data, blocks, notes)


# ---------------------------------------------------------------------------- Table 4

def table4(samples: pd.DataFrame, *, method: str = labels.PROPOSED,
           methods: Sequence[str] = labels.TABLE1_METHODS, names: Labels | None = None) -> Table:
    """Per-stage tokens per conversation of ``method`` (Turn / Task Generation, Memory Sketching,
    Memory Update, plus Other when any other counted purpose used tokens), their shares and the
    cost per conversation, over the same common samples as Table 3 (``names``: the runs' labels)."""
    names = names if names is not None else Labels()
    ok = ok_samples(samples)
    sel_all = ok[ok["method"] == method] if not ok.empty else ok
    tok_cols = [c for c in samples.columns if c.startswith("tok_")] if not samples.empty else []
    other_cols = [c for c in tok_cols if c[4:] not in metrics.STAGES and is_counted(c[4:])]
    has_other = bool(other_cols) and not sel_all.empty and float(sel_all[other_cols].sum().sum()) > 0
    stages = [*metrics.STAGES, *(["other"] if has_other else [])]
    rows, blocks = [], []
    used = []
    for subset in labels.order_subsets(set(sel_all["subset"].dropna()) if not sel_all.empty else set()):
        backbones = labels.order_backbones(set(sel_all.loc[sel_all["subset"] == subset, "backbone"]))
        columns = [("Model", "")]
        for st in stages:
            columns += [(STAGE_LABELS[st], "Tok./Conv."), (STAGE_LABELS[st], "Share (%)")]
        columns += [("Total", "Tok./Conv."), ("Total", "Cost/Conv."), ("Samples", "n")]
        display = []
        means: dict[str, dict[str, float]] = {}
        unpriced_by_bb: dict[str, str] = {}
        for bb in backbones:
            common = common_samples(samples, [*methods, method], bb, subset)
            sel = sel_all[(sel_all["backbone"] == bb) & (sel_all["subset"] == subset) & sel_all["sample_id"].isin(common)]
            used.append(sel)
            unpriced_by_bb[bb] = unpriced_mark(sel)
            m = {st: float(sel[f"tok_{st}"].mean()) if f"tok_{st}" in sel and len(sel) else 0.0
                 for st in metrics.STAGES}
            if has_other:
                m["other"] = float(sel[other_cols].sum(axis=1).mean()) if len(sel) else 0.0
            m["total"] = float(sel["e2e_tokens"].mean()) if len(sel) else NAN
            m["cost"] = float(sel["cost_usd"].mean()) if len(sel) and "cost_usd" in sel else NAN
            m["n"] = len(sel)
            means[bb] = m
        if backbones:
            means["average"] = {k: float(np.mean([means[bb][k] for bb in backbones])) for k in [*stages, "total", "cost"]}
            means["average"]["n"] = NAN
        for bb in [*backbones, *(["average"] if backbones else [])]:
            m = means[bb]
            line = [names.backbone_label(bb) if bb != "average" else "Average"]
            for st in stages:
                share = 100 * m[st] / m["total"] if m["total"] > 0 else NAN
                line += [fmt_tokens_k(m[st]), fmt_num(share, 2)]
                rows.append({"subset": subset, "backbone": bb, "method": method, "stage": st,
                             "tokens_per_conversation": m[st], "share_pct": share, "cost_usd_per_conversation": NAN,
                             "n_samples": m["n"]})
            unpriced = unpriced_by_bb.get(bb, "")
            line += [fmt_tokens_k(m["total"]), fmt_usd(m["cost"]) + unpriced, "" if is_missing(m["n"]) else str(int(m["n"]))]
            rows.append({"subset": subset, "backbone": bb, "method": method, "stage": "total",
                         "tokens_per_conversation": m["total"], "share_pct": 100.0,
                         "cost_usd_per_conversation": m["cost"], "n_samples": m["n"]})
            display.append(line)
        blocks.append(Block(columns=columns, rows=display, heading=subset.capitalize()))
    data = pd.DataFrame(rows, columns=["subset", "backbone", "method", "stage", "tokens_per_conversation",
                                       "share_pct", "cost_usd_per_conversation", "n_samples"])
    notes = ["Tok./Conv. = mean input + output tokens per conversation over the samples every compared method of the "
             "row finished ok (as Table 3); Share = stage / total. Average row: mean tokens across backbones, share "
             "of the averaged total."]
    cost = cost_note(pd.concat(used) if used else sel_all)
    if cost:
        notes.append(cost)
    if not blocks:
        notes.append(f"No ok records of method '{method}'.")
    if len(repeats_of(samples)) > 1:
        notes.append(f"Repeats: {len(repeats_of(samples))}; token and cost means pool the conversations of every repeat.")
    return Table("table4", f"Table 4. Token breakdown of {names.method_label(method)} on LoCoEval", data, blocks, notes)


# ---------------------------------------------------------------------------- Table 6

DEFAULT_CR_TOLERANCE = 0.05
BUDGETS_HEADER = ", ".join(RECALL_BUDGET_NAMES)  # the Budgets column: the recall budgets the CR calibration searches


def _budget_text(budgets: dict[str, Any] | None) -> str:
    if not budgets:
        return MISSING
    return ", ".join(f"{k}={budgets[k]}" for k in RECALL_BUDGET_NAMES if k in budgets) or MISSING


def cr_match(budgets: dict[str, Any] | None, gaps: Sequence[Any], *, reference: bool = False) -> tuple[str, bool | None]:
    """The Budgets column's label of a configuration and whether it is CR-matched (None: not calibrated).

    A calibrated ablation is "CR-matched" only when the achieved gap |CR / CR(reference) - 1| on the
    samples the table reports is within the calibration's tolerance in every subset; the gaps are
    printed either way."""
    if reference:
        return "(reference)", None
    gap_text = " / ".join(MISSING if is_missing(g) else f"{100 * float(g):+.1f}%" for g in gaps) or MISSING
    if not (budgets or {}).get("calibrated"):
        return f"(ReConMem's budgets, not calibrated; CR gap {gap_text})", None
    tol = float(budgets.get("tolerance") or DEFAULT_CR_TOLERANCE)
    matched = bool(gaps) and all(not is_missing(g) and abs(float(g)) <= tol + 1e-12 for g in gaps)
    if matched:
        return f"(CR-matched ±{100 * tol:g}%: gap {gap_text})", True
    return f"(calibrated, NOT CR-matched: gap {gap_text} vs ±{100 * tol:g}%)", False


def _paired_cr(samples: pd.DataFrame, a: str, b: str, backbone: str, subset: str, common: set[str],
               n_resamples: int, seed: int) -> dict[str, Any]:
    """Paired bootstrap of CR(a) - CR(b) (both against their Full History, :func:`reference_method`; none when
    the two have different references) over the common ok samples (resampling repositories, then
    samples; repeats pooled)."""
    out = {"cr_diff": NAN, "cr_ci_low": NAN, "cr_ci_high": NAN, "cr_p_value": NAN, "cr_n_paired": 0}
    ok = ok_samples(samples)
    reference = reference_method(b)
    if ok.empty or "input_tokens" not in ok or not common or reference_method(a) != reference:
        return out
    keys = ["backbone", "sample_id", *(["repeat"] if "repeat" in ok else [])]
    sel = ok[(ok["backbone"] == backbone) & (ok["subset"] == subset) & ok["sample_id"].isin(common)]
    parts = [sel[sel["method"] == m][keys + ["input_tokens"]].rename(columns={"input_tokens": m})
             for m in (reference, a, b)]
    cluster = sel[sel["method"] == reference][keys + ["repo_cluster"]] if "repo_cluster" in sel else None
    both = parts[0].merge(parts[1], on=keys).merge(parts[2], on=keys) if reference not in (a, b) else None
    if both is None or len(both) < 2:  # one sample: no sampling distribution to speak of
        return {**out, "cr_n_paired": 0 if both is None else len(both)}
    if cluster is not None:
        both = both.merge(cluster, on=keys, how="left")
    vals = both[[reference, a, b]].to_numpy(dtype=float)

    def stat(x: np.ndarray) -> float:
        cr_a, cr_b = metrics.cr(x[:, 0].sum(), x[:, 1].sum()), metrics.cr(x[:, 0].sum(), x[:, 2].sum())
        return NAN if cr_a is None or cr_b is None else float(cr_a - cr_b)

    res = paired_statistic_bootstrap(vals, stat, clusters=both["repo_cluster"].astype(str).to_numpy()
                                     if "repo_cluster" in both else None, n_resamples=n_resamples, seed=seed)
    return {"cr_diff": res.difference, "cr_ci_low": res.low, "cr_ci_high": res.high, "cr_p_value": res.p_value,
            "cr_n_paired": res.n_items}


def _p(x: Any) -> str:
    return MISSING if is_missing(x) else f"{float(x):.3f}"


def table6(tasks: pd.DataFrame, samples: pd.DataFrame, *, reference: str = labels.PROPOSED,
           ablations: Sequence[str] = labels.ABLATIONS, backbones: Sequence[str] | None = None,
           budgets: dict[tuple[str, str], dict[str, Any]] | None = None, n_resamples: int = 2000,
           seed: int = 0, names: Labels | None = None) -> Table:
    """Ablations: Pass@1 (with errored and missing counts) and Δ (pp) against the full configuration
    with its paired bootstrap p, CR with the achieved gap to the full configuration's CR and the
    paired bootstrap p of the CR difference, and each configuration's retrieval budgets (k2, k31,
    k32 from its run's manifest / resolved config; ``budgets`` maps (backbone, method) to them,
    ``calibrated`` / ``tolerance`` from its calibration record), per backbone with an ablation run
    (the paper: Qwen3-235B only). The "CR-matched" label follows the achieved gap on these samples.
    Each subset compares the configurations over the samples all of them were scored on
    (:func:`compared_samples`; the notes name the runs cut to them); CR is over those every compared
    configuration (and Full) finished ok. With repeats: mean ± sd over the repeats. ``names``: the runs' labels."""
    names = names if names is not None else Labels()
    methods = [reference, *ablations]
    budgets = budgets or {}
    present = set(tasks.loc[tasks["method"].isin(list(ablations)), "backbone"]) if not tasks.empty else set()
    if not samples.empty:
        present |= set(samples.loc[samples["method"].isin(list(ablations)), "backbone"])
    chosen = labels.order_backbones(backbones if backbones is not None else present)
    subsets = subsets_of(tasks, samples)
    repeats = repeats_of(tasks, samples)
    rows, blocks = [], []
    matched_rows: dict[str, list[str]] = {"matched": [], "unmatched": [], "uncalibrated": []}
    tolerances: set[float] = set()
    cut_notes: list[str] = []
    for bb in chosen:
        kept: set[str] = set()
        for s in subsets:
            ids, cut = compared_rows(tasks, methods, [bb], s, names)
            kept |= ids[bb]
            cut_notes += [f"{s.capitalize()}, {line}" for line in cut]
        bb_tasks, bb_samples = within_common(tasks, {bb: kept}), within_common(samples, {bb: kept})
        columns = [("Method", ""), ("Budgets", BUDGETS_HEADER)]
        for s in subsets:
            columns += [(s.capitalize(), "Pass@1"), (s.capitalize(), "p"), (s.capitalize(), "Err."),
                        (s.capitalize(), "Miss."), (s.capitalize(), "CR"), (s.capitalize(), "CR gap"),
                        (s.capitalize(), "ΔCR p"), (s.capitalize(), "CR n")]
        per_repeat = []
        for r in repeats:
            tr, sr = of_repeat(bb_tasks, r), of_repeat(bb_samples, r)
            common_r = {s: common_samples(sr, methods, bb, s) for s in subsets}
            cells_r = {}
            for m in methods:
                for s in subsets:
                    c = {**pass_cell(tr, m, [bb], s), **cr_cell(sr, m, [bb], s, common={bb: common_r[s]})}
                    c["n_missing"] = max(c["n_missing"], missing_samples(sr, m, [bb], s))
                    cells_r[(m, s)] = c
            per_repeat.append((cells_r, common_r))
        cells = {(m, s): _over_repeats([c[(m, s)] for c, _ in per_repeat]) for m in methods for s in subsets}
        common = {s: set().union(*(cm[s] for _, cm in per_repeat)) for s in subsets}
        display, tests = [], []
        for m in methods:
            b = budgets.get((bb, m))
            gaps = []
            for s in subsets:
                c, ref = cells[(m, s)], cells[(reference, s)]
                gaps.append(c["cr"] / ref["cr"] - 1 if not is_missing(c["cr"]) and not is_missing(ref["cr"]) and ref["cr"]
                            else NAN)
            ran = any(not is_missing(cells[(m, s)]["pass1"]) for s in subsets)
            label, matched = cr_match(b, gaps, reference=m == reference) if ran or b else ("", None)
            if m != reference and not is_missing(cells[(m, subsets[0])]["pass1"] if subsets else NAN):
                matched_rows["matched" if matched else "uncalibrated" if matched is None else "unmatched"].append(
                    names.method_label(m))
                if matched is not None:
                    tolerances.add(float((b or {}).get("tolerance") or DEFAULT_CR_TOLERANCE))
            line = [names.method_label(m), f"{_budget_text(b)} {label}".strip()]
            for s, gap in zip(subsets, gaps):
                c, ref = cells[(m, s)], cells[(reference, s)]
                delta, delta_sd, _ = (mean_sd([cr[(m, s)]["pass1"] - cr[(reference, s)]["pass1"] for cr, _ in per_repeat])
                                      if m != reference else (NAN, NAN, 0))
                cr_change = 100 * gap if not is_missing(gap) else NAN
                has = not is_missing(c["pass1"])
                paired = dict(PAIRED_EMPTY)
                pcr = {"cr_diff": NAN, "cr_ci_low": NAN, "cr_ci_high": NAN, "cr_p_value": NAN, "cr_n_paired": 0}
                if m != reference and has:
                    if not is_missing(delta):
                        paired = paired_cell(bb_tasks, m, reference, [bb], s, n_resamples, seed)
                    pcr = _paired_cr(bb_samples, m, reference, bb, s, common[s], n_resamples, seed)
                    tests.append([names.method_label(m), s,
                                  fmt_mean_sd(delta, delta_sd, c["n_repeats"], fmt_delta),
                                  MISSING if is_missing(paired["paired_diff_pp"]) else
                                  f"{paired['paired_diff_pp']:+.3f} [{paired['ci_low_pp']:+.3f}, {paired['ci_high_pp']:+.3f}]",
                                  _p(paired["p_value"]), str(paired["n_paired"]),
                                  MISSING if is_missing(pcr["cr_diff"]) else
                                  f"{pcr['cr_diff']:+.2f} [{pcr['cr_ci_low']:+.2f}, {pcr['cr_ci_high']:+.2f}]",
                                  _p(pcr["cr_p_value"]), str(pcr["cr_n_paired"])])
                mark = INCOMPLETE if (c["n_missing"] or ref["n_missing"]) and m != reference else ""
                text = fmt_mean_sd(c["pass1"], c["pass1_sd"], c["n_repeats"])
                if has:
                    text += INCOMPLETE if c["n_missing"] else ""
                    if m != reference and not is_missing(delta):
                        text += " " + fmt_mean_sd(delta, delta_sd, c["n_repeats"], fmt_delta) + mark
                line += [text, _p(paired["p_value"]) if m != reference and has else MISSING,
                         fmt_count(c["n_errored"]) if has else MISSING, fmt_count(c["n_missing"]) if has else MISSING,
                         fmt_mean_sd(c["cr"], c["cr_sd"], c["n_repeats"], fmt_ratio, 1),
                         MISSING if m == reference or is_missing(gap) else f"{100 * gap:+.1f}%",
                         _p(pcr["cr_p_value"]) if m != reference and has else MISSING,
                         str(len(common[s])) if has else MISSING]
                rows.append({"backbone": bb, "subset": s, "method": m, "pass1": c["pass1"], "pass1_sd": c["pass1_sd"],
                             "delta_pp": delta, "delta_sd_pp": delta_sd, "cr": c["cr"], "cr_sd": c["cr_sd"],
                             "cr_change_pct": cr_change, "cr_gap": gap, "cr_matched": matched,
                             "n_repeats": c["n_repeats"], "n_tasks": c["n_tasks"], "n_samples": c["n_samples"],
                             "n_errored": c["n_errored"], "n_missing": c["n_missing"], "incomplete": bool(c["n_missing"]),
                             "n_cr_samples": c.get("n_common", 0), **paired, **pcr,
                             **{k: (b or {}).get(k, NAN) for k in BUDGET_NAMES}})
            display.append(line)
        blocks.append(Block(columns=columns, rows=display, heading=names.backbone_label(bb)))
        if tests:
            blocks.append(Block(columns=[("Ablation", ""), ("Subset", ""), ("Δ Pass@1", "pp"),
                                         ("Paired Δ [95% CI]", "pp"), ("Paired", "p"), ("Paired", "n tasks"),
                                         ("ΔCR [95% CI]", "×"), ("ΔCR", "p"), ("ΔCR", "n samples")],
                                rows=tests, heading=f"{names.backbone_label(bb)}: paired tests against "
                                                    f"{names.method_label(reference)}"))
    data = pd.DataFrame(rows, columns=["backbone", "subset", "method", "pass1", "pass1_sd", "delta_pp", "delta_sd_pp",
                                       "cr", "cr_sd", "cr_change_pct", "cr_gap", "cr_matched", "n_repeats", "n_tasks",
                                       "n_samples", "n_errored", "n_missing", "incomplete", "n_cr_samples",
                                       "paired_diff_pp", "ci_low_pp", "ci_high_pp", "p_value", "n_paired", "cr_diff",
                                       "cr_ci_low", "cr_ci_high", "cr_p_value", "cr_n_paired", *BUDGET_NAMES])
    tol_text = ", ".join(f"±{100 * t:g}%" for t in sorted(tolerances)) or f"±{100 * DEFAULT_CR_TOLERANCE:g}%"
    ref_label = names.method_label(reference)
    notes = [f"Arrows: Pass@1 difference (pp) against {ref_label}; p = paired repository-cluster bootstrap over the "
             f"tasks both were scored on ({n_resamples} resamples; the paired-tests block has the 95% CIs). CR against "
             "Full History on the same backbone under the configuration's code retriever (— without that run), over "
             "the samples every listed configuration and that Full run finished ok (CR n); "
             f"CR gap = CR / CR({ref_label}) − 1 on those samples; ΔCR p = paired bootstrap of CR(ablation) − "
             f"CR({ref_label}) over the same samples. Budgets: the run's {BUDGETS_HEADER} (from its manifest or resolved "
             "config.yaml). \"CR-matched\" = calibrated by scripts.calibrate_cr and the achieved gap within the "
             f"calibration's tolerance ({tol_text}) in every subset of this table; a calibrated row outside it says "
             "so; an uncalibrated row keeps ReConMem's budgets.",
             f"CR-matched rows: {', '.join(matched_rows['matched']) or 'none'} ({tol_text}); calibrated but outside the "
             f"tolerance: {', '.join(matched_rows['unmatched']) or 'none'}; ReConMem's budgets (not calibrated): "
             f"{', '.join(matched_rows['uncalibrated']) or 'none'}.",
             ERRORED_NOTE, INCOMPLETE_NOTE]
    if cut_notes:
        notes.append(f"Each subset {CUT_NOTE}; runs cut to them: {'; '.join(cut_notes)}.")
    if len(repeats) > 1:
        notes.insert(1, f"Repeats: {len(repeats)}; Pass@1, Δ and CR are mean ± sd over the repeats; the paired tests pool "
                        "the repeats' paired tasks / samples.")
    if not blocks:
        notes.append("No ablation runs found.")
    return Table("table6", "Table 6. Ablation study on LoCoEval", data, blocks, notes)
