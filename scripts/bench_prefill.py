"""``python -m scripts.bench prefill``: prompt tokens the local model actually prefills per call purpose.

The bench itself is :mod:`benchmarks.perf.prefill`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.perf.prefill import run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench prefill", description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="local", help="conf/backbone/<name>.yaml or a YAML path (default: local)")
    parser.add_argument("--turns", type=int, default=4, help="conversation turns (3 calls each, default 4)")
    parser.add_argument("--max-tokens", type=int, default=24, help="output tokens per call (default 24)")
    parser.add_argument("--threads", type=int, default=None, help="override backbone.local.threads")
    parser.add_argument("--n-ctx", type=int, default=8192, help="backbone.local.n_ctx for the bench (default 8192)")
    parser.add_argument("--json", type=Path, default=None, help="also write the replies and counts to this file")
    args = parser.parse_args(argv)
    if args.turns < 1:
        parser.error("--turns must be >= 1")

    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
