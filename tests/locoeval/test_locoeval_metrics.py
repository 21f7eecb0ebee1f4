"""LoCoEval metrics against hand-computed values."""

from __future__ import annotations

import json

import pytest

from benchmarks.locoeval import metrics as M


def ev(purpose, inp, out, turn=None, phase="prep"):
    return {"purpose": purpose, "input_tokens": inp, "output_tokens": out, "turn": turn, "phase": phase}


RESULTS = [
    {"sample_id": "a", "status": "ok", "subset": "single-hop", "n_turns": 35, "n_tasks": 2,
     "tasks": [{"passed": True}, {"passed": False}]},
    {"sample_id": "b", "status": "ok", "subset": "single-hop", "n_turns": 52, "n_tasks": 1, "tasks": [{"passed": True}]},
    {"sample_id": "c", "status": "ok", "subset": "multi-hop", "n_turns": 61, "n_tasks": 3,
     "tasks": [{"passed": False}, {"passed": False}, {"passed": True}]},
    {"sample_id": "d", "status": "error", "subset": "multi-hop", "n_turns": 40, "n_tasks": 2, "tasks": [], "error": "boom"},
]
# method M, two conversations
LEDGER_M = {
    "a": [ev("mock_user", 500, 50, 1), ev("turn_generation", 100, 20, 1), ev("memory_sketching", 40, 10, 1),
          ev("memory_update", 30, 5, 1), ev("turn_generation", 120, 30, 2), ev("memory_update", 10, 2, 2),
          ev("task_generation", 200, 80, 3, "task"), ev("judge", 999, 9, None)],
    "b": [ev("turn_generation", 60, 10, 1), ev("memory_extraction", 20, 4, 1), ev("task_generation", 90, 40, 2, "task")],
}
LEDGER_FULL = {
    "a": [ev("mock_user", 500, 50, 1), ev("turn_generation", 300, 20, 1), ev("turn_generation", 700, 30, 2),
          ev("task_generation", 1000, 80, 3, "task")],
    "b": [ev("turn_generation", 150, 10, 1), ev("task_generation", 450, 40, 2, "task")],
    "z": [ev("turn_generation", 10_000, 1, 1)],  # not in the method run: ignored
}


def test_pass_at_1_counts_every_task_of_every_scored_sample():
    # a(1/2) b(1/1) c(1/3) and the errored d, whose 2 tasks count as failed -> 3/8 overall
    assert M.results_pass_at_1(RESULTS) == pytest.approx(3 / 8)
    assert M.pass_at_1_by_subset(RESULTS) == pytest.approx({"single-hop": 2 / 3, "multi-hop": 1 / 5, "overall": 3 / 8})
    assert M.results_pass_at_1([]) is None and M.pass_at_1([]) is None
    assert M.pass_at_1([True, False, False, True]) == 0.5
    assert M.pass_at_1_by(RESULTS, M.task_count) == pytest.approx({1: 1.0, 2: 1 / 4, 3: 1 / 3})
    assert M.pass_at_1_by(RESULTS, M.length_bin) == pytest.approx(
        {"[30,40)": 0.5, "[40,50)": 0.0, "[50,60)": 1.0, "[60,70)": 1 / 3})
    # Before (ok samples only) the errored sample vanished and the score rose to 3/6.
    assert M.results_pass_at_1(M.ok_results(RESULTS)) == pytest.approx(0.5)


