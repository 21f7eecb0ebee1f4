"""This project's Docker images and containers: which images are the project's, and pruning them
by a cache policy (``python -m scripts.docker_images``, ``make docker-prune``).

Project images carry the label ``reconmem.project`` (``base``: the local Debian base image;
``env``: one image per project environment; containers of runs: ``run``) or one of the project's
repository names. :func:`prune` removes stopped run containers, dangling build layers of project
builds, and images by the cache policy ``keep`` (like SWE-bench's cache levels): ``none`` removes
every project image, ``base`` keeps the base image, ``env`` keeps base and environment images
(only leftovers go). Images used by a running container are never forced.
"""

from __future__ import annotations

from typing import Any

from benchmarks.sandbox.base_image import BASE_REPO, PROJECT_LABEL
from benchmarks.sandbox.docker_exec import IMAGE_REPO
CAB_PREFIX = "reconmem-cab-"


def kind_of(image: Any) -> str | None:
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


def project_images(client: Any) -> list[tuple[str, Any]]:
    """(kind, image) of every project image: tagged ones, then top-level dangling ones."""
    out, seen = [], set()
    # tagged images, then top-level dangling ones (failed or superseded builds); parents of a
    # tagged image are its layers and go with it
    for image in [*client.images.list(), *client.images.list(filters={"dangling": True})]:
        kind = kind_of(image)
        if kind and image.id not in seen:
            seen.add(image.id)
            out.append((kind, image))
    return out


def prune(client: Any, keep: str = "none", *, dry_run: bool = False) -> dict:
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
