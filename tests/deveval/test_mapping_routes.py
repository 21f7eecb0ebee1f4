"""The archive and git routes of ``scripts.map_deveval`` end to end: a stand-in archive in DevEval's
Source_Code layout (one project from an sdist's files, one whose tests exist only in the archive),
and a bare git repository made here; every mapped entry then passes the oracle from its own route."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from benchmarks.deveval.tasks import load_manifest
from reconmem.platform.downloads import sha256_file

from test_mapping import CORE_V2, PROJECT, RECORDS, TESTS, _files

OTHER = "Internet/archonly"
OTHER_CORE = "def double(x):\n    return 2 * x\n"
OTHER_TESTS = "from archonly.core import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
OTHER_RECORD = {"namespace": "archonly.core.double", "type": "function", "project_path": OTHER,
                "completion_path": f"{OTHER}/archonly/core.py", "signature_position": [1, 1], "body_position": [2, 2],
                "tests": ["tests/test_core.py::test_double"], "indent": 4,
                "requirement": {"Functionality": "toy", "Arguments": ""}, "dependency": {}}


@pytest.fixture()
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("RECONMEM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RECONMEM_DEVEVAL_ARCHIVE_URL", raising=False)
    monkeypatch.delenv("RECONMEM_DEVEVAL_ARCHIVE_SHA256", raising=False)
    return tmp_path / "cache"


def _data(tmp: Path, records: list[dict]) -> Path:
    path = tmp / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _oracle_line(capsys, **opts) -> str:
    from benchmarks.deveval.oracle import OracleOptions, run_oracle

    capsys.readouterr()
    assert run_oracle(OracleOptions(quiet=True, **opts)) == 0
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_archive_route_maps_every_project_of_the_archive(cache, tmp_path, capsys):
    from scripts import map_deveval

    src = tmp_path / "build" / "Source_Code"
    _write(src / PROJECT, _files(CORE_V2))                                   # as the project's sdist ships it
    _write(src / OTHER, {"archonly/__init__.py": "", "archonly/core.py": OTHER_CORE,   # tests only here
                         "tests/test_core.py": OTHER_TESTS})
    archive = tmp_path / "Source_Code.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(src, arcname="Source_Code")
    data = _data(tmp_path, RECORDS + [OTHER_RECORD])
    (tmp_path / "base.json").write_text("[]")
    out = tmp_path / "mapping"
    argv = ["--data", str(data), "--out", str(out), "--base-manifest", str(tmp_path / "base.json"),
            "--archive", str(archive), "--workers", "1"]
    assert map_deveval.main(argv) == 0
    man = load_manifest(out / "manifest.json")
    assert sorted(e.project_path for e in man) == sorted([OTHER, PROJECT])
    other = man.project(OTHER)
    assert other.raw["route"] == "archive" and other.raw["archive"] == {"url": None, "sha256": sha256_file(archive)}
    assert other.repo_spec() == {"provider": "deveval_archive", "project_path": OTHER, "sha256": sha256_file(archive)}
    assert man.project(PROJECT).raw["n_usable"] == 2 and other.raw["n_usable"] == 1
    line = _oracle_line(capsys, manifest=out / "manifest.json", data=data, out=tmp_path / "o.json",
                        archive=archive.as_uri(), archive_sha256=sha256_file(archive))
    assert line.startswith("oracle: 3/3 reference pass, 3/3 blank fail")


def _commit(work: Path, files: dict[str, str], when: str, message: str) -> str:
    _write(work, files)
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    subprocess.run(["git", "add", "-A"], cwd=work, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=work, check=True, env=env)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, check=True, env=env, capture_output=True,
                          text=True).stdout.strip()


def test_git_route_maps_the_commit_at_devevals_lines(cache, tmp_path, capsys):
    from scripts import map_deveval

    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=work, check=True)
    files = _files(CORE_V2)
    first = _commit(work, {k: v for k, v in files.items() if not k.startswith("tests/")}, "2023-06-01T10:00:00Z",
                    "no tests")
    good = _commit(work, {"tests/test_core.py": TESTS}, "2023-12-20T10:00:00Z", "tests")
    _commit(work, {"README": "docs only\n"}, "2023-12-30T10:00:00Z", "untouched task files")
    shifted = _commit(work, {"toyproj/core.py": "# moved\n" + CORE_V2}, "2024-03-01T10:00:00Z", "shifted")
    _commit(work, {"toyproj/core.py": CORE_V2}, "2024-07-01T10:00:00Z", "after the cut-off")
    bare = tmp_path / "upstream.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    sources = tmp_path / "git_sources.json"
    sources.write_text(json.dumps({PROJECT: {"url": str(bare)}}))
    data = _data(tmp_path, RECORDS)
    (tmp_path / "base.json").write_text("[]")
    out = tmp_path / "mapping"
    argv = ["--data", str(data), "--out", str(out), "--base-manifest", str(tmp_path / "base.json"), "--git",
            "--git-sources", str(sources), "--workers", "1"]
    assert map_deveval.main(argv) == 0
    entry = load_manifest(out / "manifest.json").project(PROJECT)
    assert entry.raw["route"] == "git" and entry.version == good
    assert entry.raw["git"] == {"url": str(bare), "commit": good, "commit_date": "2023-12-20T10:00:00+00:00"}
    compared = entry.raw["versions_compared"]          # the commits up to the cut-off that touched task or test files
    assert set(compared) == {first, good, shifted}
    assert compared[shifted]["by_name"] == 3 and compared[first]["tests_exist"] == 0
    assert entry.repo_spec() == {"provider": "git", "url": str(bare), "commit": good}
    assert entry.raw["n_usable"] == 2
    line = _oracle_line(capsys, manifest=out / "manifest.json", data=data, out=tmp_path / "o.json")
    assert line.startswith("oracle: 2/2 reference pass, 2/2 blank fail")


def test_git_sources_errors_name_the_file_and_entry(tmp_path):
    from benchmarks.deveval.mapping.trees import load_git_sources

    bad = tmp_path / "g.json"
    bad.write_text(json.dumps({PROJECT: {"commit": "x"}}))
    with pytest.raises(ValueError, match=f"g.json: entry '{PROJECT}' needs a string field 'url'"):
        load_git_sources(bad)
