"""Draw whole samples for a measurement, seeded: at least N tasks from at least R repositories.

    python -m scripts.draw_samples benchmarks/locoeval/fork/set/samples.jsonl --min-tasks 60 --min-repos 20 \\
        --seed 2026 [--max-tasks-per-repo 4] [--json draw.json]

Prints the counts and the Hydra override to run exactly the drawn samples (``'run.ids=[...]'``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.errors import DataError
from benchmarks.sample_draw import draw_samples


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.draw_samples", description=__doc__.split("\n\n")[0])
    p.add_argument("samples", type=Path, help="samples JSONL (records with id, tasks, project_path)")
    p.add_argument("--min-tasks", type=int, required=True)
    p.add_argument("--min-repos", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--max-tasks-per-repo", type=int, default=None)
    p.add_argument("--json", type=Path, default=None, help="also write the draw (seed, counts, ids) here")
    args = p.parse_args(argv)
    if not args.samples.is_file():
        print(f"draw_samples: {args.samples}: no such file", file=sys.stderr)
        return 2
    try:
        draw = draw_samples(args.samples, min_tasks=args.min_tasks, min_repos=args.min_repos, seed=args.seed,
                            max_tasks_per_repo=args.max_tasks_per_repo)
    except DataError as exc:
        print(f"draw_samples: {exc}", file=sys.stderr)
        return 1
    rec = {**draw.record(), "samples_file": str(args.samples), "min_tasks": args.min_tasks,
           "min_repos": args.min_repos, "max_tasks_per_repo": args.max_tasks_per_repo}
    if args.json is not None:
        args.json.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
    print(f"seed {draw.seed}: {len(draw.sample_ids)} samples, {draw.tasks} tasks, {len(draw.repositories)} repositories")
    print(f"'run.ids=[{','.join(draw.sample_ids)}]'")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
