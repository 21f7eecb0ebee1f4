"""LoCoEval tables of the paper: Table 1 (Pass@1, CR), Table 3 (end-to-end tokens), Table 4
(ReConMem's stage breakdown) and Table 6 (ablations) — pure functions over record frames.

Inputs are ``RunSet.tasks_frame(benchmark)`` (task-runs of ok samples) and
``RunSet.samples_frame(benchmark)`` (one row per sample with token sums). Conventions:

* Pass@1 of a cell = passed task-runs / task-runs of the method's ok samples in that cell
  (errored samples are excluded, never counted as failures and never filled); a cell computed
  over fewer samples than the best-covered method of its row carries a ``†``.
* CR(M) = Σ input tokens of Full / Σ input tokens of M, both summed over the samples that are ok
  for *both* (same backbone, same subset); mock-user / judge / coverage-judge calls excluded.
* Overall / Average rows need the method on every backbone of the block, else they are missing.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from benchmarks.analysis import labels
from benchmarks.analysis.render import (MISSING, Block, Table, fmt_delta, fmt_num, fmt_ratio, fmt_tokens_k,
                                        is_missing)
from benchmarks.analysis.stats import paired_bootstrap
from benchmarks.analysis.tokens import RECONMEM_STAGES, STAGE_LABELS, is_counted

OVERALL = "overall"
NAN = float("nan")
DAGGER = "†"
DAGGER_NOTE = (f"{DAGGER} computed over fewer samples than other methods in the row (errored or unfinished "
               "samples are excluded, not counted as failures); see n_samples in the CSV.")


def _ok(samples: pd.DataFrame) -> pd.DataFrame:
    if samples.empty:
        return samples
    return samples[samples["status"] == "ok"]


def _row_backbones(tasks: pd.DataFrame, samples: pd.DataFrame, subset: str) -> list[str]:
    names = set(tasks.loc[tasks["subset"] == subset, "backbone"]) if not tasks.empty else set()
    if not samples.empty and "subset" in samples:
        names |= set(samples.loc[samples["subset"] == subset, "backbone"])
    return labels.order_backbones(names)


def _subsets(tasks: pd.DataFrame, samples: pd.DataFrame) -> list[str]:
    names = set(tasks["subset"].dropna()) if not tasks.empty else set()
    if not samples.empty and "subset" in samples:
        names |= set(samples["subset"].dropna())
    return labels.order_subsets(names)


def pass_at_1(tasks: pd.DataFrame, method: str, backbones: Sequence[str], subset: str) -> dict[str, Any]:
    """Pooled Pass@1 (%) of ``method`` over the given backbones' task-runs in ``subset``."""
    sel = tasks[(tasks["method"] == method) & (tasks["subset"] == subset) & tasks["backbone"].isin(list(backbones))]
    if sel.empty:
        return {"pass1": NAN, "n_tasks": 0, "n_samples": 0, "n_passed": 0}
    return {"pass1": 100.0 * sel["passed"].mean(), "n_tasks": int(len(sel)), "n_passed": int(sel["passed"].sum()),
            "n_samples": int(sel[["backbone", "sample_id"]].drop_duplicates().shape[0])}


def compression_ratio(samples: pd.DataFrame, method: str, backbones: Sequence[str], subset: str | None,
                      reference: str = "full") -> dict[str, Any]:
    """CR = Σ input(reference) / Σ input(method) over samples ok for both (per backbone, pooled)."""
    ok = _ok(samples)
    if ok.empty or "input_tokens" not in ok:
        return {"cr": NAN, "n_common": 0}
    sel = ok[ok["backbone"].isin(list(backbones))]
    if subset is not None:
        sel = sel[sel["subset"] == subset]
    keys = ["backbone", "sample_id"]
    ref = sel[sel["method"] == reference][keys + ["input_tokens"]]
    mine = sel[sel["method"] == method][keys + ["input_tokens"]]
    both = ref.merge(mine, on=keys, suffixes=("_ref", "_m"))
    if both.empty or both["input_tokens_m"].sum() <= 0:
        return {"cr": NAN, "n_common": int(len(both))}
    return {"cr": float(both["input_tokens_ref"].sum() / both["input_tokens_m"].sum()), "n_common": int(len(both))}


