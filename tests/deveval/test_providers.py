"""Snapshots (pypi, local, guard) and locating a task's function by position or by name."""

from __future__ import annotations

import os
import shutil

import pytest

from benchmarks.deveval.providers import (LocateError, ProviderChain, SnapshotError, get_snapshot, guard_snapshot,
                                          locate_function, reference_function)
from benchmarks.deveval.tasks import load_manifest, load_tasks

NS = "boltons.listutils.SplayList.shift"


@pytest.fixture(scope="module")
def tasks(deveval_data):
    return {t.namespace: t for t in load_tasks(deveval_data)}


@pytest.fixture(scope="module")
def boltons_snapshot():
    return get_snapshot({"provider": "pypi", "name": "boltons", "version": "23.1.1"})


def test_pypi_snapshot_maps_the_sdist_prefix_and_is_sealed(boltons_snapshot):
    assert (boltons_snapshot / "boltons" / "listutils.py").is_file()
    assert (boltons_snapshot / "tests" / "test_listutils.py").is_file()
    assert (boltons_snapshot.parent / ".reconmem-snapshot.json").is_file()
    mode = (boltons_snapshot / "boltons" / "listutils.py").stat().st_mode
    assert mode & 0o222 == 0


def test_reference_function_by_manifest_position(boltons_snapshot, tasks):
    entry = load_manifest().project("Utilities/boltons")
    ref = reference_function(boltons_snapshot, tasks[NS], entry.task(NS))
    assert ref["located_by"] == "manifest"
    assert ref["signature"] == "    def shift(self, item_index, dest_index=0):"
    assert ref["body"].splitlines()[-1] == "        self.insert(dest_index, item)"
    # without the manifest: DevEval's own positions match this sdist
    assert reference_function(boltons_snapshot, tasks[NS])["located_by"] == "position"


def test_locate_by_name_when_lines_shifted(tmp_path, boltons_snapshot, tasks):
    task = tasks[NS]
    root = tmp_path / "proj"
    shutil.copytree(boltons_snapshot, root)
    path = root / task.file_in_project
    os.chmod(path, 0o644)
    path.write_text("# inserted\n# lines\n# here\n" + path.read_text())
    ref = reference_function(root, task)
    assert ref["located_by"] == "name"
    assert (ref["signature_line"], ref["body_start"], ref["body_end"]) == (355, 356, 359)
    assert "self.insert(dest_index, item)" in ref["body"]
    # a changed length: the single definition is used and its body lines are recomputed
    text = path.read_text().replace("        item = self.pop(item_index)\n",
                                    "        item = self.pop(item_index)\n        # extra\n")
    path.write_text(text)
    loc = locate_function(path, task)
    assert loc.located_by == "name_recomputed" and loc.body_start == 356 and loc.body_end == 360


def test_locate_missing_function_raises(tmp_path, tasks):
    task = tasks[NS]
    path = tmp_path / "x.py"
    path.write_text("def other():\n    pass\n")
    with pytest.raises(LocateError, match="no definition"):
        locate_function(path, task)


def test_local_provider_and_chain_order(tmp_path, boltons_snapshot):
    src = tmp_path / "Source_Code" / "Utilities" / "boltons"
    shutil.copytree(boltons_snapshot, src)
    chain = ProviderChain([{"name": "local", "path": str(tmp_path / "Source_Code")}, "pypi"])
    snap = chain.resolve("Utilities/boltons")
    assert snap.provider == "local" and snap.root == src
    chain = ProviderChain([{"name": "local", "path": str(tmp_path / "nowhere")}, "pypi"])
    snap = chain.resolve("Utilities/boltons")
    assert snap.provider == "pypi" and snap.entry.version == "23.1.1"
    with pytest.raises(SnapshotError, match="no provider could supply Utilities/nothing"):
        ProviderChain(["pypi", {"name": "git", "sources": {}}]).resolve("Utilities/nothing")


def test_guard_refuses_a_modified_snapshot(tmp_path, monkeypatch):
    from benchmarks.deveval import providers

    snap = tmp_path / "unpacked"
    (snap / "pkg").mkdir(parents=True)
    (snap / "pkg" / "m.py").write_text("x = 1\n")
    guard_snapshot(snap)
    assert (snap / "pkg" / "m.py").stat().st_mode & 0o222 == 0
    os.chmod(snap / "pkg" / "m.py", 0o644)
    (snap / "pkg" / "m.py").write_text("x = 2  # tampered\n")
    monkeypatch.setattr(providers, "_verified", set())
    with pytest.raises(SnapshotError, match="was modified"):
        guard_snapshot(snap)


def test_bad_specs():
    with pytest.raises(SnapshotError, match="provider"):
        get_snapshot({"name": "x"})
    with pytest.raises(SnapshotError, match="unknown provider"):
        get_snapshot({"provider": "ftp"})
    with pytest.raises(SnapshotError, match="lacks field 'commit'"):
        get_snapshot({"provider": "git", "url": "https://example.invalid/x.git"})
