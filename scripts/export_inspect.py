"""Export run records to inspect_ai eval logs, one per run, for inspect_ai's log viewer.

    python -m scripts.export_inspect results/demo/local --out logs/demo
    inspect view --log-dir logs/demo            # then open http://127.0.0.1:7575

RUN_DIR may be a run directory or any directory above several (as for ``scripts.report``); give
the Full run together with the others so that CR can be computed. Logic:
``benchmarks.analysis.inspect_export``. Needs the ``inspect`` extra (``pip install -e '.[inspect]'``).
Exit status 2 on bad records or a missing inspect_ai.
"""

from __future__ import annotations

import argparse
import sys

from reconmem.platform.offline_env import set_offline_env

set_offline_env()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.export_inspect", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories or results roots")
    parser.add_argument("--out", required=True, help="directory for the .eval logs")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples of Table 1 (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from benchmarks.analysis.inspect_export import InspectUnavailable, export_runs
    from benchmarks.records import RecordError

    try:
        written = export_runs(args.runs, args.out, n_resamples=args.resamples, seed=args.seed)
    except (RecordError, InspectUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for log in written:
        print(f"{log.path}  ({log.run_dir}: {log.n_samples} samples, {log.n_events} model events)")
    print(f"inspect view --log-dir {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
