"""Floor, ceiling and memory headroom of a LoCoEval-format set — pure functions over the tasks frame.

The two bracket methods (``baselines/brackets.py``) bound what memory can add on a set:
``no_memory`` (the floor: the repository and the model alone) and ``oracle_context`` (the ceiling:
the task's requirement and ground-truth items handed over as stated in the conversation).
**Memory headroom** = ceiling − floor (pp of Pass@1) per subset and backbone; a memory method's
**recovered share** = (method − floor) / headroom. A headroom near zero says the set does not
measure memory (the facts are guessable, or the model cannot write the functions even with them).

Input: ``RunSet.tasks_frame(benchmark)`` (one row per task of every scored sample, errored samples'
tasks failed). Table 1 prints the floor, ceiling and headroom beside the methods when bracket runs
are present (:func:`table1_columns`, :func:`table1_values`); :func:`brackets_table` is the
standalone table (``python -m scripts.brackets`` prints it) with the paired difference over the
tasks both brackets were scored on (repeat i of one with repeat i of the other) and its
repository-cluster bootstrap CI; given ``RunSet.outside_selection_frame``, its notes name the
records left out because their run did not select their sample.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from benchmarks.analysis import labels
from benchmarks.analysis.labels import Labels
from benchmarks.analysis.render import MISSING, Block, Table, fmt_num, is_missing
from benchmarks.analysis.stats import PAIR_KEYS, paired_pass_difference
from benchmarks.locoeval import metrics

FLOOR, CEILING, BRACKETS = labels.FLOOR, labels.CEILING, labels.BRACKETS
ALL = "all"
NAN = float("nan")
HEADROOM_NOTE = ("Memory headroom = Pass@1 of Oracle Context (ceiling: the task's requirement and ground-truth items "
                 "as the user stated them) − Pass@1 of No Memory (floor: the current turn and the same repository "
                 "context), in pp; † = the two brackets were scored on different tasks.")


def present(tasks: pd.DataFrame) -> bool:
    """Whether the frame holds a bracket run."""
    return not tasks.empty and bool(tasks["method"].isin(BRACKETS).any())


def _select(tasks: pd.DataFrame, method: str, backbones: Sequence[str], subset: str | None) -> pd.DataFrame:
    sel = tasks[(tasks["method"] == method) & tasks["backbone"].isin(list(backbones))]
    return sel if subset in (None, ALL) else sel[sel["subset"] == subset]


def pass_cell(tasks: pd.DataFrame, method: str, backbones: Sequence[str], subset: str | None) -> dict[str, Any]:
    """Pooled Pass@1 (%, :func:`benchmarks.locoeval.metrics.pass_at_1`) of ``method`` over its scored tasks of ``backbones`` in ``subset`` (None / "all": every subset)."""
    sel = _select(tasks, method, backbones, subset)
    if sel.empty:
        return {"pass1": NAN, "n_tasks": 0, "n_passed": 0, "n_samples": 0, "n_errored": 0, "keys": frozenset()}
    errored = (sel.loc[sel["errored"].astype(bool), ["backbone", "sample_id"]].drop_duplicates().shape[0]
               if "errored" in sel else 0)
    return {"pass1": 100.0 * float(metrics.pass_at_1(sel["passed"])), "n_tasks": int(len(sel)), "n_passed": int(sel["passed"].sum()),
            "n_samples": int(sel[["backbone", "sample_id"]].drop_duplicates().shape[0]), "n_errored": int(errored),
            "keys": frozenset(map(tuple, sel[[k for k in PAIR_KEYS if k in sel]].astype(str).to_numpy()))}


def bracket_cells(tasks: pd.DataFrame, backbones: Sequence[str], subset: str | None) -> dict[str, Any]:
    """Floor, ceiling and headroom (pp) of one row; ``same_tasks`` is False when the brackets were
    scored on different tasks (the headroom is then a difference of two different pools)."""
    floor, ceiling = pass_cell(tasks, FLOOR, backbones, subset), pass_cell(tasks, CEILING, backbones, subset)
    headroom = ceiling["pass1"] - floor["pass1"]
    return {"floor": floor, "ceiling": ceiling, "headroom_pp": headroom,
            "same_tasks": floor["keys"] == ceiling["keys"]}


def table1_columns(names: Labels) -> list[tuple[str, str]]:
    """The columns Table 1 adds when bracket runs are present (labelled by ``names``)."""
    return [(names.method_label(FLOOR), "Pass@1"), (names.method_label(CEILING), "Pass@1"), ("Memory headroom", "pp")]


def table1_values(cells: dict[str, Any]) -> list[str]:
    """The cells of :func:`table1_columns` for one Table 1 row."""
    headroom = cells["headroom_pp"]
    mark = "†" if not is_missing(headroom) and not cells["same_tasks"] else ""
    return [fmt_num(cells["floor"]["pass1"]), fmt_num(cells["ceiling"]["pass1"]),
            MISSING if is_missing(headroom) else f"{headroom:+.2f}{mark}"]


def table1_rows(cells: dict[str, Any], subset: str, backbone: str) -> list[dict[str, Any]]:
    """Table 1's CSV rows of the two brackets of one row."""
    return [{"subset": subset, "backbone": backbone, "method": m, "pass1": cells[k]["pass1"], "n_tasks": cells[k]["n_tasks"],
             "n_samples": cells[k]["n_samples"], "n_errored": cells[k]["n_errored"]}
            for m, k in ((FLOOR, "floor"), (CEILING, "ceiling"))]


