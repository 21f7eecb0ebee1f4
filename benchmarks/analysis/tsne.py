"""Figure 7: t-SNE of the retrieved semantic (memory texts) and structural (code) contexts,
coloured by the query branch that retrieved them (original vs dual), from recorded contexts.

Embeddings default to the harness embedder (all-MiniLM-L6-v2, :class:`reconmem.platform.embed.Embedder`,
disk-cached); tests pass any ``embed(texts) -> ndarray`` instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from benchmarks.locoeval.coverage_judge import context_branch_map, modality

BRANCH_LABELS = {"original_query": "original query", "dual_query": "dual query"}
BRANCH_COLORS = {"original_query": "#1f77b4", "dual_query": "#ff7f0e"}
PANELS = (("semantic", "Semantic Context"), ("structural", "Structural Context"))


def retrieved_items(samples: Iterable[Any], *, methods: Sequence[str] = ("reconmem",),
                    phases: Sequence[str] | None = ("task",)) -> pd.DataFrame:
    """One row per distinct (sample, modality, branch, text) retrieved by ``methods`` in ``phases``
    (``None`` = every phase); items of both branches appear once per branch."""
    rows = []
    for s in samples:
        if not s.ok or s.run.method not in methods:
            continue
        seen: set[tuple[str, str, str]] = set()
        for row in s.dir.contexts():
            if phases is not None and row.get("phase") not in phases:
                continue
            context = row.get("context") or {}
            items = context.get("items") or []
            for it, branches in zip(items, context_branch_map(context)):  # independent branch views
                text = str(it.get("text") or "")
                for b in sorted(branches):
                    key = (modality(it), b, text)
                    if not text.strip() or key in seen:
                        continue
                    seen.add(key)
                    rows.append({"backbone": s.run.backbone, "method": s.run.method, "sample_id": s.sample_id,
                                 "panel": key[0], "branch": b, "item_id": it.get("id"), "text": text})
    return pd.DataFrame(rows, columns=["backbone", "method", "sample_id", "panel", "branch", "item_id", "text"])


def default_embed(texts: Sequence[str]) -> np.ndarray:
    from reconmem.platform.embed import Embedder

    return Embedder().encode(list(texts))


def tsne_points(items: pd.DataFrame, *, embed: Callable[[Sequence[str]], np.ndarray] | None = None,
                seed: int = 0) -> pd.DataFrame:
    """2-d t-SNE coordinates (columns ``x``, ``y``) per panel; panels with < 3 points are dropped."""
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    embed = embed or default_embed
    parts = []
    for panel, _ in PANELS:
        sel = items[items["panel"] == panel].reset_index(drop=True)
        if len(sel) < 3:
            continue
        vectors = np.asarray(embed(sel["text"].tolist()), dtype=np.float32)
        perplexity = float(min(30.0, max(1.0, (len(sel) - 1) / 3)))
        # One thread: OpenMP spin-waiting makes t-SNE ~40x slower on a busy shared machine.
        with threadpool_limits(1):
            xy = TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed,
                      metric="cosine").fit_transform(vectors)
        parts.append(sel.assign(x=xy[:, 0], y=xy[:, 1]))
    cols = [*items.columns, "x", "y"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def figure7(points: pd.DataFrame, out_dir: str | Path, name: str = "fig7_tsne", *,
            mark: str | None = None) -> list[Path]:
    from benchmarks.analysis.figures import _plt, save_figure

    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for ax, (panel, title) in zip(axes, PANELS):
        sel = points[points["panel"] == panel]
        for branch in ("original_query", "dual_query"):
            d = sel[sel["branch"] == branch]
            if len(d):
                ax.scatter(d["x"], d["y"], s=12, alpha=0.6, color=BRANCH_COLORS[branch],
                           label=f"{BRANCH_LABELS[branch]} ({len(d)})")
        ax.set_title(title + ("" if len(sel) else " (too few points)"))
        ax.grid(alpha=0.3)
        if len(sel):
            ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, out_dir, name, mark=mark)
