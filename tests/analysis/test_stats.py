"""Cluster and paired bootstrap: checked against scipy and against known answers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from benchmarks.analysis.stats import cluster_bootstrap, paired_bootstrap


def test_one_unit_per_cluster_matches_scipy_percentile_bootstrap():
    rng = np.random.default_rng(1)
    values = rng.beta(2, 3, size=37)  # e.g. per-repository coverage, 37 repositories
    ours = cluster_bootstrap(values, clusters=[f"repo{i}" for i in range(37)], n_resamples=4000, seed=7)
    ref = sps.bootstrap((values,), np.mean, n_resamples=4000, method="percentile", confidence_level=0.95,
                        random_state=np.random.default_rng(11))
    se = values.std(ddof=1) / np.sqrt(len(values))
    assert ours.estimate == pytest.approx(values.mean())
    # Monte-Carlo error of a 2.5% / 97.5% quantile from 4000 resamples is ~0.05 SE; allow 0.2 SE.
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.2 * se)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.2 * se)
    assert ours.n_clusters == 37


def test_two_stage_resamples_whole_clusters():
    # Two repositories with constant values: any resample mean is 0, 1 or the share of B's units.
    values = np.array([0.0] * 3 + [1.0] * 7)
    clusters = ["A"] * 3 + ["B"] * 7
    ci = cluster_bootstrap(values, clusters, n_resamples=4000, seed=3, keep_distribution=True)
    dist = ci.distribution
    support = {0.0, 1.0, 0.7}  # (A,A) -> 0, (B,B) -> 1, (A,B)/(B,A) -> 7 of 10 units
    assert set(np.round(dist, 6)) <= support
    assert np.mean(np.isclose(dist, 0.7)) == pytest.approx(0.5, abs=0.03)
    assert np.mean(dist == 0.0) == pytest.approx(0.25, abs=0.03)
    assert (ci.low, ci.high) == (0.0, 1.0)


def test_within_cluster_resampling_happens():
    # One cluster: the between-cluster draw is trivial, so all variation is within-cluster.
    values = np.array([0.0, 1.0, 0.0, 1.0])
    ci = cluster_bootstrap(values, ["A"] * 4, n_resamples=2000, seed=0, keep_distribution=True)
    assert ci.distribution.std() > 0.1
    assert set(np.round(ci.distribution * 4)) <= {0, 1, 2, 3, 4}


def test_vector_statistic_and_validation():
    values = np.column_stack([np.arange(10.0), np.arange(10.0) * 2])
    ci = cluster_bootstrap(values, None, n_resamples=200, seed=0)
    assert np.allclose(ci.estimate, [4.5, 9.0])
    assert np.all(ci.low <= ci.estimate) and np.all(ci.estimate <= ci.high)
    with pytest.raises(ValueError, match="cluster labels"):
        cluster_bootstrap([1.0, 2.0], ["a"])
    with pytest.raises(ValueError, match="non-empty"):
        cluster_bootstrap([], None)


def test_paired_bootstrap_known_answers():
    # Every item: A passes, B fails -> difference exactly 1, degenerate interval, p = 0.
    res = paired_bootstrap([1] * 20, [0] * 20, n_resamples=500, seed=0)
    assert (res.difference, res.low, res.high, res.p_value) == (1.0, 1.0, 1.0, 0.0)
    # Identical results -> 0 with p = 1.
    same = paired_bootstrap([1, 0, 1, 1], [1, 0, 1, 1], n_resamples=300, seed=0)
    assert (same.difference, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    # Half the items +1, half 0: the resampled mean is Binomial(n, 1/2) / n, so the percentile
    # interval is its 2.5% / 97.5% quantiles (within Monte-Carlo error).
    n = 100
    a = np.array([1] * 50 + [1] * 50)
    b = np.array([0] * 50 + [1] * 50)
    res = paired_bootstrap(a, b, n_resamples=5000, seed=2)
    assert res.difference == pytest.approx(0.5)
    assert res.low == pytest.approx(sps.binom.ppf(0.025, n, 0.5) / n, abs=0.011)
    assert res.high == pytest.approx(sps.binom.ppf(0.975, n, 0.5) / n, abs=0.011)
    assert res.p_value == 0.0
    with pytest.raises(ValueError, match="aligned"):
        paired_bootstrap([1, 0], [1])


def _tasks(rows):
    import pandas as pd

    return pd.DataFrame(rows, columns=["backbone", "method", "repeat", "sample_id", "req_id", "passed", "repo_cluster"])


def test_paired_tasks_pair_repeat_i_with_repeat_i():
    """Two repeats of two methods over 3 tasks: 6 paired rows (one per task and repeat), not 3 x 2 x 2 = 12."""
    from benchmarks.analysis.stats import paired_pass_difference, paired_tasks

    rows = []
    for method, outcomes in (("a", {1: [1, 1, 0], 2: [1, 0, 0]}), ("b", {1: [0, 1, 0], 2: [0, 0, 0]})):
        for rep, passed in outcomes.items():
            rows += [("bb", method, rep, "s1" if i < 2 else "s2", f"r{i}", bool(p), "repoA" if i < 2 else "repoB")
                     for i, p in enumerate(passed)]
    rows.append(("bb", "a", 3, "s1", "r0", True, "repoA"))  # a repeat b does not have: no pair
    both = paired_tasks(_tasks(rows), "a", "b")
    assert len(both) == 6
    assert not both.duplicated(["backbone", "sample_id", "req_id", "repeat"]).any()
    assert sorted(zip(both["repeat"], both["req_id"])) == [(r, f"r{i}") for r in (1, 2) for i in range(3)]
    out = paired_pass_difference(_tasks(rows), "a", "b", n_resamples=200)
    assert out["n_paired"] == 6 and out["paired_diff_pp"] == pytest.approx(100 * 2 / 6)
    assert paired_pass_difference(_tasks(rows), "a", "c")["n_paired"] == 0


def test_paired_tasks_refuse_a_method_with_two_rows_of_one_key():
    from benchmarks.analysis.stats import paired_tasks

    rows = [("bb", "a", 1, "s1", "r0", True, "x"), ("bb", "a", 1, "s1", "r0", False, "x"),
            ("bb", "b", 1, "s1", "r0", True, "x")]
    with pytest.raises(ValueError, match="method a has more than one row for backbone=bb, sample_id=s1, req_id=r0"):
        paired_tasks(_tasks(rows), "a", "b")
