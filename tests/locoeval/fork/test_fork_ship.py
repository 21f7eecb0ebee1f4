"""Shipping the fork data: diffs applied to the snapshot's files, records written and read back."""

from __future__ import annotations

import json

import pytest

from benchmarks.locoeval.fork.ship import (ForkDataError, ForkRecord, apply_diff, apply_diffs, diff_blocks,
                                           fork_test_text, read_forks)
from benchmarks.locoeval.fork.tests_derive import derive_tests, unified_diffs
from fork_fixtures import TINY_TESTS, fork_env, recorder, tiny_project  # noqa: F401 (fixtures)
from fork_set_fixtures import MOD, PROJECT, TESTS, tiny_fork_set  # noqa: F401 (fixtures)

PUBLIC = "".join(f"line {i}\n" for i in range(1, 31))


def _diff(old: str, new: str, path: str = "t.py") -> str:
    return unified_diffs({path: old}, {path: new})[path]


def test_a_derivation_round_trips_through_its_diff(tiny_project, recorder, fork_env):
    text = (tiny_project / MOD).read_text()
    fork = text.replace('",".join(parts)', '";".join(parts)')
    der = derive_tests(executor=recorder, root=tiny_project, env=fork_env, target_file=MOD, fork_text=fork,
                       test_files=[TESTS])
    assert der.ok, der.reason
    assert apply_diff(TINY_TESTS, der.diffs[TESTS]) == der.files[TESTS]
    assert "a;b" in der.files[TESTS] and "a;b" not in TINY_TESTS


def test_diffs_of_one_file_apply_together_unless_they_overlap():
    first = PUBLIC.replace("line 3\n", "line three\n")
    second = PUBLIC.replace("line 20\n", "line twenty\nline twenty-bis\n")
    both = apply_diffs(PUBLIC, [_diff(PUBLIC, first), _diff(PUBLIC, second)])
    assert both == first.replace("line 20\n", "line twenty\nline twenty-bis\n")
    assert apply_diffs(PUBLIC, [_diff(PUBLIC, first), _diff(PUBLIC, first)]) == first      # the same change once
    other = PUBLIC.replace("line 3\n", "line THREE\n")
    with pytest.raises(ForkDataError, match="two diffs change the same lines"):
        apply_diffs(PUBLIC, [_diff(PUBLIC, first), _diff(PUBLIC, other)])
    removed = PUBLIC.replace("line 30\n", "")
    assert apply_diff(PUBLIC, _diff(PUBLIC, removed)) == removed
    assert [(b.start, b.end) for b in diff_blocks(PUBLIC, _diff(PUBLIC, first))] == [(2, 3)]


def test_a_diff_over_another_text_is_refused_with_its_line():
    first = PUBLIC.replace("line 3\n", "line three\n")
    with pytest.raises(ForkDataError, match=r"t.py: line \d+: does not match line 1 of the file"):
        apply_diff(PUBLIC.replace("line 1\n", "changed\n"), _diff(PUBLIC, first), where="t.py")
    with pytest.raises(ForkDataError, match="expected a file header or a hunk"):
        apply_diff(PUBLIC, "--- a/t.py\n+++ b/t.py\nnot a hunk\n")
    with pytest.raises(ForkDataError, match="ends inside a hunk"):
        apply_diff(PUBLIC, "".join(_diff(PUBLIC, first).splitlines(keepends=True)[:-2]))


def test_the_shipped_set_holds_each_validated_task_and_rebuilds_its_tests(tiny_fork_set):
    fs = tiny_fork_set
    forks = read_forks(fs.set_dir / "forks.jsonl")
    assert sorted(forks) == ["tinyfork.mod.join", "tinyfork.mod.tag"]
    for ns, rec in forks.items():
        row = fs.rows[ns]
        assert (rec.project_path, rec.version, rec.file, rec.indent) == (PROJECT, "0", MOD, 4)
        assert rec.fork_body == row["fork_body"] and list(rec.changes) == row["changes"]
        assert list(rec.hidden_files) == row["hidden_files"] and rec.checks == row["checks"]
        assert list(rec.test_ids) == json.loads(fs.data.read_text().splitlines()[sorted(forks).index(ns)])["tests"]
        rebuilt = rec.fork_tests(lambda p: (fs.root / p).read_text())
        public = (fs.root / TESTS).read_text()
        assert _diff(public, rebuilt[TESTS], TESTS) == row["derivation"]["diffs"][TESTS]
        assert ForkRecord.of(rec.record()) == rec
    records = [json.loads(x) for x in (fs.set_dir / "deveval_tasks.jsonl").read_text().splitlines()]
    assert [r["namespace"] for r in records] == sorted(forks)
    source = (fs.set_dir / "SOURCE.md").read_text()
    assert "2 fork tasks in 1 repositories" in source
    assert "| Tiny/tiny 0 | 2 | MIT |" in source and "seketeam/DevEval" in source


