"""scripts.compare_runs: two runs' records equal minus timing, or the first difference (synthetic records)."""

from __future__ import annotations

import json
from pathlib import Path

from scripts import compare_runs


def _write_run(root: Path, *, seconds: float, reply: str, pytest_time: str, score: float = 0.5) -> Path:
    sample = root / "demo" / "local" / "full" / "demo" / "samples" / "s1"
    sample.mkdir(parents=True)
    (sample / "result.json").write_text(json.dumps({"sample_id": "s1", "wall_seconds": seconds, "attempt": str(seconds),
                                                    "index_seconds": seconds / 7,
                                                    "usage": {"calls": 2, "cached_calls": 0}}))
    (sample / "conversation.jsonl").write_text(json.dumps({"turn": 1, "assistant": reply}) + "\n")
    (sample / "contexts.jsonl").write_text(json.dumps({"turn": 1, "context": {"items": [{"meta": {"score": score}}],
                                                                              "meta": {"timing_ms": {"retrieve": seconds}}}}) + "\n")
    (sample / "tests.json").write_text(json.dumps([{"log": f"F\nwhere True = <function is_uuid at 0x7f8b3d80{int(seconds * 10):04d}>"
                                                           f"(UUID('775c29b2-9fb3-45e3-a7d1-b122178e{int(seconds * 10):04d}'))"
                                                           f"\nfrom '/tmp/reconmem-run-x{int(seconds * 10)}q/tree/m.py'\n1 failed in {pytest_time}s\n"}]))
    (sample / "ledger.jsonl").write_text(json.dumps({"purpose": "turn_generation", "seconds": seconds, "cached": False}) + "\n")
    return root


def test_runs_that_differ_only_in_timing_are_identical(tmp_path, capsys):
    a = _write_run(tmp_path / "a", seconds=1.0, reply="ok", pytest_time="0.04")
    b = _write_run(tmp_path / "b", seconds=9.5, reply="ok", pytest_time="1.20")
    assert compare_runs.main([str(a), str(b)]) == 0
    assert "5 record files, 5 identical minus timing -> identical" in capsys.readouterr().out


def test_a_different_reply_or_score_is_reported_with_its_path(tmp_path, capsys):
    a = _write_run(tmp_path / "a", seconds=1.0, reply="ok", pytest_time="0.04", score=0.463050)
    b = _write_run(tmp_path / "b", seconds=1.0, reply="OK", pytest_time="0.04", score=0.463049)
    assert compare_runs.main([str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "s1/conversation.jsonl at $[1].content: 'ok' != 'OK'" in out  # rows read as messages
    assert "s1/contexts.jsonl at $[0].context.items[0].meta.score: 0.46305 != 0.463049" in out
    assert "-> 2 differ" in out


def test_a_missing_sample_file_differs_and_bad_input_is_one_line(tmp_path, capsys):
    a = _write_run(tmp_path / "a", seconds=1.0, reply="ok", pytest_time="0.04")
    b = _write_run(tmp_path / "b", seconds=1.0, reply="ok", pytest_time="0.04")
    (b / "demo/local/full/demo/samples/s1/tests.json").unlink()
    assert compare_runs.main([str(a), str(b)]) == 1
    assert "s1/tests.json at file: true != false" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert compare_runs.main([str(a), str(tmp_path / "empty")]) == 2
    assert "no run directory" in capsys.readouterr().err
