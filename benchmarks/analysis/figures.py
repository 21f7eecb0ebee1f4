"""Figures 5, 6 and 8 of the paper (Figure 7 is in :mod:`benchmarks.analysis.tsne`).

Each figure has a pure data function (a tidy DataFrame, also written as CSV by the report) and a
plotting function that writes PNG and PDF with matplotlib's Agg backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from benchmarks.accounting import is_counted
from benchmarks.analysis import labels
from benchmarks.analysis.labels import Labels
from benchmarks.locoeval import metrics


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def method_color(method: str) -> Any:
    order = list(labels.METHOD_ORDER)
    plt = _plt()
    cmap = plt.get_cmap("tab10")
    i = order.index(method) if method in order else len(order) + sum(map(ord, method))
    return cmap(i % 10)


def plot_label(text: str) -> str:
    """A display label for matplotlib (``Mem0^R`` -> mathtext superscript)."""
    return text.replace("^R", "$^R$")


def stamp(fig: Any, mark: str | None) -> None:
    """Write ``mark`` visibly across the figure (e.g. "scripted replies — not a model's result")."""
    if not mark:
        return
    fig.text(0.5, 0.5, mark, ha="center", va="center", rotation=20, fontsize=16, color="red", alpha=0.35,
             transform=fig.transFigure, zorder=1000)
    fig.text(0.01, 0.005, mark, ha="left", va="bottom", fontsize=8, color="red", transform=fig.transFigure)


def save_figure(fig: Any, out_dir: str | Path, name: str, *, mark: str | None = None) -> list[Path]:
    """Write ``<name>.png`` (150 dpi) and ``<name>.pdf`` atomically and close the figure; ``mark``
    is stamped on the figure and written into the files' metadata."""
    import os
    import tempfile

    stamp(fig, mark)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "pdf"):
        target = out_dir / f"{name}.{ext}"
        fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=f".{ext}")
        os.close(fd)
        try:
            meta = ({"Description" if ext == "png" else "Subject": mark} if mark else None)
            fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight", metadata=meta)
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)
        paths.append(target)
    _plt().close(fig)
    return paths


# ---------------------------------------------------------------------------- Figure 5

def per_turn_tokens(ledger: pd.DataFrame, methods: Sequence[str] = ("reconmem", "full")) -> pd.DataFrame:
    """Mean tokens (input + output, counted purposes) per conversation turn of the preparation
    dialogue, per backbone and method: sum per (sample, turn), then mean over samples at that turn."""
    cols = ["backbone", "method", "turn", "mean_tokens", "n_samples"]
    if ledger.empty or "turn" not in ledger:
        return pd.DataFrame(columns=cols)
    ev = ledger[ledger["method"].isin(list(methods)) & ledger["purpose"].map(is_counted) & ledger["turn"].notna()]
    if "phase" in ev:
        ev = ev[ev["phase"].fillna("prep") == "prep"]
    if ev.empty:
        return pd.DataFrame(columns=cols)
    ev = ev.assign(tokens=ev["input_tokens"].fillna(0) + ev["output_tokens"].fillna(0), turn=ev["turn"].astype(int))
    per_sample = ev.groupby(["backbone", "method", "sample_id", "turn"], as_index=False)["tokens"].sum()
    out = per_sample.groupby(["backbone", "method", "turn"]).agg(mean_tokens=("tokens", "mean"),
                                                                n_samples=("sample_id", "nunique")).reset_index()
    return out[cols]


