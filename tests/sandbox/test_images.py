"""Which Docker images are the project's and what ``prune`` removes per cache policy (a fake client)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from benchmarks.sandbox.images import kind_of, project_images, prune


@dataclass
class Image:
    id: str
    tags: list[str]
    labels: dict[str, str] = field(default_factory=dict)
    attrs: dict[str, int] = field(default_factory=lambda: {"Size": 10_000_000})


@dataclass
class Container:
    status: str
    removed: bool = False

    def remove(self, force: bool = False) -> None:
        self.removed = True


class Images:
    def __init__(self, tagged: list[Image], dangling: list[Image], in_use: set[str]) -> None:
        self.tagged, self.dangling, self.in_use, self.removed = tagged, dangling, in_use, []

    def list(self, filters: dict | None = None) -> list[Image]:
        return self.dangling if filters else self.tagged

    def remove(self, image_id: str, force: bool = False, noprune: bool = False) -> None:
        if image_id in self.in_use:
            raise RuntimeError("image is being used by a running container")
        self.removed.append(image_id)


class Containers:
    def __init__(self, items: list[Container]) -> None:
        self.items = items

    def list(self, all: bool = False, filters: dict | None = None) -> list[Container]:  # noqa: A002 - docker's name
        return self.items


class Client:
    def __init__(self, in_use: set[str] = frozenset()) -> None:
        self.images = Images(
            [Image("base", ["reconmem-base:bookworm"]), Image("env", ["reconmem-deveval-env:abc"]),
             Image("cab", ["reconmem-cab-t1-0a1b2c3d:latest"]), Image("other", ["python:3.11"])],
            [Image("layer", [], {"reconmem.project": "env"}), Image("foreign", [])], set(in_use))
        self.containers = Containers([Container("exited"), Container("running")])


def test_kinds_of_project_images():
    assert [(k, i.id) for k, i in project_images(Client())] == [
        ("base", "base"), ("env", "env"), ("cab", "cab"), ("dangling", "layer")]
    assert kind_of(Image("x", [], {"reconmem.project": "base"})) == "base"
    assert kind_of(Image("x", ["ubuntu:24.04"])) is None


@pytest.mark.parametrize("keep, removed", [("none", ["cab", "layer", "env", "base"]), ("base", ["cab", "layer", "env"]),
                                           ("env", ["cab", "layer"])])
def test_prune_by_policy_children_first(keep, removed):
    client = Client()
    res = prune(client, keep)
    assert client.images.removed == removed and res["images"] == len(removed) and res["kept"] == 4 - len(removed)
    assert res["containers"] == 1 and [c.removed for c in client.containers.items] == [True, False]


def test_dry_run_removes_nothing_and_images_in_use_are_counted():
    client = Client()
    res = prune(client, "none", dry_run=True)
    assert client.images.removed == [] and res["images"] == 4 and not client.containers.items[0].removed
    busy = Client(in_use={"env"})
    res = prune(busy, "none")
    assert "env" not in busy.images.removed and res["in_use"] == 1 and res["bytes"] == 3 * 10_000_000
