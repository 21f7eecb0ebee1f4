"""``python -m scripts.bench retrieval``: recall@10, MRR and ms/query of the code retrievers, in one run.

The bench itself is :mod:`benchmarks.perf.retrieval`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.perf.retrieval import BACKENDS, DEFAULT_PROJECTS, SPACES, run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    from benchmarks.deveval.tasks import default_data_path

    parser = argparse.ArgumentParser(prog="python -m scripts.bench retrieval", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="DevEval data.jsonl (default: $RECONMEM_DEVEVAL_DATA or the fetched copy)")
    parser.add_argument("--manifest", type=Path, default=None, help="pypi_sources.json (default: the shipped one)")
    parser.add_argument("--projects", default=",".join(DEFAULT_PROJECTS),
                        help="comma-separated DevEval project paths (default: 13 mapped projects)")
    parser.add_argument("--max-per-project", type=int, default=30, help="tasks per project (with at least one callee)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated subset of dense,bm25,hybrid")
    parser.add_argument("--spaces", default=",".join(SPACES), help="comma-separated subset of all,functions")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    backends = [b for b in args.backends.split(",") if b]
    spaces = [s for s in args.spaces.split(",") if s]
    if not backends or set(backends) - set(BACKENDS) or not spaces or set(spaces) - set(SPACES):
        parser.error(f"--backends from {BACKENDS}, --spaces from {tuple(SPACES)}")
    data = args.data or default_data_path()
    if not data.is_file():
        parser.error(f"--data: no DevEval data file at {data} (python -m scripts.fetch_deveval, or $RECONMEM_DEVEVAL_DATA)")
    return run(args, data=data, backends=backends, spaces=spaces)


if __name__ == "__main__":
    sys.exit(main())
