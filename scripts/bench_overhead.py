"""The harness's own time per turn: ``python -m scripts.bench methods`` (``--tokens``: the token table).

The bench itself is :mod:`benchmarks.perf.overhead`.
"""

from __future__ import annotations

import argparse
import sys

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.perf.overhead import METHODS, REPO_ROOT, run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--tokens" in argv:
        from scripts import bench_methods

        return bench_methods.main(argv)
    parser = argparse.ArgumentParser(prog="python -m scripts.bench methods", description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma list (default: {','.join(METHODS)})")
    parser.add_argument("--turns", type=int, default=50, help="turns of the scripted conversation")
    parser.add_argument("--repo", default=None, help="repository root (default: the Faker 20.1.0 sdist)")
    parser.add_argument("--repo-context-k", type=int, default=10, help="unified repository adaptation (LoCoEval: 10)")
    parser.add_argument("--backbone", default=str(REPO_ROOT / "conf" / "backbone" / "gpt5_mini.yaml"),
                        help="backbone config the methods are parameterised for (budgets, window); its model is never called")
    parser.add_argument("--backends", default="torch,onnx", help="embedder backends, each method run once per backend, "
                        "back to back (torch | onnx | onnx-int8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="also write the rows as JSON to this file")
    parser.add_argument("--before", default=None, help="rows of an earlier run (--out) to print beside these")
    args = parser.parse_args(argv)
    if args.turns < 1:
        parser.error("--turns must be >= 1")

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
