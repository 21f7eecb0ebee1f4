"""The DevEval mapping tool end to end against a local stand-in index (real venvs, real pytest runs)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from benchmarks.deveval.mapping import match, report
from benchmarks.deveval.mapping.project import ProjectJob, map_project
from benchmarks.deveval.mapping.requirements import declared_requirements, fixes_from_log, third_party
from benchmarks.deveval.tasks import load_manifest, parse_task
from benchmarks.sandbox import build_executor

from index_server import IndexServer

CORE_V2 = '''"""Toy module."""


def add(a, b):
    """Add two numbers."""
    return a + b


def untested(x):
    return x * 2


class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v
'''
TESTS = '''from toyproj.core import Box, add


def test_add():
    assert add(1, 2) == 3


def test_box():
    assert Box(3).get() == 3


def test_untested():
    assert True
'''
PROJECT = "Utilities/toyproj"


def _record(ns: str, sig: int, body: tuple[int, int], test: str, path: str = "toyproj/core.py") -> dict:
    return {"namespace": ns, "type": "method" if ".Box." in ns else "function", "project_path": PROJECT,
            "completion_path": f"{PROJECT}/{path}", "signature_position": [sig, sig], "body_position": list(body),
            "tests": [f"tests/test_core.py::{test}"], "indent": 8 if ".Box." in ns else 4,
            "requirement": {"Functionality": "toy", "Arguments": ""}, "dependency": {}}


RECORDS = [_record("toyproj.core.add", 4, (6, 6), "test_add"),
           _record("toyproj.core.untested", 9, (10, 10), "test_untested"),
           _record("toyproj.core.Box.get", 17, (18, 18), "test_box"),
           _record("toyproj.other.gone", 1, (2, 2), "test_add", path="toyproj/other.py")]


def _sdist(version: str, files: dict[str, str]) -> bytes:
    """A deterministic .tar.gz with ``toyproj-<version>/`` on top."""
    buf = io.BytesIO()
    import gzip

    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tf:
        for rel, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"toyproj-{version}/{rel}")
            info.size, info.mtime = len(data), 0
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _files(core: str, with_tests: bool = True) -> dict[str, str]:
    files = {"toyproj/__init__.py": "", "toyproj/core.py": core,
             "setup.cfg": "[metadata]\nname = toyproj\n\n[options]\npackages = toyproj\n"}
    if with_tests:
        files["tests/test_core.py"] = TESTS
    return files


@pytest.fixture()
def index(monkeypatch, tmp_path):
    monkeypatch.setenv("RECONMEM_CACHE", str(tmp_path / "cache"))
    with IndexServer() as srv:
        monkeypatch.setenv("RECONMEM_PYPI_JSON", srv.url + "/pypi")
        srv.add_sdist("toyproj", "0.1", "toyproj-0.1.tar.gz", _sdist("0.1", _files("# one\n# two\n" + CORE_V2)),
                      "2023-01-01T00:00:00Z")
        srv.add_sdist("toyproj", "0.2", "toyproj-0.2.tar.gz", _sdist("0.2", _files(CORE_V2)), "2023-06-01T00:00:00Z")
        srv.add_sdist("toyproj", "0.3", "toyproj-0.3.tar.gz", _sdist("0.3", _files("x = 1\n")), "2024-09-01T00:00:00Z")
        srv.add_sdist("notests", "1.0", "notests-1.0.tar.gz", _sdist("1.0", _files(CORE_V2, with_tests=False)),
                      "2023-06-01T00:00:00Z")
        yield srv


def test_cli_maps_a_project_resumes_and_the_manifest_passes_the_oracle(index, tmp_path, capsys):
    from benchmarks.deveval.oracle import OracleOptions, run_oracle
    from scripts import map_deveval

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    base = tmp_path / "base.json"
    base.write_text("[]")
    out, manifest = tmp_path / "mapping", tmp_path / "manifest.json"
    argv = ["--data", str(data), "--out", str(out), "--manifest-out", str(manifest), "--base-manifest", str(base)]
    assert map_deveval.main(argv) == 0
    entry = load_manifest(manifest).project(PROJECT)
    assert entry is not None and entry.version == "0.2"          # ties on matches go to by-position
    raw = entry.raw
    assert set(raw["versions_compared"]) == {"toyproj-0.1.tar.gz", "toyproj-0.2.tar.gz"}   # 0.3 is after the cut-off
    assert raw["versions_compared"]["toyproj-0.1.tar.gz"]["by_name"] == 3
    rows = {t["namespace"]: t for t in raw["tasks"]}
    assert rows["toyproj.core.add"]["located_by"] == "position" and rows["toyproj.core.add"]["body_start"] == 6
    assert rows["toyproj.other.gone"]["unmatched_reason"] == "file_missing"
    assert rows["toyproj.core.untested"]["unmatched_reason"] == "blank_passes"
    assert raw["n_usable"] == 2 and raw["rerun_sample"]["same_outcome"] == raw["rerun_sample"]["n"] == 2
    assert any(p.startswith("pytest==7.") for p in raw["env_pip_install"])
    summary = json.loads((out / "report.json").read_text())["summary"]
    assert summary["mapped"] == 1 and summary["usable_tasks"] == 2

    hits = len(index.hits)
    assert map_deveval.main(argv) == 0                             # resumed: nothing fetched again
    assert len(index.hits) == hits

    capsys.readouterr()
    assert run_oracle(OracleOptions(manifest=manifest, data=data, out=tmp_path / "o.json", quiet=True)) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("oracle: 2/2 reference pass, 2/2 blank fail")


def test_reasons_for_projects_that_cannot_be_mapped(index, tmp_path):
    tasks = [parse_task(r) for r in RECORDS]
    local = build_executor("local")

    def run(name: str) -> dict:
        return map_project(ProjectJob(PROJECT, name, tasks, tmp_path / f"{name}.json", local, log=lambda m: None))

    assert run("absent")["reason"] == "not_on_pypi"
    assert run("notests")["reason"] == "no_tests_in_sdist"
    index.projects["late"] = [dict(f, version="9") for f in index.projects["toyproj"] if f["version"] == "0.3"]
    assert run("late")["reason"] == "no_sdist"
    rows = report.rows(report.load_states(tmp_path), {PROJECT: 4}, {})
    assert rows[0]["status"] == "not_mapped"


def test_matching_layout_and_pythonpath(tmp_path):
    root = tmp_path / "pkg-1.0"
    (root / "src" / "toyproj").mkdir(parents=True)
    (root / "src" / "toyproj" / "core.py").write_text(CORE_V2)
    recs = [dict(r, completion_path=r["completion_path"].replace("toyproj/core.py", "src/toyproj/core.py"))
            for r in RECORDS[:3]]
    tasks = [parse_task(r) for r in recs]
    prefix, found = match.project_root_in(tmp_path, tasks)
    assert prefix == "pkg-1.0/" and found == root
    assert match.pythonpath_for(tasks) == "src"
    counts, matches = match.match_version(root, tasks)
    assert counts == {"by_position": 3, "by_name": 0, "tests_exist": 0, "full_match": 0}
    assert {m.unmatched_reason for m in matches} == {"tests_missing_in_sdist"}
    shifted = parse_task(dict(recs[0], signature_position=[40, 40], body_position=[42, 42]))
    assert match.match_task(root, shifted).located_by == "name"
    longer = parse_task(dict(recs[0], body_position=[6, 7]))
    assert match.match_task(root, longer).unmatched_reason == "length_mismatch"
    in_docstring = parse_task(dict(recs[0], body_position=[5, 6]))
    assert match.match_task(root, in_docstring).unmatched_reason == "body_start_mismatch"


def test_declared_requirements_from_every_source(tmp_path):
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires =\n    click>=8\n"
                                        "[options.extras_require]\ntest =\n    pytest-mock\ndocs =\n    sphinx\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["attrs"]\n'
                                             '[project.optional-dependencies]\ntesting = ["hypothesis"]\n'
                                             '[project.entry-points.pytest11]\nx = "x.plugin"\n')
    (tmp_path / "setup.py").write_text("from setuptools import setup\nREQ = ['six']\n"
                                       "setup(name='x', install_requires=REQ, tests_require=['mock'])\n")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "base.txt").write_text("requests\n")
    (tmp_path / "requirements" / "test.txt").write_text("-r base.txt\nfreezegun  # comment\n-e .\n")
    (tmp_path / "tox.ini").write_text("[testenv]\ndeps =\n    responses\n    py38: oldthing\n    {[base]deps}\n")
    dec = declared_requirements(tmp_path)
    assert set(dec.install) == {"click>=8", "attrs", "six", "requests"}
    assert {"pytest-mock", "hypothesis", "mock", "freezegun", "responses", "oldthing"} <= set(dec.test)
    assert "sphinx" not in dec.test and dec.pytest_plugin
    assert third_party({"yaml", "os", "toyproj", "click", "win32api"}, {"toyproj"}, dec.install) == ["PyYAML"]


def test_fixes_read_from_failed_logs():
    log = ("E   ModuleNotFoundError: No module named 'dateutil.tz'\nfixture 'mocker' not found\n"
           "error: unrecognized arguments: --cov=x\nFileNotFoundError: [Errno 2] No such file or directory: 'git'\n"
           "ModuleNotFoundError: No module named 'json.decoder'\n")
    specs, packages = fixes_from_log(log)
    assert specs == ["pytest-mock", "pytest-cov", "python-dateutil"] and packages == ["git"]


@pytest.mark.docker
def test_docker_pass_records_agreement_in_the_entry(index, tmp_path):
    pytest.importorskip("docker")
    from benchmarks.sandbox.docker_exec import DockerExecutor, DockerUnavailable
    from scripts import map_deveval

    try:
        DockerExecutor().client
    except DockerUnavailable as exc:
        pytest.skip(str(exc))
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    (tmp_path / "base.json").write_text("[]")
    manifest = tmp_path / "manifest.json"
    argv = ["--data", str(data), "--out", str(tmp_path / "mapping"), "--manifest-out", str(manifest),
            "--base-manifest", str(tmp_path / "base.json")]
    assert map_deveval.main(argv) == 0
    assert map_deveval.main(argv + ["--docker-only"]) == 0
    raw = load_manifest(manifest).project(PROJECT).raw
    assert raw["docker_agreement"] == {"n": 2, "agree": 2, "disagree": [], "os_requirements_added": []}