def _paired(tasks: pd.DataFrame, backbones: Sequence[str], subset: str | None, n_resamples: int,
            seed: int) -> dict[str, Any]:
    """Ceiling − floor over the tasks (and repeats) both brackets were scored on."""
    sel = pd.concat([_select(tasks, m, backbones, subset) for m in (CEILING, FLOOR)])
    out = paired_pass_difference(sel, CEILING, FLOOR, n_resamples=n_resamples, seed=seed)
    return {"paired_pp": out.pop("paired_diff_pp"), **out}


def recovered_share(method_pass1: float, cells: dict[str, Any]) -> float:
    """(method − floor) / headroom in %, NaN without a positive headroom."""
    headroom = cells["headroom_pp"]
    if is_missing(method_pass1) or is_missing(headroom) or headroom <= 0:
        return NAN
    return 100.0 * (method_pass1 - cells["floor"]["pass1"]) / headroom


def _fmt_pass(cell: dict[str, Any]) -> str:
    if is_missing(cell["pass1"]):
        return MISSING
    errored = f", {cell['n_errored']} sample(s) errored" if cell["n_errored"] else ""
    return f"{fmt_num(cell['pass1'], 1)} ({cell['n_passed']}/{cell['n_tasks']}{errored})"


def outside_note(outside: pd.DataFrame, methods: Sequence[str], names: Labels) -> str | None:
    """The note naming the records of ``methods`` left out as outside their run's selection (None: none)."""
    rows = outside[outside["method"].isin(list(methods))] if not outside.empty else outside
    if rows.empty:
        return None
    where: dict[str, list[str]] = {}
    for _, r in rows.iterrows():
        where.setdefault(str(r["sample_id"]), []).append(f"{names.method_label(r['method'])} {r['run_id']}")
    listed = "; ".join(f"{sid} ({', '.join(sorted(set(runs)))})" for sid, runs in sorted(where.items()))
    return (f"Outside the selection: {len(rows)} record(s) of {len(where)} sample(s) the run's recorded selection "
            f"(manifest `selected`: run.ids / run.limit) does not include, left out of every number: {listed}.")


