"""Bootstrap confidence intervals.

* :func:`cluster_bootstrap` — repository-cluster bootstrap (§4.4), here in two stages: draw
  repositories with replacement, then task-runs with replacement within each drawn repository;
  percentile interval. With one unit per cluster it reduces to the ordinary bootstrap.
* :func:`paired_bootstrap` — the difference of two methods' means on the same items (e.g. the
  Pass@1 difference next to Table 1); items are resampled jointly so the pairing is kept,
  optionally clustered by repository.
* :func:`paired_statistic_bootstrap` — the same for any statistic of paired rows (e.g. the
  difference of two compression ratios, each a ratio of sums over the same samples; Table 6).
* :func:`paired_tasks` / :func:`paired_pass_difference` — the one pairing of two methods' task
  outcomes in a tasks frame (one row per backbone, sample, task and repeat) and its paired bootstrap
  in percentage points: Table 1's and Table 6's Δ, the brackets' headroom.
* :func:`mcnemar` — exact McNemar test of two paired binary outcomes (e.g. correct / not correct
  of two methods on the same CAB issues; Table 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class BootstrapCI:
    """A point estimate with its percentile bootstrap interval."""

    estimate: Any  # float, or an array for a vector statistic
    low: Any
    high: Any
    n_units: int
    n_clusters: int
    n_resamples: int
    confidence: float
    distribution: np.ndarray | None = None


@dataclass(frozen=True)
class PairedDifference:
    """mean(a) - mean(b) over paired items, with a percentile interval and a bootstrap p-value."""

    difference: float
    low: float
    high: float
    p_value: float  # two-sided: 2 * min(P*(d <= 0), P*(d >= 0)), capped at 1
    n_items: int
    n_clusters: int
    n_resamples: int
    confidence: float


def _mean0(x: np.ndarray) -> Any:
    return x.mean(axis=0)


def cluster_bootstrap(values: Sequence[Any] | np.ndarray, clusters: Sequence[Any] | None = None, *,
                      statistic: Callable[[np.ndarray], Any] | None = None, n_resamples: int = 2000,
                      confidence: float = 0.95, seed: int | np.random.Generator | None = 0,
                      keep_distribution: bool = False) -> BootstrapCI:
    """Two-stage cluster bootstrap of ``statistic`` (default: the mean over units, column-wise).

    ``values``: one row per unit (task-run), shape (n,) or (n, k). ``clusters``: the cluster label of
    each unit (repository id); ``None`` makes every unit its own cluster. Each resample draws as many
    clusters as there are, with replacement, then for each drawn cluster draws as many of its units
    as it has, with replacement; ``statistic`` is applied to the stacked rows. The interval is the
    percentile interval of the resampled statistics (``numpy.percentile``, linear interpolation —
    the same rule as ``scipy.stats.bootstrap(method="percentile")``).
    """
    arr = np.asarray(values, dtype=float)
    if arr.ndim not in (1, 2) or arr.shape[0] == 0:
        raise ValueError(f"cluster_bootstrap: values must be a non-empty 1-d or 2-d array, got shape {arr.shape}")
    if not 0 < confidence < 1:
        raise ValueError(f"cluster_bootstrap: confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"cluster_bootstrap: n_resamples must be >= 1, got {n_resamples}")
    n = arr.shape[0]
    labels = np.arange(n) if clusters is None else np.asarray(list(clusters), dtype=object)
    if len(labels) != n:
        raise ValueError(f"cluster_bootstrap: {len(labels)} cluster labels for {n} units")
    stat = statistic or _mean0
    _, inverse = np.unique(labels.astype(str), return_inverse=True)
    members = [np.flatnonzero(inverse == c) for c in range(inverse.max() + 1)]
    n_clusters = len(members)
    sizes = np.array([len(m) for m in members])
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    singleton = bool((sizes == 1).all())
    draws = []
    for _ in range(n_resamples):
        picked = rng.integers(0, n_clusters, n_clusters)
        if singleton:
            idx = np.concatenate([members[c] for c in picked])
        else:
            idx = np.concatenate([members[c][rng.integers(0, sizes[c], sizes[c])] for c in picked])
        draws.append(np.asarray(stat(arr[idx]), dtype=float))
    dist = np.stack(draws)
    alpha = (1 - confidence) / 2
    low, high = np.percentile(dist, [100 * alpha, 100 * (1 - alpha)], axis=0)
    estimate = np.asarray(stat(arr), dtype=float)

    def scalar(x: np.ndarray) -> Any:
        return float(x) if np.ndim(x) == 0 else x

    return BootstrapCI(estimate=scalar(estimate), low=scalar(low), high=scalar(high), n_units=n,
                       n_clusters=n_clusters, n_resamples=n_resamples, confidence=confidence,
                       distribution=dist if keep_distribution else None)


def paired_bootstrap(a: Sequence[Any], b: Sequence[Any], clusters: Sequence[Any] | None = None, *,
                     n_resamples: int = 2000, confidence: float = 0.95,
                     seed: int | np.random.Generator | None = 0) -> PairedDifference:
    """Paired bootstrap of ``mean(a) - mean(b)`` where ``a[i]`` and ``b[i]`` are the same item.

    Pass booleans (passed / failed) or numbers. ``clusters`` (e.g. repository ids) resamples whole
    clusters first, as :func:`cluster_bootstrap` does; the difference is in the units of ``a``
    (multiply by 100 for percentage points of Pass@1).
    """
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    if xa.shape != xb.shape or xa.ndim != 1:
        raise ValueError(f"paired_bootstrap: a and b must be 1-d and aligned, got {xa.shape} and {xb.shape}")
    ci = cluster_bootstrap(xa - xb, clusters, n_resamples=n_resamples, confidence=confidence, seed=seed,
                           keep_distribution=True)
    dist = ci.distribution
    assert dist is not None
    p = min(1.0, 2 * min(float(np.mean(dist <= 0)), float(np.mean(dist >= 0))))
    return PairedDifference(difference=float(ci.estimate), low=float(ci.low), high=float(ci.high), p_value=p,
                            n_items=ci.n_units, n_clusters=ci.n_clusters, n_resamples=n_resamples,
                            confidence=confidence)


def paired_statistic_bootstrap(rows: Sequence[Any] | np.ndarray, statistic: Callable[[np.ndarray], float],
                               clusters: Sequence[Any] | None = None, *, n_resamples: int = 2000,
                               confidence: float = 0.95, seed: int | np.random.Generator | None = 0) -> PairedDifference:
    """Bootstrap of a difference ``statistic(rows)`` over paired rows (one row per item holding every
    compared quantity, e.g. ``[input(Full), input(A), input(B)]`` of a sample), resampled as
    :func:`cluster_bootstrap` does; two-sided p as in :func:`paired_bootstrap`."""
    arr = np.asarray(rows, dtype=float)
    ci = cluster_bootstrap(arr, clusters, statistic=statistic, n_resamples=n_resamples, confidence=confidence,
                           seed=seed, keep_distribution=True)
    dist = ci.distribution
    assert dist is not None
    dist = dist[np.isfinite(dist)]
    p = min(1.0, 2 * min(float(np.mean(dist <= 0)), float(np.mean(dist >= 0)))) if dist.size else float("nan")
    return PairedDifference(difference=float(ci.estimate), low=float(ci.low), high=float(ci.high), p_value=p,
                            n_items=ci.n_units, n_clusters=ci.n_clusters, n_resamples=n_resamples,
                            confidence=confidence)


PAIR_KEYS = ("backbone", "sample_id", "req_id", "repeat")  # one paired row per task and repeat
PAIRED_EMPTY = {"paired_diff_pp": float("nan"), "ci_low_pp": float("nan"), "ci_high_pp": float("nan"),
                "p_value": float("nan"), "n_paired": 0}


def paired_tasks(tasks: "pd.DataFrame", a: str, b: str) -> "pd.DataFrame":
    """The tasks both ``a`` and ``b`` were scored on, one row per (backbone, sample, task, repeat):
    ``passed_a``, ``passed_b`` and ``repo_cluster`` (a's). Repeat i of ``a`` pairs with repeat i of
    ``b`` only (a frame without a ``repeat`` column is one repeat). A method with two rows of the same
    key is a ``ValueError`` (its runs were merged wrongly)."""
    keys = [k for k in PAIR_KEYS if k in tasks]
    sides = []
    for method, suffix in ((a, "_a"), (b, "_b")):
        rows = tasks[tasks["method"] == method]
        dup = rows.duplicated(keys)
        if dup.any():
            first = rows[dup].iloc[0]
            raise ValueError(f"paired_tasks: method {method} has more than one row for "
                             + ", ".join(f"{k}={first[k]}" for k in keys))
        cols = keys + ["passed"] + (["repo_cluster"] if suffix == "_a" else [])
        sides.append(rows[cols].rename(columns={"passed": f"passed{suffix}"}))
    return sides[0].merge(sides[1], on=keys)


def paired_pass_difference(tasks: "pd.DataFrame", a: str, b: str, *, n_resamples: int = 2000,
                           seed: int | np.random.Generator | None = 0) -> dict[str, Any]:
    """Pass@1(a) − Pass@1(b) in pp over :func:`paired_tasks`, with its 95% percentile interval and
    two-sided p from a paired bootstrap clustered by repository (``paired_diff_pp``, ``ci_low_pp``,
    ``ci_high_pp``, ``p_value``, ``n_paired``: the paired rows); :data:`PAIRED_EMPTY` without any."""
    both = paired_tasks(tasks, a, b)
    if both.empty:
        return dict(PAIRED_EMPTY)
    res = paired_bootstrap(both["passed_a"].to_numpy(), both["passed_b"].to_numpy(),
                           clusters=both["repo_cluster"].astype(str).to_numpy(), n_resamples=n_resamples, seed=seed)
    return {"paired_diff_pp": 100 * res.difference, "ci_low_pp": 100 * res.low, "ci_high_pp": 100 * res.high,
            "p_value": res.p_value, "n_paired": res.n_items}


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test of paired binary outcomes a[i], b[i]."""

    difference: float   # mean(a) - mean(b)
    a_only: int         # items where a is true and b false
    b_only: int         # items where b is true and a false
    p_value: float      # two-sided exact binomial p on the discordant pairs (1.0 when there are none)
    n_items: int


def mcnemar(a: Sequence[Any], b: Sequence[Any]) -> McNemar:
    """Exact two-sided McNemar test: under H0 the discordant pairs split Binomial(a_only + b_only, 1/2)."""
    xa = np.asarray(a, dtype=bool)
    xb = np.asarray(b, dtype=bool)
    if xa.shape != xb.shape or xa.ndim != 1:
        raise ValueError(f"mcnemar: a and b must be 1-d and aligned, got {xa.shape} and {xb.shape}")
    a_only, b_only = int(np.sum(xa & ~xb)), int(np.sum(~xa & xb))
    n = a_only + b_only
    k = min(a_only, b_only)
    p = 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)
    diff = float(xa.mean() - xb.mean()) if xa.size else float("nan")
    return McNemar(difference=diff, a_only=a_only, b_only=b_only, p_value=p, n_items=int(xa.size))
