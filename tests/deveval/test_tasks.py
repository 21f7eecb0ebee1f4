"""Task and manifest loading with validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.deveval.tasks import (SHIPPED_MANIFEST, TaskDataError, expected_data_sha256, load_manifest,
                                      load_tasks)
from reconmem.platform.downloads import sha256_file

REPO_ROOT = Path(__file__).resolve().parents[2]
# tests/data/deveval/data.jsonl: every DevEval record of these projects, in DevEval's order
SUBSET_PROJECTS = ("Utilities/boltons",)
SUBSET_SHA256 = "c9ee62b10d1a24feb096d2ee13ca9176090b3851f73b774ef224b610d1782a8d"
VERBATIM_COPIES = ("benchmarks/locoeval/demo/deveval_tasks.jsonl", "benchmarks/locoeval/verified/deveval_tasks.jsonl")
# the manifest's first 15 projects and their usable tasks (reference passes, blank fails): 671 in all
ORIGINAL_USABLE = {"Utilities/boltons": 101, "Communications/IMAPClient": 29, "Internet/Jinja2": 17,
                   "Text-Processing/mistune": 5, "System/fs": 29, "Utilities/gunicorn": 23, "Internet/falcon": 46,
                   "Database/alembic": 50, "Internet/pyramid": 92, "System/mrjob": 87, "Security/pycoin": 27,
                   "Internet/boto": 75, "Multimedia/Mopidy": 41, "Security/diffprivlib": 26, "Utilities/sacred": 23}


@pytest.fixture(scope="module")
def data_path(deveval_data):
    return deveval_data


def _records(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n") if line]


def test_shipped_subset_loads_and_matches_its_checksum(data_path):
    assert sha256_file(data_path) == SUBSET_SHA256
    tasks = load_tasks(data_path)
    assert len(tasks) == 103
    assert {t.project_path for t in tasks} == set(SUBSET_PROJECTS)
    t = next(t for t in tasks if t.namespace == "boltons.listutils.SplayList.shift")
    assert t.file_in_project == "boltons/listutils.py" and t.indent == 8 and t.type == "method"
    assert t.function_name == "shift" and t.body_position == (353, 356)


def test_subset_is_every_record_of_its_projects_verbatim(data_path, deveval_full_data):
    """Byte-identical to the other verbatim copies shipped here, complete for the manifest, and (where this
    machine has DevEval's full file) exactly that file's records of the subset's projects, in order."""
    lines = _records(data_path)
    by_ns = {json.loads(line)["namespace"]: line for line in lines}
    copies = [line for rel in VERBATIM_COPIES for line in _records(REPO_ROOT / rel)
              if json.loads(line)["project_path"] in SUBSET_PROJECTS]
    assert len(copies) >= 6 and all(by_ns[json.loads(line)["namespace"]] == line for line in copies)
    man = load_manifest()
    assert {t.namespace for p in SUBSET_PROJECTS for t in man.project(p).tasks} == set(by_ns)
    if deveval_full_data is not None:
        assert sha256_file(deveval_full_data) == expected_data_sha256()
        full = _records(deveval_full_data)
        assert len(full) == 1825 and len({json.loads(line)["project_path"] for line in full}) == 115
        assert [line for line in full if json.loads(line)["project_path"] in SUBSET_PROJECTS] == lines


GOOD = {"namespace": "m.f", "type": "function", "project_path": "T/P", "completion_path": "T/P/m.py",
        "signature_position": [1, 1], "body_position": [2, 3], "tests": ["tests/test_m.py::test_f"], "indent": 4}


@pytest.mark.parametrize("patch,field", [
    ({"type": "lambda"}, "'type'"),
    ({"body_position": [3, 2]}, "'body_position'"),
    ({"body_position": [1, 1]}, "'body_position'"),
    ({"tests": []}, "'tests'"),
    ({"indent": "4"}, "'indent'"),
    ({"completion_path": "X/m.py"}, "'completion_path'"),
    ({"namespace": None}, "'namespace'"),
])
def test_bad_records_name_line_and_field(tmp_path, patch, field):
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "namespace": "m.g", **patch}) + "\n")
    with pytest.raises(TaskDataError) as err:
        load_tasks(path)
    assert f"{path}:2" in str(err.value) and field in str(err.value)