def brackets_table(tasks: pd.DataFrame, *, methods: Sequence[str] | None = None, n_resamples: int = 2000,
                   seed: int = 0, names: Labels | None = None, outside: pd.DataFrame | None = None) -> Table:
    """Floor, ceiling, headroom with its paired bootstrap CI per subset (and all tasks) × backbone,
    plus the recovered share of every other method present (``methods``: which, default all);
    ``names``: the runs' labels (default: the config labels); ``outside``: the records left out as
    outside their run's selection (``RunSet.outside_selection_frame``), named in a note."""
    names = names if names is not None else Labels()
    others = [m for m in labels.order_methods(set(tasks["method"]) if not tasks.empty else set())
              if m not in BRACKETS and (methods is None or m in methods)]
    subsets = labels.order_subsets(set(tasks["subset"].dropna())) if not tasks.empty else []
    rows: list[dict[str, Any]] = []
    blocks: list[Block] = []
    for subset in [*subsets, ALL]:
        backbones = labels.order_backbones(set(tasks.loc[tasks["method"].isin(BRACKETS), "backbone"]))
        columns = [("Model", ""), (names.method_label(FLOOR), "Pass@1 (passed/tasks)"),
                   (names.method_label(CEILING), "Pass@1 (passed/tasks)"), ("Memory headroom", "pp"),
                   ("Paired headroom [95% CI]", "pp"), ("Paired", "tasks")]
        for m in others:
            columns += [(names.method_label(m), "Pass@1"), (names.method_label(m), "recovered %")]
        display: list[list[str]] = []
        row_sets = [[bb] for bb in backbones] + ([backbones] if len(backbones) > 1 else [])
        for bbs in row_sets:
            name = bbs[0] if len(bbs) == 1 else "overall"
            cells = bracket_cells(tasks, bbs, subset)
            paired = _paired(tasks, bbs, subset, n_resamples, seed)
            line = [names.backbone_label(name) if name != "overall" else "Overall", _fmt_pass(cells["floor"]),
                    _fmt_pass(cells["ceiling"]), table1_values(cells)[2],
                    MISSING if is_missing(paired["paired_pp"]) else
                    f"{paired['paired_pp']:+.2f} [{paired['ci_low_pp']:+.2f}, {paired['ci_high_pp']:+.2f}]",
                    str(paired["n_paired"])]
            row = {"subset": subset, "backbone": name, "floor_pass1": cells["floor"]["pass1"],
                   "floor_n_tasks": cells["floor"]["n_tasks"], "ceiling_pass1": cells["ceiling"]["pass1"],
                   "ceiling_n_tasks": cells["ceiling"]["n_tasks"], "headroom_pp": cells["headroom_pp"],
                   "same_tasks": cells["same_tasks"], **paired}
            for m in others:
                mp = pass_cell(tasks, m, bbs, subset)["pass1"]
                share = recovered_share(mp, cells)
                line += [fmt_num(mp, 1), fmt_num(share, 1)]
                row[f"{m}_pass1"], row[f"{m}_recovered_pct"] = mp, share
            display.append(line)
            rows.append(row)
        heading = "All tasks" if subset == ALL else subset.capitalize()
        blocks.append(Block(columns=columns, rows=display, heading=heading))
    notes = [HEADROOM_NOTE,
             f"Paired headroom: the same difference over the tasks both brackets were scored on, 95% percentile CI "
             f"from {n_resamples} repository-cluster bootstrap resamples.",
             "Recovered % = (method − floor) / headroom: the share of what perfect memory adds that the method "
             "achieves (shown only with a positive headroom; below 0 = worse than no memory)."]
    repeats = sorted(set(tasks["repeat"].dropna())) if not tasks.empty and "repeat" in tasks else []
    if len(repeats) > 1:
        notes.insert(2, f"Repeats: {len(repeats)} (run.repeat); Pass@1 pools the repeats' tasks; the paired headroom "
                        "pairs repeat i of the floor with repeat i of the ceiling (Paired tasks = task-runs).")
    left_out = outside_note(outside, [*BRACKETS, *others], names) if outside is not None else None
    if left_out:
        notes.insert(0, left_out)
    data = pd.DataFrame(rows)
    return Table("brackets", "Floor, ceiling and memory headroom (Pass@1, %)", data, blocks, notes)


def headroom_summary(tasks: pd.DataFrame) -> list[dict[str, Any]]:
    """One dict per (subset incl. "all", backbone): floor, ceiling, headroom — for scripts and tests."""
    out = []
    subsets = labels.order_subsets(set(tasks["subset"].dropna())) if not tasks.empty else []
    backbones = labels.order_backbones(set(tasks.loc[tasks["method"].isin(BRACKETS), "backbone"])) if not tasks.empty else []
    for subset in [*subsets, ALL]:
        for bb in backbones:
            c = bracket_cells(tasks, [bb], subset)
            out.append({"subset": subset, "backbone": bb, "floor": c["floor"]["pass1"], "ceiling": c["ceiling"]["pass1"],
                        "headroom_pp": c["headroom_pp"], "floor_tasks": c["floor"]["n_tasks"],
                        "ceiling_tasks": c["ceiling"]["n_tasks"], "same_tasks": c["same_tasks"]})
    return out


__all__ = ["ALL", "BRACKETS", "CEILING", "FLOOR", "bracket_cells", "brackets_table", "headroom_summary", "outside_note",
           "pass_cell", "present", "recovered_share", "table1_columns", "table1_rows", "table1_values"]

