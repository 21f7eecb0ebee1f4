"""Generate the verified scripted LoCoEval-format set, version 2 (``benchmarks/locoeval/verified/v2/``).

    python -m scripts.make_verified_locoeval [--deveval-data PATH] [--out-dir DIR] [--projects ...]
                                             [--min-usable 4] [--tasks 330] [--seed 0] [--workers 1]
                                             [--filter-runs RUN_DIR ...] [--static-only]
    python -m scripts.make_verified_locoeval v1 [the first generator's options; v1 --help]

Deterministic (no LLM): facts of the reference bodies with counterfactuals from each project's own
vocabulary, kept only when a counterfactual fails the task's DevEval tests; every manifest project
with enough oracle-validated tasks takes part. Test outcomes are cached on disk, so an interrupted
run resumes and a rerun repeats no test. ``--filter-runs`` drops the tasks that a ``no_memory`` run
solved (the repository and the model alone). What, how and why: ``benchmarks/locoeval/verified/generate.py``
and docs/locoeval.md. Check the result with ``python -m scripts.validate_locoeval --samples <out-dir>/samples.jsonl``.
``v1`` runs the first set's generator as it was at commit 010fcb4, read from the git history
(:mod:`benchmarks.locoeval.verified.first_set`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from reconmem.platform.offline_env import set_offline_env

set_offline_env()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["v1"]:
        from benchmarks.locoeval.verified.first_set import HistoryUnavailable, run_first_generator

        try:
            return run_first_generator(argv[1:])
        except HistoryUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    ap = argparse.ArgumentParser(prog="python -m scripts.make_verified_locoeval", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deveval-data", type=Path, default=os.environ.get("RECONMEM_DEVEVAL_DATA"),
                    help="DevEval data.jsonl (default: $RECONMEM_DEVEVAL_DATA or the fetched copy)")
    ap.add_argument("--manifest", type=Path, default=None, help="pypi_sources.json (default: the shipped one)")
    ap.add_argument("--out-dir", type=Path, default=Path("benchmarks/locoeval/verified/v2"))
    ap.add_argument("--projects", nargs="*", default=None, help="project paths or names (default: every mapped one)")
    ap.add_argument("--min-usable", type=int, default=4, help="skip projects with fewer oracle-validated tasks")
    ap.add_argument("--tasks", type=int, default=330, help="stop screening once this many tasks are usable")
    ap.add_argument("--max-per-project", type=int, default=40, help="usable tasks per project at most")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1, help="parallel test runs")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test run")
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="test-outcome cache (default: <cache>/locoeval_verified_v2)")
    ap.add_argument("--filter-runs", type=Path, nargs="*", default=[],
                    help="no_memory run directories: drop the tasks they solved")
    ap.add_argument("--static-only", action="store_true",
                    help="count the candidates that pass the static filters per project; no test run, nothing written")
    args = ap.parse_args(argv)

    from benchmarks.locoeval.verified.generate import Options, generate

    opts = Options(out_dir=args.out_dir, deveval_data=args.deveval_data, manifest=args.manifest,
                   projects=args.projects, min_usable=args.min_usable, tasks=args.tasks,
                   max_per_project=args.max_per_project, seed=args.seed, timeout=args.timeout,
                   workers=args.workers, cache_dir=args.cache_dir, filter_runs=list(args.filter_runs),
                   static_only=args.static_only)
    try:
        stats = generate(opts)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(stats, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
