"""Fetch DevEval's task file (data.jsonl) into the cache, verified against the shipped checksum.

Source: GitHub seketeam/DevEval, file ``data.tar.gz`` at commit
c1653455e0a18480a29aa07ba51636070f113316 (2024-09-04), which unpacks to ``data.jsonl``
(1,825 tasks). Checksums: benchmarks/deveval/data/data.jsonl.sha256.

    python -m scripts.fetch_deveval                     # download from GitHub
    python -m scripts.fetch_deveval --from PATH         # install a local copy (data.jsonl or data.tar.gz)
    python -m scripts.fetch_deveval --dest PATH         # somewhere else than <cache>/deveval/data.jsonl
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.deveval.fetch import URL, fetch
from benchmarks.deveval.tasks import default_data_path, load_tasks
from reconmem.platform.downloads import DownloadError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="source", help="local data.jsonl or data.tar.gz instead of downloading")
    ap.add_argument("--dest", type=Path, default=None, help="target path (default: <cache>/deveval/data.jsonl)")
    ap.add_argument("--url", default=URL)
    args = ap.parse_args(argv)
    dest = args.dest or default_data_path()
    try:
        path = fetch(dest, args.source, args.url)
    except DownloadError as exc:
        print(f"fetch_deveval: {exc}", file=sys.stderr)
        return 1
    n = len(load_tasks(path))
    print(f"DevEval data: {path} ({n} tasks, sha256 verified)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
