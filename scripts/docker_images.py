"""List or prune this project's Docker images and containers (``make docker-prune``).

    python -m scripts.docker_images list
    python -m scripts.docker_images prune [--keep none|base|env] [--dry-run]

Project images carry the label ``reconmem.project`` (``base``: the local Debian base image;
``env``: one image per project environment; containers of runs: ``run``) or one of the project's
repository names. ``prune`` removes stopped run containers, dangling build layers of project
builds, and images by the cache policy ``--keep`` (like SWE-bench's cache levels):
``none`` (default) removes every project image, ``base`` keeps the base image, ``env`` keeps base
and environment images (only leftovers go). Images used by a running container are never forced.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.sandbox.base_image import BASE_REPO, PROJECT_LABEL
from benchmarks.sandbox.docker_exec import IMAGE_REPO, DockerExecutor, DockerUnavailable

REPOS = (BASE_REPO, IMAGE_REPO)
CAB_PREFIX = "reconmem-cab-"


def kind_of(image) -> str | None:
    """``base`` | ``env`` | ``cab`` | ``dangling`` for a project image, None for any other image."""
    labels = image.labels or {}
    tags = image.tags or []
    if any(t.startswith(BASE_REPO + ":") for t in tags) or labels.get(PROJECT_LABEL) == "base":
        return "base"
    if any(t.startswith(CAB_PREFIX) for t in tags):
        return "cab"
    if any(t.startswith(IMAGE_REPO + ":") for t in tags):
        return "env"
    if labels.get(PROJECT_LABEL) == "env":
        return "dangling" if not tags else "env"
    return None


def project_images(client) -> list[tuple[str, object]]:
    out, seen = [], set()
    # tagged images, then top-level dangling ones (failed or superseded builds); parents of a
    # tagged image are its layers and go with it
    for image in [*client.images.list(), *client.images.list(filters={"dangling": True})]:
        kind = kind_of(image)
        if kind and image.id not in seen:
            seen.add(image.id)
            out.append((kind, image))
    return out


def prune(client, keep: str = "none", *, dry_run: bool = False) -> dict:
    """Remove project containers/images by the policy; returns counts and freed bytes (approximate)."""
    removed = {"containers": 0, "images": 0, "bytes": 0, "kept": 0, "in_use": 0}
    for c in client.containers.list(all=True, filters={"label": f"{PROJECT_LABEL}=run"}):
        if c.status != "running":
            removed["containers"] += 1
            if not dry_run:
                c.remove(force=True)
    keep_kinds = {"none": set(), "base": {"base"}, "env": {"base", "env"}}[keep]
    order = {"cab": 0, "dangling": 1, "env": 2, "base": 3}     # children before the base
    for kind, image in sorted(project_images(client), key=lambda ki: order[ki[0]]):
        if kind in keep_kinds:
            removed["kept"] += 1
            continue
        try:
            if not dry_run:
                client.images.remove(image.id, force=False, noprune=False)
            removed["images"] += 1
            removed["bytes"] += int(image.attrs.get("Size") or 0)
        except Exception:  # noqa: BLE001 - in use by a container, or already gone with a parent
            removed["in_use"] += 1
    return removed


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