def figure5(data: pd.DataFrame, out_dir: str | Path, name: str = "fig5_per_turn_tokens", *,
            mark: str | None = None, names: Labels | None = None) -> list[Path]:
    names = names if names is not None else Labels()
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D", "v"]
    for i, bb in enumerate(labels.order_backbones(set(data["backbone"]))):
        for m in labels.order_methods(set(data.loc[data["backbone"] == bb, "method"])):
            d = data[(data["backbone"] == bb) & (data["method"] == m)].sort_values("turn")
            ax.plot(d["turn"], d["mean_tokens"], styles[i % len(styles)], color=method_color(m),
                    marker=markers[i % len(markers)], markersize=3.5, markevery=max(1, len(d) // 12),
                    label=plot_label(f"{names.backbone_label(bb)} {names.method_label(m)}"))
    ax.set_xlabel("Turns")
    ax.set_ylabel("Tokens per turn")
    ax.yaxis.set_major_formatter(plt.FuncFormatter(
        lambda v, _: f"{v / 1000:.0f}K" if v >= 10_000 else (f"{v / 1000:.1f}K" if v >= 1000 else f"{v:.0f}")))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Per-turn token consumption")
    return save_figure(fig, out_dir, name, mark=mark)


# ---------------------------------------------------------------------------- Figure 6

def figure6(summary: pd.DataFrame, out_dir: str | Path, name: str = "fig6_coverage", *,
            mark: str | None = None) -> list[Path]:
    """(a) coverage of the three views, (b) complementarity split; 95% cluster-bootstrap error bars."""
    from benchmarks.analysis.coverage import CATEGORIES, CATEGORY_LABELS, VIEW_LABELS
    from benchmarks.locoeval.coverage_judge import VIEWS

    plt = _plt()
    s = summary.set_index("metric")
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, keys, names, colors, title, ylabel in (
        (a, [f"cov_{v}" for v in VIEWS], [VIEW_LABELS[v] for v in VIEWS], ["#4C72B0", "#DD8452", "#55A868"],
         "(a) Context coverage", "GT-item coverage (%)"),
        (b, list(CATEGORIES), [CATEGORY_LABELS[c] for c in CATEGORIES], ["#4C72B0", "#8172B3", "#DD8452", "#999999"],
         "(b) Coverage complementarity", "Share of GT items (%)"),
    ):
        est = s.loc[keys, "estimate"].to_numpy(float)
        err = np.vstack([est - s.loc[keys, "low"].to_numpy(float), s.loc[keys, "high"].to_numpy(float) - est])
        ticks = [f"{n}\n{v:.2f}%" for n, v in zip(names, est)]
        ax.bar(ticks, est, color=colors, yerr=np.clip(err, 0, None), capsize=4)
        ax.set_ylim(0, 105 if ax is a else max(50.0, float(s.loc[keys, "high"].max()) * 1.15))
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.tick_params(axis="x", labelsize=8)
    n = int(summary["n_task_runs"].iloc[0]) if len(summary) else 0
    fig.suptitle(f"GT-item coverage ({n} task-runs, 95% repository-cluster bootstrap CIs)", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out_dir, name, mark=mark)


# ---------------------------------------------------------------------------- Figure 8

def length_interval(n_turns: Any, width: int = 10) -> str | None:
    """``[30, 40)``-style bin of a conversation length (the paper's intervals for l)."""
    try:
        lo = int(n_turns) // width * width
    except (TypeError, ValueError):
        return None
    return f"[{lo}, {lo + width})"


def pass_by_group(tasks: pd.DataFrame, by: str, *,
                  methods: Sequence[str] | None = labels.TABLE1_METHODS) -> pd.DataFrame:
    """Pass@1 (%) per method by ``k`` (tasks per conversation) or ``l`` (length interval), pooled
    over backbones and subsets (``methods=None``: every method, ablations included). Every task of
    every scored sample counts (an errored sample's tasks as failed)."""
    cols = ["method", "group", "group_order", "pass1", "n_tasks"]
    if tasks.empty:
        return pd.DataFrame(columns=cols)
    t = tasks if methods is None else tasks[tasks["method"].isin(list(methods))]
    if by == "k":
        t = t.assign(group=t["n_tasks"].astype(int).astype(str), group_order=t["n_tasks"].astype(int))
    elif by == "l":
        t = t.assign(group=t["n_turns"].map(length_interval), group_order=(t["n_turns"].astype(int) // 10) * 10)
    else:
        raise ValueError(f"pass_by_group: by must be 'k' or 'l', got {by!r}")
    out = t.groupby(["method", "group", "group_order"]).agg(pass1=("passed", metrics.pass_at_1), n_tasks=("passed", "size"))
    out = out.reset_index()
    out["pass1"] *= 100
    return out[cols].sort_values(["method", "group_order"]).reset_index(drop=True)


def figure8(by_k: pd.DataFrame, by_l: pd.DataFrame, out_dir: str | Path, name: str = "fig8_pass_by_k_l", *,
            mark: str | None = None, names: Labels | None = None) -> list[Path]:
    """Pass@1 by k (left) and by length interval l (right), one line per method (``names``: the runs' labels)."""
    names = names if names is not None else Labels()
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, data, xlabel in ((axes[0], by_k, "k (tasks per conversation)"), (axes[1], by_l, "Interval of l (turns)")):
        groups = data[["group", "group_order"]].drop_duplicates().sort_values("group_order")
        pos = {g: i for i, g in enumerate(groups["group"])}
        for m in labels.order_methods(set(data["method"])):
            d = data[data["method"] == m]
            xs = np.arange(len(pos), dtype=float)
            ys = np.full(len(pos), np.nan)
            for g, v in zip(d["group"], d["pass1"]):
                ys[pos[g]] = v
            ax.plot(xs, ys, marker="o", color=method_color(m), label=plot_label(names.method_label(m)))
        ax.set_xticks(range(len(pos)), list(pos))
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        ax.set_ylim(0, 105)
    axes[0].set_ylabel("Pass@1 (%)")
    axes[1].legend(fontsize=7, loc="best")
    fig.suptitle("Pass@1 by tasks per conversation and conversation length (pooled over backbones and subsets)",
                 fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out_dir, name, mark=mark)