def test_missing_field_invalid_json_and_duplicates(tmp_path):
    path = tmp_path / "d.jsonl"
    rec = dict(GOOD)
    del rec["tests"]
    path.write_text(json.dumps(rec) + "\n")
    with pytest.raises(TaskDataError, match=r"d.jsonl:1: missing field 'tests'"):
        load_tasks(path)
    path.write_text(json.dumps(GOOD) + "\n{oops\n")
    with pytest.raises(TaskDataError, match=r"d.jsonl:2: invalid JSON"):
        load_tasks(path)
    path.write_text(json.dumps(GOOD) + "\n\n" + json.dumps(GOOD) + "\n")
    with pytest.raises(TaskDataError, match=r"d.jsonl:3: duplicate namespace"):
        load_tasks(path)
    with pytest.raises(FileNotFoundError, match="fetch_deveval"):
        load_tasks(tmp_path / "missing.jsonl")


def test_shipped_manifest_keeps_its_original_projects(shared_manifest):
    """The first 15 projects stay as validated; where ../shared has the manifest they started from, every
    field of every entry there is unchanged here (the shipped manifest may add projects and fields)."""
    if shared_manifest is not None:
        shipped = {e["project_path"]: e for e in json.loads(SHIPPED_MANIFEST.read_text())}
        learned = {"os_requirements", "os_requirements_note", "needs_network"}   # executor fields the oracle runs added
        for entry in json.loads(shared_manifest.read_text()):
            kept = shipped[entry["project_path"]]
            assert {k: kept.get(k) for k in entry if k not in learned} == \
                {k: v for k, v in entry.items() if k not in learned}, entry["project_path"]
    man = load_manifest()
    usable = {e.project_path: sum(1 for t in e.tasks if t.usable) for e in man}
    assert {p: usable.get(p) for p in ORIGINAL_USABLE} == ORIGINAL_USABLE
    boto = man.project("Internet/boto")
    assert boto.compat_shims == ("collections_abc_aliases",)
    assert man.project("Internet/Jinja2").pythonpath_in_tree == "src"
    assert man.for_repo_spec({"provider": "pypi", "name": "Boltons", "version": "23.1.1"}).pypi_name == "boltons"
    assert [e.pypi_name for e in man.select(["jinja2", "Utilities/boltons"])] == ["boltons", "Jinja2"]
    with pytest.raises(TaskDataError, match="unknown project"):
        man.select(["nope"])


def test_manifest_validation_names_entry_and_field(tmp_path):
    entry = json.loads(SHIPPED_MANIFEST.read_text())[0]
    bad = dict(entry, pythonpath_in_tree="../outside")
    path = tmp_path / "m.json"
    path.write_text(json.dumps([entry, bad]))
    with pytest.raises(TaskDataError, match=r"m.json entry 1: field 'pythonpath_in_tree'"):
        load_manifest(path)
    bad = dict(entry, tasks=[{"namespace": "x", "body_start": 3, "body_end": None}])
    path.write_text(json.dumps([bad]))
    with pytest.raises(TaskDataError, match=r"entry 0 task 0: fields 'body_start' and 'body_end'"):
        load_manifest(path)


def test_manifest_without_freeze_falls_back_to_resolving_test_requirements(tmp_path):
    entry = json.loads(SHIPPED_MANIFEST.read_text())[0]
    for k in ("env_pip_install", "pip_freeze"):
        entry.pop(k)
    path = tmp_path / "m.json"
    path.write_text(json.dumps([entry]))
    e = load_manifest(path).entries[0]
    assert e.env_pip_install == ("pytest<8",) and e.pip_no_deps is False


def test_prepared_envs_prepare_each_project_once_across_threads():
    from concurrent.futures import ThreadPoolExecutor

    from benchmarks.deveval.tasks import PreparedEnvs

    class CountingExecutor:
        def __init__(self):
            self.prepared = []

        def prepare(self, env):
            self.prepared.append(env.name)

    manifest = load_manifest()
    entries = [manifest.project("Utilities/boltons"), manifest.project("Communications/IMAPClient")]
    executor = CountingExecutor()
    prepared = PreparedEnvs(executor)
    with ThreadPoolExecutor(4) as pool:
        envs = list(pool.map(prepared, entries * 8))
    assert sorted(executor.prepared) == ["Communications/IMAPClient", "Utilities/boltons"]
    assert {e.name for e in envs} == {"Communications/IMAPClient", "Utilities/boltons"}
    assert envs[0] is envs[2] and envs[1] is envs[3]
