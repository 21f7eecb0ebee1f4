"""The fork set's other-releases check against a local stand-in package index (loopback): a release that
holds the fork fragment, a moved function, a missing one, a file that does not match its digest, resume,
the release rule, Python 2 sources and the results reader ``ship`` uses."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from benchmarks.deveval.tasks import Manifest, parse_project_entry
from benchmarks.locoeval.fork.releases import (ReleaseCheckError, change_needle, check_releases, fragment_key,
                                               function_sources, module_path, release_problems, select_releases)
from tests.deveval.index_server import IndexServer

PROJECT = "Utilities/toyfork"

CORE_SNAPSHOT = '''"""Toy module (the snapshot)."""
import functools


def label(parts):
    """Join the parts."""
    return "-".join(parts)


class Box:
    @functools.lru_cache()
    def render(self, items):
        if not items:
            return []
        return sorted(items)
'''
CORE_OLD_FORKED = CORE_SNAPSHOT.replace('"-".join(parts)', "'_'.join(\n        parts,\n    )")
CORE_WITHOUT = '"""Before the functions existed."""\n\n\ndef first(items):\n    if not items:\n        return None\n'
CORE_MOVED = '"""The functions moved to text.py."""\nfrom toyfork.text import label, Box\n'
TEXT_MOVED = CORE_SNAPSHOT

CHANGES_LABEL = [{"kind": "separator", "key": "separator:7:11", "fragment": 'return "-".join(parts)',
                  "fork_fragment": 'return "_".join(parts)', "public_text": '"-"', "fork_text": '"_"'}]
CHANGES_RENDER = [{"kind": "empty", "key": "empty:14:12", "fragment": "if not items: return []",
                   "fork_fragment": "if not items: return None", "public_text": "[]", "fork_text": "None"}]


def _sdist(version: str, files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    if version == "1.5.0":                                     # one release published as a zip
        with zipfile.ZipFile(buf, "w") as zf:
            for rel, text in files.items():
                zf.writestr(f"toyfork-{version}/{rel}", text)
        return buf.getvalue()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for rel, text in {"setup.py": "from setuptools import setup\nsetup()\n", **files}.items():
            data = text.encode()
            info = tarfile.TarInfo(f"toyfork-{version}/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


RELEASES = {"0.5.0": {"toyfork/core.py": CORE_WITHOUT},
            "1.0.0": {"toyfork/core.py": CORE_OLD_FORKED},
            "1.5.0": {"toyfork/core.py": CORE_SNAPSHOT},
            "2.0.0": {"toyfork/__init__.py": "", "toyfork/core.py": CORE_SNAPSHOT},
            "2.1.0": {"toyfork/core.py": CORE_MOVED, "toyfork/text.py": TEXT_MOVED}}


def _row(namespace: str, changes: list[dict]) -> dict:
    return {"namespace": namespace, "project_path": PROJECT, "version": "2.0.0", "file": "toyfork/core.py",
            "status": "validated", "stage": "validated", "catalogue_version": 7, "derive_version": 4,
            "changes": changes}


@pytest.fixture()
def index(monkeypatch, tmp_path):
    monkeypatch.setenv("RECONMEM_CACHE", str(tmp_path / "cache"))
    with IndexServer() as srv:
        monkeypatch.setenv("RECONMEM_PYPI_JSON", srv.url + "/pypi")
        for i, (version, files) in enumerate(RELEASES.items()):
            srv.add_sdist("toyfork", version, f"toyfork-{version}." + ("zip" if version == "1.5.0" else "tar.gz"), _sdist(version, files),
                          f"202{i}-01-01T00:00:00Z")
        yield srv


@pytest.fixture()
def screen(tmp_path) -> Path:
    path = tmp_path / "screen.jsonl"
    rows = [_row("toyfork.core.label", CHANGES_LABEL), _row("toyfork.core.Box.render", CHANGES_RENDER),
            {"namespace": "toyfork.core.other", "project_path": PROJECT, "status": "dropped",
             "catalogue_version": 7, "derive_version": 4}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _manifest() -> Manifest:
    return Manifest([parse_project_entry({"project_path": PROJECT, "pypi_name": "toyfork", "version": "2.0.0",
                                          "env_pip_install": []}, "test manifest")])


def _rows(out: Path) -> dict[str, dict]:
    return {r["namespace"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_a_release_holding_the_fork_fragment_is_a_hit_and_the_task_is_dropped(index, screen, tmp_path):
    out = tmp_path / "releases.jsonl"
    stats = check_releases([screen], out, manifest=_manifest(), log=lambda m: None)
    rows = _rows(out)
    assert set(rows) == {"toyfork.core.label", "toyfork.core.Box.render"}    # the dropped row is not checked
    label = rows["toyfork.core.label"]
    assert label["fork_hits"] == {"separator:7:11": ["1.0.0"]} and label["ok"] is False
    assert label["releases_checked"] == ["1.0.0", "1.5.0", "2.0.0", "2.1.0"]
    assert label["releases_missing_function"] == ["0.5.0"]
    assert label["releases_moved"] == {"2.1.0": ["toyfork/text.py"]}
    assert label["public_hits"] == {"separator:7:11": ["1.5.0", "2.0.0", "2.1.0"]}
    assert label["file_hits"] == {"separator:7:11": ["1.0.0"]}
    assert label["snapshot"] == {"version": "2.0.0", "on_index": True, "public_missing": []}
    render = rows["toyfork.core.Box.render"]
    assert render["qualname"] == "Box.render" and render["fork_hits"] == {} and render["ok"] is True
    assert render["file_hits"] == {"empty:14:12": ["0.5.0"]}      # outside the function: for review only
    assert (stats.tasks, stats.tasks_with_hit, stats.releases_checked, stats.downloaded) == (2, 1, 5, 5)
    problems = release_problems(out)
    assert list(problems) == ["toyfork.core.label"]
    assert "release 1.0.0" in problems["toyfork.core.label"] and '"_".join(parts)' in problems["toyfork.core.label"]
    assert len(list((tmp_path / "cache" / "locoeval_fork" / "releases" / "toyfork").iterdir())) == 5


def test_resume_skips_done_namespaces_and_reuses_downloads(index, screen, tmp_path):
    out = tmp_path / "releases.jsonl"
    check_releases([screen], out, manifest=_manifest(), log=lambda m: None)
    first = out.read_text().splitlines()
    out.write_text(first[0] + "\n" + first[1][:40])             # the second row cut short by a crash
    index.hits.clear()
    stats = check_releases([screen], out, manifest=_manifest(), log=lambda m: None)
    assert (stats.tasks, stats.skipped_done, stats.downloaded) == (1, 1, 0)
    assert not [h for h in index.hits if h.startswith("/packages/")]
    assert len(_rows(out)) == 2
    index.hits.clear()
    stats = check_releases([screen], out, manifest=_manifest(), log=lambda m: None)
    assert (stats.tasks, stats.skipped_done) == (0, 2) and index.hits == []
    rescreened = dict(_row("toyfork.core.label", [{**CHANGES_LABEL[0], "fork_fragment": 'return ";".join(parts)'}]),
                      catalogue_version=8)                      # a later screening changed the task's fork
    with screen.open("a") as fh:
        fh.write(json.dumps(rescreened) + "\n")
    stats = check_releases([screen], out, manifest=_manifest(), log=lambda m: None)
    assert (stats.tasks, stats.skipped_done, stats.tasks_with_hit) == (1, 0, 0)   # newest version's rows only
    assert release_problems(out) == {}                          # the latest row of the namespace counts


def test_a_file_that_does_not_match_the_index_digest_is_a_clear_error(index, screen, tmp_path):
    index.files["toyfork-1.0.0.tar.gz"] = _sdist("1.0.0", {"toyfork/core.py": CORE_SNAPSHOT})
    out = tmp_path / "releases.jsonl"
    with pytest.raises(ReleaseCheckError, match=r"toyfork 1\.0\.0: toyfork-1\.0\.0\.tar\.gz from .* does not match "
                                                r"the index's sha256"):
        check_releases([screen], out, manifest=_manifest(), log=lambda m: None)
    assert not list((tmp_path / "cache" / "locoeval_fork" / "releases" / "toyfork").glob("toyfork-1.0.0*"))
    assert not out.exists()


def test_cli_summary_and_bad_options(index, screen, tmp_path, capsys):
    from scripts.build_fork_set import main

    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps([{"project_path": PROJECT, "pypi_name": "toyfork", "version": "2.0.0",
                                     "env_pip_install": []}]))
    out = tmp_path / "releases.jsonl"
    assert main(["releases", "--screen", str(screen), "--out", str(out), "--manifest", str(manifest)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(
        "2 tasks checked (0 already done), 1 with a fork fragment in another release")
    assert main(["releases", "--screen", str(tmp_path / "nope.jsonl"), "--out", str(out)]) == 2
    assert "nope.jsonl not found (option --screen)" in capsys.readouterr().err


def test_release_rule_and_caps():
    class Rel:
        def __init__(self, version: str, size: int = 1_000_000, filename: str = "") -> None:
            self.version, self.size, self.filename = version, size, filename or f"p-{version}.tar.gz"

    rels = [Rel(v) for v in ("0.9", "1.0.0", "1.0.1", "1.1.0", "1.1.1", "2.0.0", "2.0.1", "2.1.0rc1", "2.1.0")]
    rels.append(Rel("1.0.1", filename="p-1.0.1.zip"))
    chosen, skipped = select_releases(rels, "1.1.0")
    assert sorted(r.version for r in chosen) == ["0.9", "1.0.1", "1.1.0", "1.1.1", "2.0.0", "2.0.1", "2.1.0",
                                                 "2.1.0rc1"]
    assert skipped == [] and next(r for r in chosen if r.version == "1.0.1").filename.endswith(".tar.gz")
    chosen, skipped = select_releases(rels, "1.1.0", max_releases=6)
    assert skipped == ["2.0.0", "2.1.0rc1"]               # the oldest after-snapshot releases outside a series' last
    chosen, skipped = select_releases(rels, "1.1.0", max_mb=2.5)
    assert [r.version for r in chosen] == ["1.1.0", "2.1.0"]


def test_function_sources_methods_decorators_and_python2():
    assert function_sources(CORE_SNAPSHOT, "Box.render")[0].lstrip().startswith("@functools.lru_cache()")
    assert function_sources(CORE_SNAPSHOT, "render") == []
    py2 = ("class Box(object):\n    def render(self, items):\n        print 'x'\n        if not items:\n"
           "            return None\n        return items\n\n    def other(self):\n        pass\n\n"
           "def render(items):\n    return 1\n")
    [src] = function_sources(py2, "Box.render")
    assert fragment_key("if not items: return None") in fragment_key(src) and "other" not in src
    assert function_sources(py2, "render") == ["def render(items):\n    return 1"]
    assert module_path("jinja2.utils.object_type_repr", "src/jinja2/utils.py") == ("jinja2/utils.py",
                                                                                   "object_type_repr")
    assert module_path("pkg.sub.C.m", "pkg/sub/__init__.py") == ("pkg/sub/__init__.py", "C.m")
    assert change_needle({"kind": "order", "fork_text": "b.close()\na.close()", "fork_fragment": "b.close()"}) \
        == "b.close()\na.close()"
    assert fragment_key('f(a,\n  "x",\n)') == "f(a,'x')"


def test_release_problems_names_file_and_line_of_a_malformed_row(tmp_path):
    path = tmp_path / "releases.jsonl"
    path.write_text(json.dumps({"namespace": "a.b", "ok": True, "fork_hits": {}}) + "\n{not json\n")
    with pytest.raises(ReleaseCheckError, match=r"releases\.jsonl:2: invalid JSON"):
        release_problems(path)
    path.write_text(json.dumps({"namespace": "a.b", "ok": "yes", "fork_hits": {}}) + "\n")
    with pytest.raises(ReleaseCheckError, match=r"releases\.jsonl:1: field 'ok' must be a bool"):
        release_problems(path)