def test_errored_and_interrupted_samples():
    recorded = {"sample_id": "e", "status": "error", "n_tasks": 3,
                "tasks": [{"req_id": "r1", "passed": True}, {"req_id": "r2", "passed": False}]}
    assert M.sample_outcomes(recorded) == [False, False]  # a recorded list wins; an error never passes
    assert M.sample_outcomes({"status": "error", "n_tasks": 3, "tasks": []}) == [False] * 3
    assert not M.is_errored({"status": "interrupted", "n_tasks": 3})  # not an error: a missing sample
    assert M.is_missing({"status": "interrupted", "n_tasks": 3}) and M.is_missing({"status": "missing"})
    assert not M.is_errored({"status": "excluded", "n_tasks": 3}) and not M.is_missing({"status": "excluded"})
    # An interrupted (or missing) selected sample is scored, its tasks failed.
    assert M.scored_results([{"status": "interrupted"}, {"status": "ok", "tasks": []}]) == [
        {"status": "interrupted"}, {"status": "ok", "tasks": []}]
    assert M.results_pass_at_1([{"status": "interrupted", "n_tasks": 2}, {"status": "ok", "tasks": [{"passed": True}]}]) \
        == pytest.approx(1 / 3)


def test_tokens_and_stages():
    a = LEDGER_M["a"]
    # counted: everything but mock_user and judge
    assert M.input_tokens(a) == 100 + 40 + 30 + 120 + 10 + 200 == 500
    assert M.conversation_tokens(a) == {"input": 500, "output": 20 + 10 + 5 + 30 + 2 + 80, "total": 647}
    assert M.stage_breakdown(a) == {"turn_generation": 270, "task_generation": 280, "memory_sketching": 50,
                                    "memory_update": 47, "other": 0, "total": 647}
    assert M.stage_breakdown(LEDGER_M["b"])["other"] == 24
    assert M.per_turn_tokens(a) == {1: 120 + 50 + 35, 2: 150 + 12, 3: 280}
    # mean over conversations reaching each prep turn: turn 1 -> (205 + 94) / 2, turn 2 -> 162 / 1
    assert M.mean_per_turn_tokens(LEDGER_M) == pytest.approx({1: 149.5, 2: 162.0})
    mean = M.mean_conversation_tokens(LEDGER_M)
    assert mean["total"] == pytest.approx((647 + 224) / 2)
    assert mean["stages"]["turn_generation"] == pytest.approx((270 + 70) / 2)
    assert sum(mean["stage_share"].values()) == pytest.approx(1.0)


def test_compression_ratio():
    # Full input over a,b = (300+700+1000) + (150+450) = 2600; M = 500 + (60+20+90) = 670
    assert M.compression_ratio(LEDGER_M, LEDGER_FULL) == pytest.approx(2600 / 670)
    assert M.compression_ratio(LEDGER_M, LEDGER_FULL, sample_ids=["b"]) == pytest.approx(600 / 170)
    assert M.compression_ratio(LEDGER_FULL, LEDGER_FULL) == pytest.approx(1.0)
    assert M.compression_ratio(LEDGER_M, {}) is None
    assert M.cr(2600, 670) == 2600 / 670 and M.cr(2600, 0) is None


def _write_run(root, results, ledgers):
    for r in results:
        d = root / "samples" / r["sample_id"]
        d.mkdir(parents=True)
        (d / "result.json").write_text(json.dumps(r))
        (d / "ledger.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ledgers.get(r["sample_id"], [])))
    return root


def test_summaries_from_disk(tmp_path):
    m = _write_run(tmp_path / "m", RESULTS, LEDGER_M)
    full_results = [{**r, "status": "ok"} for r in RESULTS[:2]]
    f = _write_run(tmp_path / "full", full_results, LEDGER_FULL)
    s = M.summarize_run(m)
    assert (s["n_samples"], s["n_ok"], s["n_errored"], s["n_tasks"], s["n_passed"]) == (4, 3, 1, 8, 3)
    assert s["pass_at_1"]["overall"] == pytest.approx(3 / 8) and s["n_error"] == 1
    assert s["cost_usd"] == 0 and s["json_failures"] == 0
    assert s["errors"] == [{"sample_id": "d", "error": "boom"}]
    assert s["input_tokens_total"] == 500 + 170
    assert M.compression_ratio_between(m, f) == pytest.approx(2600 / 670)
    assert M.summarize_run(m, sample_ids=["b"])["pass_at_1"]["overall"] == 1.0
