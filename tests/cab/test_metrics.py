"""CAB metrics against hand-computed values (Table 2 percentages, Eq. 12-13 token costs)."""

from __future__ import annotations

import pytest

from benchmarks.cab.metrics import event_category, issue_costs, issue_tokens, summarize, tokens_by_role


def _r(sid, verdict, verbosity, turns, maint, mem, status="ok", user_status=None):
    return {"sample_id": sid, "status": status, "verdict": verdict, "verbosity": verbosity, "turns": turns,
            "final_user_status": user_status, "tokens": {"maintainer": maint, "memory": mem, "combined": maint + mem}}


def test_summary_hand_computed():
    results = [
        _r("a", "CORRECT", "APPROPRIATE", 2, 1000, 200, user_status="FULLY_SATISFIED"),
        _r("b", "PARTIALLY CORRECT", "VERBOSE", 4, 3000, 0),
        _r("c", "INCORRECT", "CONCISE", 1, 500, 100),
        _r("d", "CORRECT", "APPROPRIATE", 5, 2500, 500, user_status="FULLY_SATISFIED"),
        {"sample_id": "e", "status": "init_failed"},
        {"sample_id": "f", "status": "judge_error", "turns": 3, "tokens": {"maintainer": 9, "memory": 0, "combined": 9}},
        {"sample_id": "g", "status": "docker_unavailable"},
        {"sample_id": "h", "status": "error"},
    ]
    s = summarize(results)
    # One denominator: 4 judged + 2 errored (judge_error, error) = 6 scored; init_failed and
    # docker_unavailable excluded.
    assert (s["scored"], s["evaluated"], s["errored"], s["excluded"]) == (6, 4, 2, 2)
    assert s["init_failed_count"] == 1 and s["judge_error_count"] == 1
    assert s["docker_unavailable_count"] == 1 and s["error_count"] == 1 and s["total_records"] == 8
    assert s["correct_pct"] == pytest.approx(200 / 6)
    assert s["partially_correct_pct"] == pytest.approx(100 / 6)
    assert s["incorrect_pct"] == pytest.approx(300 / 6)  # c + the two errored issues
    assert s["errored_pct"] == pytest.approx(200 / 6)
    assert s["appropriate_pct"] == pytest.approx(200 / 6) and s["verbose_pct"] == pytest.approx(100 / 6)
    assert s["terse_pct"] == pytest.approx(100 / 6)
    assert s["appropriate_pct"] + s["verbose_pct"] + s["terse_pct"] + s["errored_pct"] == pytest.approx(100)
    assert s["avg_turns"] == pytest.approx((2 + 4 + 1 + 5 + 3) / 5)  # f recorded 3 turns; h none
    assert s["fully_satisfied_pct"] == pytest.approx(200 / 6)
    # Eq. 12: mean over the scored issues that recorded tokens (a, b, c, d, f)
    assert s["n_token_issues"] == 5
    assert s["maintainer_tokens_per_issue"] == pytest.approx((1000 + 3000 + 500 + 2500 + 9) / 5)
    assert s["memory_tokens_per_issue"] == pytest.approx((200 + 0 + 100 + 500 + 0) / 5)
    assert s["combined_tokens_per_issue"] == pytest.approx((1200 + 3000 + 600 + 3000 + 9) / 5)
    # Eq. 13: macro average of per-issue tokens / turns (NOT total tokens / total turns)
    assert s["maintainer_tokens_per_turn"] == pytest.approx((500 + 750 + 500 + 500 + 3) / 5)
    assert s["memory_tokens_per_turn"] == pytest.approx((100 + 0 + 100 + 100 + 0) / 5)
    assert s["combined_tokens_per_turn"] == pytest.approx((600 + 750 + 600 + 600 + 3) / 5)
    assert s["combined_tokens_per_turn"] != pytest.approx(7809 / 15)


def test_excluded_ids_apply_to_every_method():
    results = [_r("a", "CORRECT", "APPROPRIATE", 2, 1, 1), _r("b", "INCORRECT", "VERBOSE", 2, 1, 1)]
    s = summarize(results, excluded_ids=["b"])  # b could not be initialised in another method's run
    assert (s["scored"], s["excluded"], s["correct_pct"]) == (1, 1, 100.0)
    assert summarize([{"sample_id": "x", "status": "ok", "excluded_reason": "init_failed"}])["scored"] == 0


def test_issue_costs():
    events = [{"role": "maintainer", "purpose": "turn_generation", "cost_usd": 0.5},
              {"role": "memory", "purpose": "memory_update", "cost_usd": 0.25},
              {"role": "judge", "purpose": "judge", "cost_usd": 1.0},
              {"role": "maintainer", "purpose": "maintainer_tool_step"}]  # no cost_usd: $0, counted
    c = issue_costs(events)
    assert (c["maintainer"], c["memory"], c["combined"], c["all"], c["events_without_cost"]) == (0.5, 0.25, 0.75, 1.75, 1)


def test_summary_empty_and_invalid():
    s = summarize([{"status": "init_failed"}])
    assert s["evaluated"] == 0 and s["scored"] == 0 and s["correct_pct"] is None and s["avg_turns"] is None
    with pytest.raises(ValueError, match="verbosity"):
        summarize([_r("x", "CORRECT", "SHORT", 1, 1, 1)])
    with pytest.raises(ValueError, match="verdict"):
        summarize([_r("x", "MAYBE", "VERBOSE", 1, 1, 1)])
    with pytest.raises(ValueError, match="turns"):
        summarize([_r("x", "CORRECT", "VERBOSE", 0, 1, 1)])


def test_issue_tokens_by_role_and_purpose():
    events = [
        {"role": "maintainer", "purpose": "turn_generation", "input_tokens": 100, "output_tokens": 20},
        {"role": "maintainer", "purpose": "maintainer_tool_step", "input_tokens": 150, "output_tokens": 10},
        {"role": "memory", "purpose": "memory_sketching", "input_tokens": 40, "output_tokens": 5},
        {"role": "memory", "purpose": "code_draft_whatever", "input_tokens": 30, "output_tokens": 3},  # role decides
        {"role": "maintainer", "purpose": "memory_update", "input_tokens": 7, "output_tokens": 1},  # purpose decides
        {"purpose": "persona", "input_tokens": 2, "output_tokens": 2},
        {"purpose": "turn_generation", "input_tokens": 1, "output_tokens": 1},  # untagged maintainer purpose
        {"role": "user", "purpose": "mock_user", "input_tokens": 500, "output_tokens": 50},
        {"role": "judge", "purpose": "judge", "input_tokens": 900, "output_tokens": 90},
    ]
    t = issue_tokens(events)
    assert t == {"maintainer": 120 + 160 + 2, "memory": 45 + 33 + 8 + 4, "combined": 282 + 90}
    assert event_category(events[-1]) is None and event_category(events[-2]) is None
    roles = tokens_by_role(events)
    assert roles["judge"] == {"calls": 1, "input_tokens": 900, "output_tokens": 90} and roles["untagged"]["calls"] == 2
