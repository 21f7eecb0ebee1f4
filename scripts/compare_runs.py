"""Are two runs' records the same, timing aside? (reruns, busy machines, resumes)

    python -m scripts.compare_runs RUN_DIR_A RUN_DIR_B [--json]

A RUN_DIR is ``results/<benchmark>/<backbone>/<method>/<run_id>`` (or a directory above several:
run directories are paired by their relative path). Every record file of every sample is compared
as JSON minus what measures time or bookkeeping (:mod:`benchmarks.analysis.compare_runs`). Prints
one line per file that differs (with the first differing JSON path and both values) and a summary;
exit 0 when the runs agree, 1 when they differ, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.analysis.compare_runs import compare_runs, report_lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.compare_runs", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = parser.parse_args(argv)
    for path in (args.run_a, args.run_b):
        if not path.is_dir():
            print(f"compare_runs: {path}: not a directory", file=sys.stderr)
            return 2
    try:
        report = compare_runs(args.run_a, args.run_b)
    except ValueError as exc:
        print(f"compare_runs: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2, default=str) if args.json else "\n".join(report_lines(report)))
    return 0 if not report["differences"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