def test_a_snapshot_file_other_than_the_derived_ones_is_refused(tiny_fork_set):
    rec = read_forks(tiny_fork_set.set_dir / "forks.jsonl")["tinyfork.mod.join"]
    public = (tiny_fork_set.root / TESTS).read_text()
    with pytest.raises(ForkDataError, match="differs from the one the fork's tests were derived from"):
        fork_test_text(rec.tests[TESTS], public + "\n# edited\n", where=TESTS)


def test_bad_fork_lines_name_the_file_line_and_field(tmp_path):
    path = tmp_path / "forks.jsonl"
    path.write_text('{"namespace": "a.b"}\n')
    with pytest.raises(ForkDataError, match=r"forks.jsonl:1: missing field 'tests'"):
        read_forks(path)
    path.write_text("{not json\n")
    with pytest.raises(ForkDataError, match=r"forks.jsonl:1"):
        read_forks(path)


def test_the_ship_command_names_a_missing_screening_file(tmp_path, capsys):
    from scripts.build_fork_set import main

    assert main(["ship", "--screen", str(tmp_path / "none.jsonl"), "--set-dir", str(tmp_path / "set")]) == 2
    assert "none.jsonl not found (option --screen)" in capsys.readouterr().err


def test_the_shipped_fork_data_reads_and_covers_the_shipped_samples():
    from benchmarks.locoeval.fork.runner import fork_problems
    from benchmarks.locoeval.fork.ship import SET_DIR
    from benchmarks.locoeval.loader import load_samples

    forks = read_forks(SET_DIR / "forks.jsonl")
    assert forks and all(rec.tests and rec.test_ids and rec.hidden_files for rec in forks.values())
    records = [json.loads(x)["namespace"] for x in (SET_DIR / "deveval_tasks.jsonl").read_text().splitlines()]
    assert sorted(records) == sorted(forks)
    if (SET_DIR / "samples.jsonl").is_file():
        samples = load_samples(SET_DIR / "samples.jsonl")
        assert [p for s in samples for p in fork_problems(s, forks)] == []


def test_other_release_problems_and_unchecked_tasks_are_left_out_and_the_sources_written(tiny_fork_set, tmp_path):
    from types import SimpleNamespace

    from benchmarks.deveval.tasks import load_manifest
    from benchmarks.locoeval.fork.releases import release_skips
    from benchmarks.locoeval.fork.ship import build, without, write_set

    fs = tiny_fork_set
    result = build(fs.screen, deveval_data=fs.data, manifest=SimpleNamespace(project=lambda p: fs.entry()),
                   snapshot=lambda e: fs.root)
    releases = tmp_path / "releases.jsonl"
    releases.write_text(json.dumps({"namespace": "tinyfork.mod.join", "ok": False, "fork_hits": {"k": ["0.9"]},
                                    "fork_needles": {"k": "';'"}}) + "\n")
    kept = without(result, release_skips(releases, [f.namespace for f in result.forks]))
    assert [f.namespace for f in kept.forks] == [] and [r["namespace"] for r in kept.records] == []
    assert kept.skipped["tinyfork.mod.join"] == "other releases: fork fragment `';'` in release 0.9"
    assert kept.skipped["tinyfork.mod.tag"] == f"other releases: not checked in {releases}"
    releases.write_text(releases.read_text() + json.dumps({"namespace": "tinyfork.mod.tag", "ok": True,
                                                           "fork_hits": {}}) + "\n")
    kept = without(result, release_skips(releases, [f.namespace for f in result.forks]))
    assert [f.namespace for f in kept.forks] == ["tinyfork.mod.tag"] and list(kept.skipped) == ["tinyfork.mod.join"]
    raw = json.loads(fs.manifest.read_text())
    write_set(kept, tmp_path / "set", screen=fs.screen, licences={PROJECT: "MIT"}, sources=raw)
    assert [e.project_path for e in load_manifest(tmp_path / "set" / "sources.json").select(None)] == [PROJECT]
    assert "`tinyfork.mod.join`: other releases: fork fragment" in (tmp_path / "set" / "SOURCE.md").read_text()


def test_a_crlf_fork_body_ships_with_newlines_and_dedented():
    from benchmarks.locoeval.fork.ship import shipped_body

    assert shipped_body("    a = 1\r\n\r\n    if a:\r\n        b = 2\r\n") == "a = 1\n\nif a:\n    b = 2"
    assert shipped_body("a = 1\nreturn a") == "a = 1\nreturn a"
