"""A seeded draw of whole samples for a measurement: at least N tasks from at least R repositories.

Used where a measurement cannot afford the whole set (an expert-answered bracket, a paid pilot): the
draw is stated by its seed and its limits, so anyone regenerates the same selection from the set file.
Repositories are taken in a seeded order, one sample from each in turn (round robin), so the draw
spreads over repositories before it deepens any; a repository gives at most ``max_tasks_per_repo``
tasks. The draw stops at the first sample with which both minimums hold.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.errors import DataError
from reconmem.platform.jsonfiles import iter_json_records


@dataclass
class Draw:
    """The drawn sample ids, in draw order, with what they hold."""

    seed: int
    sample_ids: list[str] = field(default_factory=list)
    tasks: int = 0
    repositories: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"seed": self.seed, "samples": len(self.sample_ids), "tasks": self.tasks,
                "repositories": len(self.repositories), "sample_ids": self.sample_ids}


def draw_samples(samples_file: str | Path, *, min_tasks: int, min_repos: int, seed: int,
                 max_tasks_per_repo: int | None = None, group_field: str = "project_path") -> Draw:
    """Draw whole samples of ``samples_file`` (JSONL, ``tasks`` and ``group_field`` per record); DataError
    when the set cannot meet the minimums under the cap."""
    by_repo: dict[str, list[tuple[str, int]]] = {}
    for where, rec in iter_json_records(Path(samples_file), error=DataError):
        if "id" not in rec or group_field not in rec:
            raise DataError(f"{where}: a sample needs 'id' and {group_field!r}")
        by_repo.setdefault(str(rec[group_field]), []).append((str(rec["id"]), len(rec.get("tasks") or [])))
    rng = random.Random(seed)
    repos = sorted(by_repo)
    rng.shuffle(repos)
    queues = {r: rng.sample(sorted(by_repo[r]), len(by_repo[r])) for r in repos}
    taken: dict[str, int] = {r: 0 for r in repos}
    out = Draw(seed=seed)
    while True:
        progressed = False
        for repo in repos:
            while queues[repo]:
                sid, n = queues[repo].pop(0)
                if max_tasks_per_repo is not None and taken[repo] + n > max_tasks_per_repo:
                    continue
                out.sample_ids.append(sid)
                out.tasks += n
                taken[repo] += n
                if repo not in out.repositories:
                    out.repositories.append(repo)
                progressed = True
                if out.tasks >= min_tasks and len(out.repositories) >= min_repos:
                    return out
                break
        if not progressed:
            raise DataError(f"{samples_file}: the set gives {out.tasks} task(s) from {len(out.repositories)} "
                            f"repositories under the cap; the draw needs >= {min_tasks} from >= {min_repos}")
