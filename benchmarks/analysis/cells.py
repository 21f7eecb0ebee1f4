"""What a LoCoEval table row compares and what its cells hold - pure functions over record frames.

The tables (:mod:`benchmarks.analysis.tables`) and the inspect export compose these. Inputs are
``RunSet.tasks_frame(benchmark)`` (every task of every scored sample; an errored sample's tasks are
failed rows with ``errored`` true) and ``RunSet.samples_frame(benchmark)`` (one row per sample with
token and cost sums):

* the compared set: the samples every compared method of the row was scored on, in each of its
  repeats (:func:`compared_samples`, :func:`compared_rows`), and the samples all of them finished
  ``ok`` (:func:`common_samples`, for token ratios);
* a Pass@1 cell (:func:`pass_cell`, :func:`benchmarks.locoeval.metrics.pass_at_1`), a CR cell
  (:func:`cr_cell`, :func:`benchmarks.locoeval.metrics.cr` against :func:`reference_method`), a
  paired difference (:func:`paired_cell`), missing samples, repeats and their mean ± sd, and the
  notes that explain them.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from benchmarks.analysis import labels
from benchmarks.analysis.labels import Labels
from benchmarks.analysis.render import fmt_num, is_missing
from benchmarks.analysis.stats import paired_pass_difference
from benchmarks.locoeval import metrics

NAN = float("nan")
INCOMPLETE = "‡"
INCOMPLETE_NOTE = (f"Miss. = selected samples (the run manifest's selection) without a finished record - no result.json, "
                   f"or interrupted: their tasks count as failed; {INCOMPLETE} marks a cell with any (the method is "
                   "incomplete there: it is never taken as the strongest baseline, and a Δ involving it carries the mark).")
ERRORED_NOTE = ("Err. = samples that still errored after the run's retries: their tasks count as failed in Pass@1 "
                "(the denominator is every task of every scored sample).")


def reference_method(method: str) -> str:
    """The method a method's CR is measured against: Full History under the same code retriever
    (``reconmem`` -> ``full``, ``reconmem_bm25`` -> ``full_bm25``; :func:`benchmarks.locoeval.metrics.cr_reference`)."""
    return metrics.cr_reference(method[len(labels.base_method(method)) + 1:] or None)


def scored_mask(samples: pd.DataFrame) -> pd.Series:
    if "scored" in samples:
        return samples["scored"].astype(bool)
    return samples["status"].isin(["ok", "error"])


def ok_samples(samples: pd.DataFrame) -> pd.DataFrame:
    """Finished ``ok`` samples that enter the comparison (excluded samples dropped)."""
    if samples.empty:
        return samples
    return samples[(samples["status"] == "ok") & scored_mask(samples)]


def row_backbones(tasks: pd.DataFrame, samples: pd.DataFrame, subset: str) -> list[str]:
    names = set(tasks.loc[tasks["subset"] == subset, "backbone"]) if not tasks.empty else set()
    if not samples.empty and "subset" in samples:
        names |= set(samples.loc[samples["subset"] == subset, "backbone"])
    return labels.order_backbones(names)


def subsets_of(tasks: pd.DataFrame, samples: pd.DataFrame) -> list[str]:
    names = set(tasks["subset"].dropna()) if not tasks.empty else set()
    if not samples.empty and "subset" in samples:
        names |= set(samples["subset"].dropna())
    return labels.order_subsets(names)


def pass_cell(tasks: pd.DataFrame, method: str, backbones: Sequence[str], subset: str) -> dict[str, Any]:
    """Pooled Pass@1 (%, :func:`benchmarks.locoeval.metrics.pass_at_1`) of ``method`` over every
    task of its scored samples of the given backbones in ``subset`` (errored and missing samples'
    tasks are failed rows); with ``n_errored`` / ``n_missing`` samples."""
    sel = tasks[(tasks["method"] == method) & (tasks["subset"] == subset) & tasks["backbone"].isin(list(backbones))]
    if sel.empty:
        return {"pass1": NAN, "n_tasks": 0, "n_samples": 0, "n_passed": 0, "n_errored": 0, "n_missing": 0}
    keys = sel[["backbone", "sample_id"]].drop_duplicates()

    def count(col: str) -> int:
        return (sel.loc[sel[col].astype(bool), ["backbone", "sample_id"]].drop_duplicates().shape[0]
                if col in sel else 0)

    return {"pass1": 100.0 * metrics.pass_at_1(sel["passed"]), "n_tasks": int(len(sel)),
            "n_passed": int(sel["passed"].sum()), "n_samples": int(keys.shape[0]), "n_errored": count("errored"), "n_missing": count("missing")}


def missing_samples(samples: pd.DataFrame, method: str, backbones: Sequence[str], subset: str | None) -> int:
    """Scored samples of ``method`` in the row that never finished (selected; no result.json or
    interrupted): those of the subset plus those whose subset is unknown (they count in every subset)."""
    if samples.empty or "missing" not in samples:
        return 0
    sel = samples[(samples["method"] == method) & samples["backbone"].isin(list(backbones))
                  & samples["missing"].fillna(False).astype(bool) & scored_mask(samples)]
    if subset is not None and "subset" in sel:
        sel = sel[(sel["subset"] == subset) | sel["subset"].isna()]
    return int(len(sel))


def repeats_of(*frames: pd.DataFrame) -> list[int]:
    """The repeat indices present in the frames (``[1]`` for unrepeated runs)."""
    found: set[int] = set()
    for f in frames:
        if not f.empty and "repeat" in f:
            found |= {int(x) for x in f["repeat"].dropna()}
    return sorted(found) or [1]


def of_repeat(frame: pd.DataFrame, repeat: int) -> pd.DataFrame:
    """The rows of one repeat (all rows when the frame has no ``repeat`` column)."""
    if frame.empty or "repeat" not in frame:
        return frame
    return frame[frame["repeat"] == repeat]


def mean_sd(values: Sequence[Any]) -> tuple[float, float, int]:
    """(mean, sample sd (ddof 1; NaN below two values), n) over the non-missing values."""
    vals = [float(v) for v in values if not is_missing(v)]
    if not vals:
        return NAN, NAN, 0
    return float(np.mean(vals)), (float(np.std(vals, ddof=1)) if len(vals) > 1 else NAN), len(vals)


def fmt_mean_sd(mean: Any, sd: Any, n: int, fmt: Any = fmt_num, digits: int = 3) -> str:
    """``mean`` alone for one repeat, ``mean ± sd`` over several."""
    text = fmt(mean)
    if n > 1 and not is_missing(mean) and not is_missing(sd):
        text += f" ± {float(sd):.{digits}f}"
    return text


def compared_methods(samples: pd.DataFrame, methods: Sequence[str], backbone: str, subset: str | None) -> list[str]:
    """The methods of ``methods`` (plus their CR references) with a scored sample in the row."""
    if samples.empty:
        return []
    sel = samples[scored_mask(samples) & (samples["backbone"] == backbone)]
    if subset is not None:
        sel = sel[sel["subset"] == subset]
    present = set(sel["method"])
    return [m for m in dict.fromkeys([*methods, *map(reference_method, methods)]) if m in present]


def compared_samples(tasks: pd.DataFrame, methods: Sequence[str], backbone: str, subset: str
                     ) -> tuple[set[str], dict[str, int]]:
    """The sample ids every method of ``methods`` present in the row was scored on, in each of its
    repeats (the intersection of the runs' selections; errored and missing samples count as scored),
    and the methods whose runs were cut to them: method -> its most samples in a repeat."""
    sel = tasks[(tasks["backbone"] == backbone) & (tasks["subset"] == subset) & tasks["method"].isin(list(methods))]
    if sel.empty:
        return set(), {}
    by_run = sel.groupby(["method", "repeat"] if "repeat" in sel else ["method"])["sample_id"].agg(set)
    common = set.intersection(*by_run.tolist())
    own: dict[str, int] = {}
    for key, ids in by_run.items():
        m = key[0] if isinstance(key, tuple) else key
        own[m] = max(own.get(m, 0), len(ids))
    return common, {m: own[m] for m in methods if own.get(m, 0) > len(common)}


def compared_rows(tasks: pd.DataFrame, methods: Sequence[str], backbones: Sequence[str], subset: str,
                  names: Labels) -> tuple[dict[str, set[str]], list[str]]:
    """:func:`compared_samples` of each backbone of a row, and one line per backbone whose runs were
    cut to them ("Qwen3-235B: Mem0^R (4 → 2 samples)", labelled by ``names``)."""
    compared = {bb: compared_samples(tasks, methods, bb, subset) for bb in backbones}
    cut = [f"{names.backbone_config_label(bb)}: " + ", ".join(
               f"{names.method_label(m)} ({n} → {len(ids)} samples)" for m, n in over.items())
           for bb, (ids, over) in compared.items() if over]
    return {bb: ids for bb, (ids, _) in compared.items()}, cut


CUT_NOTE = "compared over the samples every method of the row was scored on (the intersection of the runs' selections)"


def within_common(frame: pd.DataFrame, common: dict[str, set[str]]) -> pd.DataFrame:
    """The rows of ``frame`` whose (backbone, sample id) is in ``common`` (backbone -> sample ids),
    plus those of an unknown subset (a missing sample of an old manifest: counted in every row)."""
    if frame.empty:
        return frame
    keep = [sid in common.get(bb, ()) for bb, sid in zip(frame["backbone"], frame["sample_id"])]
    unknown = frame["subset"].isna() if "subset" in frame else False
    return frame[pd.Series(keep, index=frame.index) | unknown]


def common_samples(samples: pd.DataFrame, methods: Sequence[str], backbone: str, subset: str | None) -> set[str]:
    """Sample ids that every method of ``methods`` present in the row finished ``ok``."""
    present = compared_methods(samples, methods, backbone, subset)
    if not present:
        return set()
    ok = ok_samples(samples)
    ok = ok[ok["backbone"] == backbone]
    if subset is not None:
        ok = ok[ok["subset"] == subset]
    sets = [set(ok.loc[ok["method"] == m, "sample_id"]) for m in present]
    return set.intersection(*sets) if sets else set()


def cr_cell(samples: pd.DataFrame, method: str, backbones: Sequence[str], subset: str | None,
            reference: str | None = None, *, common: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """CR (:func:`benchmarks.locoeval.metrics.cr`) of Σ input(reference) and Σ input(method), pooled
    over the backbones, each over its ``common[backbone]`` samples (default: the samples ok for both
    the method and the reference);
    the reference defaults to :func:`reference_method` (Full History under the method's retriever)."""
    reference = reference or reference_method(method)
    ok = ok_samples(samples)
    if ok.empty or "input_tokens" not in ok:
        return {"cr": NAN, "n_common": 0}
    sel = ok[ok["backbone"].isin(list(backbones))]
    if subset is not None:
        sel = sel[sel["subset"] == subset]
    keys = ["backbone", "sample_id"]
    ref = sel[sel["method"] == reference][keys + ["input_tokens"]]
    mine = sel[sel["method"] == method][keys + ["input_tokens"]]
    both = ref.merge(mine, on=keys, suffixes=("_ref", "_m"))
    if common is not None:
        allowed = {(bb, s) for bb, ids in common.items() for s in ids}
        both = both[[(bb, s) in allowed for bb, s in zip(both["backbone"], both["sample_id"])]]
    ratio = None if both.empty else metrics.cr(both["input_tokens_ref"].sum(), both["input_tokens_m"].sum())
    return {"cr": NAN if ratio is None else float(ratio), "n_common": int(len(both))}


def paired_cell(tasks: pd.DataFrame, a: str, b: str, backbones: Sequence[str], subset: str, n_resamples: int,
            seed: int) -> dict[str, Any]:
    """Pass@1(a) − Pass@1(b) over the row's tasks (and repeats) both were scored on."""
    sel = tasks[(tasks["subset"] == subset) & tasks["backbone"].isin(list(backbones))]
    return paired_pass_difference(sel, a, b, n_resamples=n_resamples, seed=seed)


def unpriced_mark(sel: pd.DataFrame) -> str:
    """``*`` when some of the cell's ledger events carry no cost_usd (counted as $0)."""
    return "*" if len(sel) and "n_events_without_cost" in sel and sel["n_events_without_cost"].sum() > 0 else ""


def cost_note(samples: pd.DataFrame) -> str | None:
    """'N of M ledger events carry no cost_usd' when any does (they count as $0)."""
    if samples.empty or "n_events_without_cost" not in samples:
        return None
    missing, total = int(samples["n_events_without_cost"].sum()), int(samples["n_events"].sum())
    base = ("Cost = Σ cost_usd of the counted calls' ledger events (USD): what was paid — a cache hit costs $0 "
            "while its tokens still count")
    if not missing:
        return base + "."
    return (f"{base}; * = {missing} of {total} ledger events "
            "carry no cost_usd and count as $0 (records written before pricing, or a model missing from the price map).")