def _paired(tasks: pd.DataFrame, a: str, b: str, backbones: Sequence[str], subset: str, n_resamples: int,
            seed: int) -> dict[str, Any]:
    keys = ["backbone", "sample_id", "req_id"]
    sel = tasks[(tasks["subset"] == subset) & tasks["backbone"].isin(list(backbones))]
    ta = sel[sel["method"] == a][keys + ["passed", "repo_cluster"]]
    tb = sel[sel["method"] == b][keys + ["passed"]]
    both = ta.merge(tb, on=keys, suffixes=("_a", "_b"))
    if both.empty:
        return {"paired_diff_pp": NAN, "ci_low_pp": NAN, "ci_high_pp": NAN, "p_value": NAN, "n_paired": 0}
    res = paired_bootstrap(both["passed_a"].to_numpy(), both["passed_b"].to_numpy(),
                           clusters=both["repo_cluster"].astype(str).to_numpy(), n_resamples=n_resamples, seed=seed)
    return {"paired_diff_pp": 100 * res.difference, "ci_low_pp": 100 * res.low, "ci_high_pp": 100 * res.high,
            "p_value": res.p_value, "n_paired": res.n_items}


def _dagger(n: int, n_max: int) -> str:
    return DAGGER if 0 < n < n_max else ""


# ---------------------------------------------------------------------------- Table 1

