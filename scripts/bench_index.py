"""``python -m scripts.bench index --repo PATH``: repository index throughput.

Prints one line: files, entities, seconds, files/s, entities/s (tree-sitter parsing and entity
extraction only). ``--embed`` adds a second line with the time to embed the entities of
``--kinds`` (default: function) with the default embedder (cached texts count as hits).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench index", description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="repository root directory to index")
    parser.add_argument("--languages", default=None, help="comma-separated languages (default: all supported)")
    parser.add_argument("--max-file-bytes", type=int, default=1_000_000)
    parser.add_argument("--embed", action="store_true", help="also time embedding the entities")
    parser.add_argument("--kinds", default="function", help="entity kinds to embed with --embed (comma-separated)")
    args = parser.parse_args(argv)

    repo = Path(args.repo).expanduser()
    if not repo.is_dir():
        parser.error(f"--repo: not a directory: {repo}")
    from reconmem.platform.code import RepositoryIndex

    languages = [x for x in args.languages.split(",") if x] if args.languages else None
    started = time.perf_counter()
    index = RepositoryIndex.build(repo, languages=languages, max_file_bytes=args.max_file_bytes)
    seconds = time.perf_counter() - started
    n_files = len(index.files())
    n_entities = len(index.entities)
    print(
        f"index {repo.name}: files={n_files} entities={n_entities} seconds={seconds:.3f} "
        f"files/s={n_files / max(seconds, 1e-9):.1f} entities/s={n_entities / max(seconds, 1e-9):.1f}"
    )
    if args.embed:
        from reconmem.platform.embed import Embedder

        kinds = tuple(k for k in args.kinds.split(",") if k)
        embedder = Embedder()
        started = time.perf_counter()
        paths, _ = index.entity_vectors(embedder, kinds=kinds)
        seconds = time.perf_counter() - started
        stats = embedder.stats
        print(
            f"embed {repo.name}: entities={len(paths)} kinds={','.join(kinds)} seconds={seconds:.3f} "
            f"entities/s={len(paths) / max(seconds, 1e-9):.1f} computed={stats['computed']} "
            f"disk_hits={stats['disk_hits']} (includes model import/load on first use)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
