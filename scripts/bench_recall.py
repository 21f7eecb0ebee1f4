"""ReConMem non-LLM recall / update latency versus memory size.

The bench itself is :mod:`benchmarks.perf.recall`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.perf.recall import default_repo, run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench recall", description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, nargs="+", default=[100, 1000, 10000, 100000], help="graph sizes N")
    parser.add_argument("--repo", type=Path, default=None, help="repository root (default: boltons 23.1.1 sdist)")
    parser.add_argument("--queries", type=int, default=200, help="timed recalls per N")
    parser.add_argument("--updates", type=int, default=200, help="timed updates per N")
    parser.add_argument("--k1", type=int, default=2)
    parser.add_argument("--k2", type=int, default=4)
    parser.add_argument("--k31", type=int, default=2)
    parser.add_argument("--k32", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embed-pool", type=int, default=2000,
                        help="memory texts embedded for real; the rest get noisy copies of their vectors (default 2000)")
    args = parser.parse_args(argv)
    sizes = sorted(set(args.memories))
    if any(n < 1 for n in sizes):
        parser.error("--memories: sizes must be >= 1")
    repo_root = args.repo or default_repo()
    if not repo_root.is_dir():
        parser.error(f"--repo: not a directory: {repo_root}")
    k = {"k1": args.k1, "k2": args.k2, "k31": args.k31, "k32": args.k32}
    print(f"ReConMem non-LLM latency (k={k}); timings exclude LLM calls and embedding-model time")
    out = run(sizes, repo_root=repo_root, n_queries=args.queries, n_updates=args.updates, k=k, seed=args.seed,
              embed_pool=args.embed_pool)
    rows = out["rows"]
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        ratio = large["memories"] / small["memories"]
        print(f"ratio N={large['memories']} / N={small['memories']} (x{ratio:g} memories): "
              f"recall p50 x{large['recall_p50'] / small['recall_p50']:.2f}, "
              f"p95 x{large['recall_p95'] / small['recall_p95']:.2f}; "
              f"update p50 x{large['update_p50'] / small['update_p50']:.2f}, "
              f"p95 x{large['update_p95'] / small['update_p95']:.2f}")
    last = rows[-1]
    ok = last["recall_p95"] < 10 and last["update_p95"] < 10 and last["recall_p95"] <= 3 * last["floor_p95"]
    print(f"target at N={last['memories']}: recall and update p95 < 10 ms and recall p95 <= 3x the numpy floor: "
          f"{'met' if ok else 'NOT met'} (recall {last['recall_p95']:.2f} ms, update {last['update_p95']:.2f} ms, "
          f"floor {last['floor_p95']:.2f} ms)")
    return 0