def table1(tasks: pd.DataFrame, samples: pd.DataFrame, *, methods: Sequence[str] = labels.TABLE1_METHODS,
           proposed: str = labels.PROPOSED, n_resamples: int = 2000, seed: int = 0) -> Table:
    """Pass@1 and CR per subset × backbone × method, the Overall row, Δ (pp) of ``proposed`` against
    the strongest baseline by overall Pass@1 in that subset, and a paired repository-cluster
    bootstrap of that difference over the task-runs both methods completed."""
    baselines = [m for m in methods if m != proposed]
    rows: list[dict[str, Any]] = []
    blocks: list[Block] = []
    notes: list[str] = []
    for subset in _subsets(tasks, samples):
        backbones = _row_backbones(tasks, samples, subset)
        cells: dict[tuple[str, str], dict[str, Any]] = {}
        for bb in backbones:
            for m in methods:
                cells[(bb, m)] = {**pass_at_1(tasks, m, [bb], subset), **compression_ratio(samples, m, [bb], subset)}
        for m in methods:
            complete = all(not is_missing(cells[(bb, m)]["pass1"]) for bb in backbones)
            if complete:
                cells[(OVERALL, m)] = {**pass_at_1(tasks, m, backbones, subset),
                                       **compression_ratio(samples, m, backbones, subset)}
                if any(is_missing(cells[(bb, m)]["cr"]) for bb in backbones):
                    cells[(OVERALL, m)]["cr"] = NAN
            else:
                cells[(OVERALL, m)] = {"pass1": NAN, "cr": NAN, "n_tasks": sum(cells[(bb, m)]["n_tasks"] for bb in backbones),
                                       "n_samples": sum(cells[(bb, m)]["n_samples"] for bb in backbones), "n_common": 0}
        scored = [(cells[(OVERALL, m)]["pass1"], -i, m) for i, m in enumerate(baselines)
                  if not is_missing(cells[(OVERALL, m)]["pass1"])]
        best = max(scored)[2] if scored else None
        best_label = labels.method_label(best) if best else "strongest baseline"
        columns = [("Model", "")]
        for m in methods:
            columns += [(labels.method_label(m), "Pass@1"), (labels.method_label(m), "CR")]
        columns += [(f"Δ vs {best_label}", "pp"), ("Paired Δ [95% CI]", "pp"), ("Paired", "p")]
        display: list[list[str]] = []
        for bb in [*backbones, OVERALL]:
            row_bbs = backbones if bb == OVERALL else [bb]
            n_max = max((cells[(bb, m)]["n_samples"] for m in methods), default=0)
            line = [labels.backbone_label(bb) if bb != OVERALL else "Overall"]
            row_index: dict[str, int] = {}
            for m in methods:
                row_index[m] = len(rows)
                c = cells[(bb, m)]
                mark = _dagger(c["n_samples"], n_max) if not is_missing(c["pass1"]) else ""
                line += [fmt_num(c["pass1"]) + mark, fmt_ratio(c["cr"])]
                rows.append({"subset": subset, "backbone": bb, "method": m, "pass1": c["pass1"], "cr": c["cr"],
                             "n_tasks": c["n_tasks"], "n_samples": c["n_samples"], "n_cr_samples": c.get("n_common", 0)})
            delta = NAN
            paired = {"paired_diff_pp": NAN, "ci_low_pp": NAN, "ci_high_pp": NAN, "p_value": NAN, "n_paired": 0}
            if best is not None and proposed in row_index:
                delta = cells[(bb, proposed)]["pass1"] - cells[(bb, best)]["pass1"]
                if not is_missing(delta):
                    paired = _paired(tasks, proposed, best, row_bbs, subset, n_resamples, seed)
            if proposed in row_index:
                rows[row_index[proposed]].update({"baseline": best, "delta_pp": delta, **paired})
            ci = (MISSING if is_missing(paired["paired_diff_pp"]) else
                  f"{paired['paired_diff_pp']:+.3f} [{paired['ci_low_pp']:+.3f}, {paired['ci_high_pp']:+.3f}]")
            line += [fmt_delta(delta), ci, MISSING if is_missing(paired["p_value"]) else f"{paired['p_value']:.3f}"]
            display.append(line)
        blocks.append(Block(columns=columns, rows=display, heading=subset.capitalize()))
    notes.append("Pass@1 in %; CR = cumulative input tokens of Full / of the method on the samples both completed "
                 "(mock-user and judge calls excluded). Overall = pooled over the backbones of the block, shown "
                 "only when the method has every backbone.")
    notes.append(f"Δ = {labels.method_label(proposed)} − strongest baseline by overall Pass@1 (pp). Paired Δ: the same "
                 f"difference over the task-runs both completed, 95% percentile CI from {n_resamples} repository-cluster "
                 "bootstrap resamples, two-sided bootstrap p.")
    notes.append(DAGGER_NOTE)
    data = pd.DataFrame(rows, columns=["subset", "backbone", "method", "pass1", "cr", "n_tasks", "n_samples",
                                       "n_cr_samples", "baseline", "delta_pp", "paired_diff_pp", "ci_low_pp",
                                       "ci_high_pp", "p_value", "n_paired"])
    return Table("table1", "Table 1. Pass@1 (%) and compression ratio (CR) on LoCoEval", data, blocks, notes)


# ---------------------------------------------------------------------------- Table 3

