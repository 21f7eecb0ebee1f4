"""Task and manifest loading with validation."""

from __future__ import annotations

import json

import pytest

from benchmarks.deveval.tasks import (SHIPPED_MANIFEST, TaskDataError, expected_data_sha256, load_manifest,
                                      load_tasks)
from reconmem.platform.downloads import sha256_file


@pytest.fixture(scope="module")
def data_path(shared_dir):
    return shared_dir / "data" / "deveval" / "data.jsonl"


def test_real_data_loads_and_matches_the_shipped_checksum(data_path):
    assert sha256_file(data_path) == expected_data_sha256()
    tasks = load_tasks(data_path)
    assert len(tasks) == 1825
    assert len({t.project_path for t in tasks}) == 115
    t = next(t for t in tasks if t.namespace == "boltons.listutils.SplayList.shift")
    assert t.file_in_project == "boltons/listutils.py" and t.indent == 8 and t.type == "method"
    assert t.function_name == "shift" and t.body_position == (353, 356)


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


def test_shipped_manifest_is_the_shared_source_list(shared_dir):
    shipped = json.loads(SHIPPED_MANIFEST.read_text())
    shared = json.loads((shared_dir / "data" / "deveval" / "pypi_sources.json").read_text())
    learned = {"os_requirements", "os_requirements_note", "needs_network"}   # executor fields the oracle runs added
    assert [{k: v for k, v in e.items() if k not in learned} for e in shipped] == \
        [{k: v for k, v in e.items() if k not in learned} for e in shared]
    man = load_manifest()
    assert len(man) == 15
    assert sum(1 for e in man for t in e.tasks if t.usable) == 671
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
