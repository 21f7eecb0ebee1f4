"""Run directories: atomic writes, the resume rule, id selection, the worker pool."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.records import RunDir, append_jsonl, atomic_write_json, read_jsonl, safe_name
from benchmarks.runs import run_pool


def test_atomic_write_leaves_no_temp_and_replaces(tmp_path):
    p = atomic_write_json(tmp_path / "a" / "x.json", {"v": 1})
    atomic_write_json(p, {"v": 2})
    assert json.loads(p.read_text()) == {"v": 2}
    assert [f.name for f in p.parent.iterdir()] == ["x.json"]


def test_atomic_write_failure_keeps_old_file(tmp_path):
    p = atomic_write_json(tmp_path / "x.json", {"v": 1})

    class Boom:
        def __str__(self):
            raise RuntimeError("cannot serialise")

    with pytest.raises(RuntimeError):
        atomic_write_json(p, {"v": Boom()})
    assert json.loads(p.read_text()) == {"v": 1}
    assert len(list(tmp_path.iterdir())) == 1


def test_resume_rule(tmp_path):
    run = RunDir(tmp_path / "run")
    run.write_result("s-ok", {"status": "ok"})
    run.write_result("s-err", {"status": "error", "error": "boom"})
    run.write_result("s-init", {"status": "init_failed"})  # final by its meaning (excluded for every method)
    run.write_result("s-int", {"status": "interrupted"})
    run.sample_dir("s-partial")  # started, killed before result.json
    assert run.is_done("s-ok") and run.is_done("s-init")
    assert not run.is_done("s-err") and not run.is_done("s-int") and not run.is_done("s-partial")
    assert not run.is_done("never") and run.status("s-partial") is None
    assert {r["sample_id"] for r in run.results()} == {"s-ok", "s-err", "s-init", "s-int"}


def test_unknown_status_is_refused_naming_the_file(tmp_path):
    from benchmarks.records import RecordError

    run = RunDir(tmp_path / "run")
    with pytest.raises(RecordError, match=r"result.json: field 'status'"):
        run.write_result("x", {"status": "made_up"})
    (run.sample_dir("y") / "result.json").write_text('{"sample_id": "y", "status": "weird"}')
    with pytest.raises(RecordError, match=r"samples/y/result.json: field 'status'"):
        run.result("y")


def test_truncated_jsonl_line_is_ignored(tmp_path):
    p = tmp_path / "log.jsonl"
    append_jsonl(p, {"a": 1})
    with open(p, "a") as f:
        f.write('{"a": 2')  # crash mid-write
    assert read_jsonl(p) == [{"a": 1}]


def test_safe_name_is_stable_and_unique():
    assert safe_name("boltons-1") == "boltons-1"
    a, b = safe_name("a/b"), safe_name("a:b")
    assert a != b and "/" not in a and os.sep not in b


def test_run_pool_isolates_failures():
    def f(x):
        if x == 2:
            raise ValueError("bad")
        return x * 10

    out = run_pool([1, 2, 3], f, workers=2)
    assert out[0] == 10 and out[2] == 30 and isinstance(out[1], ValueError)