def table3(samples: pd.DataFrame, *, methods: Sequence[str] = labels.TABLE1_METHODS) -> Table:
    """Average end-to-end tokens (input + output of response and memory calls) per conversation."""
    ok = _ok(samples)
    rows, blocks = [], []
    empty = pd.DataFrame()
    for subset in _subsets(empty, samples):
        backbones = _row_backbones(empty, samples, subset)
        columns = [("Model",)] + [(labels.method_label(m),) for m in methods]
        display = []
        per: dict[tuple[str, str], float] = {}
        for bb in backbones:
            n_max = 0
            stats = {}
            for m in methods:
                sel = ok[(ok["method"] == m) & (ok["backbone"] == bb) & (ok["subset"] == subset)] if not ok.empty else ok
                stats[m] = (float(sel["e2e_tokens"].mean()) if len(sel) else NAN, len(sel))
                n_max = max(n_max, len(sel))
            line = [labels.backbone_label(bb)]
            for m in methods:
                v, n = stats[m]
                per[(bb, m)] = v
                line.append(fmt_tokens_k(v) + (_dagger(n, n_max) if n else ""))
                rows.append({"subset": subset, "backbone": bb, "method": m, "e2e_tokens_per_conversation": v,
                             "n_samples": n})
            display.append(line)
        line = ["Average"]
        for m in methods:
            vals = [per[(bb, m)] for bb in backbones]
            v = float(np.mean(vals)) if vals and not any(is_missing(x) for x in vals) else NAN
            line.append(fmt_tokens_k(v))
            rows.append({"subset": subset, "backbone": "average", "method": m, "e2e_tokens_per_conversation": v,
                         "n_samples": NAN})
        display.append(line)
        blocks.append(Block(columns=columns, rows=display, heading=subset.capitalize()))
    data = pd.DataFrame(rows, columns=["subset", "backbone", "method", "e2e_tokens_per_conversation", "n_samples"])
    notes = ["Mean over ok samples of input + output tokens of response-generation and context-management calls "
             "(mock user and judge excluded). Average = mean across the backbones, shown only when all are present.",
             DAGGER_NOTE]
    return Table("table3", "Table 3. Average end-to-end LLM tokens per conversation on LoCoEval", data, blocks, notes)


# ---------------------------------------------------------------------------- Table 4

def table4(samples: pd.DataFrame, *, method: str = labels.PROPOSED) -> Table:
    """Per-stage tokens per conversation of ``method`` (Turn / Task Generation, Memory Sketching,
    Memory Update, plus Other when any other counted purpose used tokens) and their shares."""
    ok = _ok(samples)
    sel_all = ok[ok["method"] == method] if not ok.empty else ok
    tok_cols = [c for c in samples.columns if c.startswith("tok_")] if not samples.empty else []
    other_cols = [c for c in tok_cols if c[4:] not in RECONMEM_STAGES and is_counted(c[4:])]
    has_other = bool(other_cols) and not sel_all.empty and float(sel_all[other_cols].sum().sum()) > 0
    stages = [*RECONMEM_STAGES, *(["other"] if has_other else [])]
    rows, blocks = [], []
    for subset in labels.order_subsets(set(sel_all["subset"].dropna()) if not sel_all.empty else set()):
        backbones = labels.order_backbones(set(sel_all.loc[sel_all["subset"] == subset, "backbone"]))
        columns = [("Model", "")]
        for st in stages:
            columns += [(STAGE_LABELS[st], "Tok./Conv."), (STAGE_LABELS[st], "Share (%)")]
        columns.append(("Total", "Tok./Conv."))
        display = []
        means: dict[str, dict[str, float]] = {}
        for bb in backbones:
            sel = sel_all[(sel_all["backbone"] == bb) & (sel_all["subset"] == subset)]
            m = {st: float(sel[f"tok_{st}"].mean()) if f"tok_{st}" in sel else 0.0 for st in RECONMEM_STAGES}
            if has_other:
                m["other"] = float(sel[other_cols].sum(axis=1).mean())
            m["total"] = float(sel["e2e_tokens"].mean())
            means[bb] = m
            means[bb]["n"] = len(sel)
        if backbones:
            means["average"] = {k: float(np.mean([means[bb][k] for bb in backbones])) for k in [*stages, "total"]}
            means["average"]["n"] = NAN
        for bb in [*backbones, *(["average"] if backbones else [])]:
            m = means[bb]
            line = [labels.backbone_label(bb) if bb != "average" else "Average"]
            for st in stages:
                share = 100 * m[st] / m["total"] if m["total"] > 0 else NAN
                line += [fmt_tokens_k(m[st]), fmt_num(share, 2)]
                rows.append({"subset": subset, "backbone": bb, "method": method, "stage": st,
                             "tokens_per_conversation": m[st], "share_pct": share, "n_samples": m["n"]})
            line.append(fmt_tokens_k(m["total"]))
            rows.append({"subset": subset, "backbone": bb, "method": method, "stage": "total",
                         "tokens_per_conversation": m["total"], "share_pct": 100.0, "n_samples": m["n"]})
            display.append(line)
        blocks.append(Block(columns=columns, rows=display, heading=subset.capitalize()))
    data = pd.DataFrame(rows, columns=["subset", "backbone", "method", "stage", "tokens_per_conversation",
                                       "share_pct", "n_samples"])
    notes = ["Tok./Conv. = mean input + output tokens per ok conversation; Share = stage / total. "
             "Average row: mean tokens across backbones, share of the averaged total."]
    if not blocks:
        notes.append(f"No ok records of method '{method}'.")
    return Table("table4", f"Table 4. Token breakdown of {labels.method_label(method)} on LoCoEval", data, blocks, notes)


