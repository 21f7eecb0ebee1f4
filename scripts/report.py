"""Rebuild every table and figure from existing run records.

    python -m scripts.report --runs results/locoeval results/cab --out reports/latest

Writes ``<out>/report.md`` (index quoting the run manifests) and ``<out>/<benchmark>/`` with
Markdown / LaTeX / CSV tables and PNG / PDF figures; report.md opens with the validity block (what
each method was scored on). Whatever the records do not support is listed under "Not produced".
Runs with scripted replies (backbone, user or judge ``scripted/...``) are refused unless
``--allow-scripted`` is given; then every table and figure is marked "scripted replies — not a
model's result". Exit status 1 if any builder failed, 2 on bad arguments, bad records or refused
scripted runs.
"""

from __future__ import annotations

import argparse
import logging
import sys

from reconmem.platform.offline_env import set_offline_env

set_offline_env()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", default=["results"], help="results roots or run directories")
    parser.add_argument("--out", default="reports/latest", help="output directory")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-tsne", action="store_true", help="skip Figure 7 (needs the embedder)")
    parser.add_argument("--allow-scripted", action="store_true",
                        help="build a report from runs with scripted replies, every table and figure marked as such")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")

    from benchmarks.analysis.report import build_report
    from benchmarks.records import RecordError

    try:
        report = build_report(args.runs, args.out, n_resamples=args.resamples, seed=args.seed, tsne=not args.no_tsne,
                              allow_scripted=args.allow_scripted, command="python -m scripts.report " + " ".join(argv if argv is not None else sys.argv[1:]))
    except RecordError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in report.files():
        print(path)
    for s in report.skipped:
        print(f"not produced: {s}", file=sys.stderr)
    for f in report.failures:
        print(f"FAILED: {f.splitlines()[0]}", file=sys.stderr)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
