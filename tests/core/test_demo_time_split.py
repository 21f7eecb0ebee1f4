"""The demo's time line: sample wall seconds vs the uncached model calls of the final attempt (synthetic records)."""

from __future__ import annotations

import json

from benchmarks.analysis.demo_summary import time_split


def test_time_split_counts_only_uncached_calls_of_the_final_attempt(tmp_path):
    sample = tmp_path / "samples" / "s1"
    sample.mkdir(parents=True)
    (sample / "result.json").write_text(json.dumps({"sample_id": "s1", "wall_seconds": 100.0, "attempt": "b"}))
    events = [
        {"purpose": "turn_generation", "seconds": 30.0, "cached": False, "attempt": "b", "input_tokens": 400,
         "prefilled_tokens": 100, "restored_tokens": 300},
        {"purpose": "memory_update", "seconds": 20.0, "cached": False, "attempt": "b"},
        {"purpose": "turn_generation", "seconds": 0.01, "cached": True, "attempt": "b"},
        {"purpose": "turn_generation", "seconds": 500.0, "cached": False, "attempt": "a"},  # an earlier, crashed attempt
    ]
    (sample / "ledger.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (tmp_path / "samples" / "unfinished").mkdir()  # no result.json yet: skipped
    line = time_split("reconmem", str(tmp_path))
    assert line.startswith("time reconmem: samples 100 s, of which model calls 50 s (50%: turn_generation 30 s, memory_update 20 s)")
    assert line.endswith("llama.cpp prefilled 100 of 400 prompt tokens (25%, 100 per call), the rest restored from its prompt cache")
