"""Oracle validation of DevEval tasks: the reference body must pass and a blank body must fail.

    python -m scripts.deveval_oracle [--manifest PATH] [--projects boltons jinja2 ...]
                                     [--executor local|docker] [--workers N] [--out REPORT.json]
                                     [--namespaces NS ...] [--reference LOCAL_REPORT.json]
                                     [--archive URL [--archive-sha256 HEX]]

The manifest (default: the copy shipped in benchmarks/deveval/data/) is any file in the
``pypi_sources.json`` format. The JSON report lists every task's outcome, the tasks that fail the
oracle and the agreement with the manifest's recorded oracle fields (:mod:`benchmarks.deveval.oracle`).
Last line printed: ``oracle: <pass>/<n> reference pass, <blankfail>/<n> blank fail, <seconds> s``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.deveval.evaluate import NEEDS_NETWORK_FIELD
from benchmarks.deveval.oracle import OracleOptions, deveval_way, run_oracle


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", type=Path, default=None, help="manifest JSON (default: shipped copy)")
    ap.add_argument("--projects", nargs="*", default=None, help="project paths, names or PyPI names")
    ap.add_argument("--executor", choices=["local", "docker"], default="local")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data", type=Path, default=None, help="DevEval data.jsonl (default: fetched copy in the cache)")
    ap.add_argument("--out", type=Path, default=Path("results/deveval/oracle_report.json"))
    ap.add_argument("--all-located", action="store_true", help="also run tasks the manifest records as unusable")
    ap.add_argument("--limit", type=int, default=None, help="at most N tasks per project")
    ap.add_argument("--namespaces", nargs="*", default=None, help="only these task namespaces")
    ap.add_argument("--reference", type=Path, default=None,
                    help="a local oracle report: with --executor docker, tasks usable there that fail here "
                         f"with a network error get the manifest field {NEEDS_NETWORK_FIELD}")
    ap.add_argument("--archive", default=None, help="DevEval's Source_Code.tar.gz (URL or file://) as every tree's source")
    ap.add_argument("--archive-sha256", default=None, help="the archive's sha256 (checked after download)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test run")
    ap.add_argument("--memory-mb", type=int, default=5120)
    ap.add_argument("--resume", action="store_true",
                    help="keep the tasks already finished in <out>.partial.jsonl (same executor and source)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--deveval-way", action="store_true",
                    help="throughput baseline: DevEval's way (one `python -m pytest <id>` process per test id, "
                         "sequentially, editing one tree in place) instead of the executor")
    args = ap.parse_args(argv)
    way = args.deveval_way
    del args.deveval_way
    opts = OracleOptions(**vars(args))
    return deveval_way(opts) if way else run_oracle(opts)


if __name__ == "__main__":
    sys.exit(main())
