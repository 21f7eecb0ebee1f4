"""The seeded sample draw: minimums met, cap respected, spread over repositories first, reproducible."""

from __future__ import annotations

import json

import pytest

from benchmarks.errors import DataError
from benchmarks.sample_draw import draw_samples


def _set(tmp_path, spec):
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps({"id": f"{repo}-{i}", "project_path": repo, "tasks": [{}] * n}) + "\n"
                            for repo, sizes in spec.items() for i, n in enumerate(sizes)))
    return path


def test_draw_meets_minimums_spreads_first_and_is_reproducible(tmp_path):
    path = _set(tmp_path, {"A": [3, 3, 3, 1], "B": [1, 1], "C": [2], "D": [4, 1]})
    d = draw_samples(path, min_tasks=8, min_repos=4, seed=5)
    assert d.tasks >= 8 and len(d.repositories) == 4
    assert [s.split("-")[0] for s in d.sample_ids[:4]] == d.repositories  # one per repository before any second
    assert draw_samples(path, min_tasks=8, min_repos=4, seed=5).sample_ids == d.sample_ids
    capped = draw_samples(path, min_tasks=8, min_repos=4, seed=5, max_tasks_per_repo=3)
    per_repo = {}
    for sid in capped.sample_ids:
        repo, i = sid.split("-")
        per_repo[repo] = per_repo.get(repo, 0) + {"A": [3, 3, 3, 1], "B": [1, 1], "C": [2], "D": [4, 1]}[repo][int(i)]
    assert max(per_repo.values()) <= 3


def test_draw_that_cannot_be_met_names_the_file(tmp_path):
    path = _set(tmp_path, {"A": [3], "B": [1]})
    with pytest.raises(DataError, match="samples.jsonl.*needs >= 10 from >= 2"):
        draw_samples(path, min_tasks=10, min_repos=2, seed=1)