# ---------------------------------------------------------------------------- Table 6

def table6(tasks: pd.DataFrame, samples: pd.DataFrame, *, reference: str = labels.PROPOSED,
           ablations: Sequence[str] = labels.ABLATIONS, backbones: Sequence[str] | None = None) -> Table:
    """Ablations: Pass@1 with Δ (pp) against the full configuration, and CR, per backbone that has
    at least one ablation run (the paper: Qwen3-235B only)."""
    methods = [reference, *ablations]
    present = set(tasks.loc[tasks["method"].isin(list(ablations)), "backbone"]) if not tasks.empty else set()
    if not samples.empty:
        present |= set(samples.loc[samples["method"].isin(list(ablations)), "backbone"])
    chosen = labels.order_backbones(backbones if backbones is not None else present)
    subsets = _subsets(tasks, samples)
    rows, blocks = [], []
    for bb in chosen:
        columns = [("Method", "")]
        for s in subsets:
            columns += [(s.capitalize(), "Pass@1"), (s.capitalize(), "CR")]
        cells = {(m, s): {**pass_at_1(tasks, m, [bb], s), **compression_ratio(samples, m, [bb], s)}
                 for m in methods for s in subsets}
        display = []
        for m in methods:
            line = [labels.method_label(m)]
            for s in subsets:
                c, ref = cells[(m, s)], cells[(reference, s)]
                n_max = max(cells[(x, s)]["n_samples"] for x in methods)
                delta = c["pass1"] - ref["pass1"] if m != reference else NAN
                cr_change = 100 * (c["cr"] - ref["cr"]) / ref["cr"] if m != reference and not is_missing(ref["cr"]) else NAN
                text = fmt_num(c["pass1"])
                if not is_missing(c["pass1"]):
                    text += _dagger(c["n_samples"], n_max)
                    if m != reference and not is_missing(delta):
                        text += " " + fmt_delta(delta)
                line += [text, fmt_ratio(c["cr"])]
                rows.append({"backbone": bb, "subset": s, "method": m, "pass1": c["pass1"], "delta_pp": delta,
                             "cr": c["cr"], "cr_change_pct": cr_change, "n_tasks": c["n_tasks"],
                             "n_samples": c["n_samples"]})
            display.append(line)
        blocks.append(Block(columns=columns, rows=display, heading=labels.backbone_label(bb)))
    data = pd.DataFrame(rows, columns=["backbone", "subset", "method", "pass1", "delta_pp", "cr", "cr_change_pct",
                                       "n_tasks", "n_samples"])
    notes = [f"Arrows: Pass@1 difference (pp) against {labels.method_label(reference)}; CR against Full on the same "
             "backbone and samples.", DAGGER_NOTE]
    if not blocks:
        notes.append("No ablation runs found.")
    return Table("table6", "Table 6. Ablation study on LoCoEval", data, blocks, notes)
