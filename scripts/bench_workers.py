"""Throughput with workers over the real HTTP path: ``python -m scripts.bench workers``.

The bench itself is :mod:`benchmarks.perf.workers`.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.perf.workers import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench workers", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,4,16")
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--method", default="full")
    parser.add_argument("--max-concurrency", type=int, default=None)
    parser.add_argument("--two-processes", action="store_true")
    parser.add_argument("--override", action="append", default=[],
                        help="extra scripts.run override, e.g. method.manager.repo_context_k=0 (HTTP path only)")
    args = parser.parse_args(argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
