"""``python -m scripts.bench index --repo PATH [--embed]``: repository index + embedding seconds by phase.

The bench itself is :mod:`benchmarks.perf.index`.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.perf.index import embed_backends, load_average  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench index", description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="repository root directory to index")
    parser.add_argument("--languages", default=None, help="comma-separated languages (default: all supported)")
    parser.add_argument("--max-file-bytes", type=int, default=1_000_000)
    parser.add_argument("--embed", action="store_true", help="also time embedding the entities")
    parser.add_argument("--kinds", default="file,type,function,variable",
                        help="entity kinds to embed with --embed (comma-separated; default: all but directories)")
    parser.add_argument("--backends", default="torch,onnx,onnx-int8", help="--embed: embedder backends to compare (torch always; onnx@N: onnx truncated at N word pieces, embedder.max_tokens=N)")
    parser.add_argument("--sample", type=int, default=0, help="--embed: compare the backends on this many entity texts (0: all)")
    parser.add_argument("--queries", type=int, default=200, help="--embed: repository-search queries for the top-10 overlap")
    parser.add_argument("--seed", type=int, default=0, help="--embed: seed of the text sample and the queries")
    parser.add_argument("--round-texts", type=int, default=256, help="--embed: texts per interleaving round (whole length groups)")
    parser.add_argument("--full-backend", default=None, help="--embed: backend of the cold full embed (default: fastest that agrees)")
    parser.add_argument("--no-full", action="store_true", help="--embed: skip the cold index + embed of every entity")
    parser.add_argument("--out", default=None, help="--embed: also write the table as JSON here")
    parser.add_argument("--batch-size", type=int, default=None, help="--embed: embedder batch size (default: the Embedder's)")
    args = parser.parse_args(argv)

    repo = Path(args.repo).expanduser()
    if not repo.is_dir():
        parser.error(f"--repo: not a directory: {repo}")
    from reconmem.platform.code import RepositoryIndex

    languages = [x for x in args.languages.split(",") if x] if args.languages else None
    opts = {"languages": languages, "max_file_bytes": args.max_file_bytes}
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        index = RepositoryIndex.build(repo, cache_dir=False, **opts)
        t = index.build_timings
        n_files, n_entities = len(index.files()), len(index.entities)
        print(f"index {repo.name}: files={n_files} entities={n_entities} seconds={t['total']:.3f} "
              f"(walk+read+hash {t['walk_read_hash']:.3f}, parse+extract {t['parse_extract']:.3f}) "
              f"files/s={n_files / max(t['total'], 1e-9):.1f} entities/s={n_entities / max(t['total'], 1e-9):.1f}")
        RepositoryIndex.build(repo, cache_dir=Path(tmp) / "index", **opts)  # fills the snapshot cache
        again = RepositoryIndex.build(repo, cache_dir=Path(tmp) / "index", **opts)
        same = again.from_cache and list(again.entities) == list(index.entities) and again.entities == index.entities
        t2 = again.build_timings
        print(f"index cached {repo.name}: seconds={t2['total']:.3f} (walk+read+hash {t2['walk_read_hash']:.3f}, "
              f"load snapshot {t2.get('load_snapshot', float('nan')):.3f}) -> {t['total'] / max(t2['total'], 1e-9):.1f}x "
              f"faster; identical entities: {'yes' if same else 'NO'}")
        if not args.embed:
            return 0 if same else 1

        embed_backends(args, index, repo, t["total"], Path(tmp), opts)
        print(f"load: {load_average()}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
