"""List or prune this project's Docker images and containers (``make docker-prune``).

    python -m scripts.docker_images list
    python -m scripts.docker_images prune [--keep none|base|env] [--dry-run]

``prune`` removes stopped run containers, dangling build layers of project builds, and images by
the cache policy ``--keep``: ``none`` (default) removes every project image, ``base`` keeps the
base image, ``env`` keeps base and environment images. Images used by a running container are
never forced. Which images are the project's: :mod:`benchmarks.sandbox.images`.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.sandbox.docker_exec import DockerExecutor, DockerUnavailable
from benchmarks.sandbox.images import project_images, prune


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="list the project's images")
    p = sub.add_parser("prune", help="remove the project's images and stopped containers")
    p.add_argument("--keep", choices=["none", "base", "env"], default="none")
    p.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    try:
        client = DockerExecutor().client
    except DockerUnavailable as exc:
        print(f"docker-images: {exc}", file=sys.stderr)
        return 1
    if args.cmd == "list":
        for kind, image in project_images(client):
            size = int(image.attrs.get("Size") or 0) / 1e6
            print(f"{kind:8s} {image.short_id:20s} {size:8.0f} MB  {' '.join(image.tags) or '<none>'}")
        return 0
    res = prune(client, args.keep, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    print(f"docker-prune: {verb} {res['images']} image(s) ({res['bytes'] / 1e6:.0f} MB) and {res['containers']} "
          f"stopped container(s); kept {res['kept']} (--keep {args.keep}); {res['in_use']} in use or already gone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
