"""CAB through the run loop and the composed Hydra config: records, init_failed, summary, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import open_dict

import cab_testkit
from benchmarks import runloop
from cab_testkit import FIXTURE_REPO, HERE

CONF = Path(__file__).resolve().parents[2] / "conf"


def _cfg(tmp_path: Path, *extra: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[
            "benchmark=cab", "method=full", "backbone=local",
            "backbone.model=scripted/cab_testkit:scripted_maintainer",
            "user_backbone.model=scripted/cab_testkit:scripted_user",
            "judge_backbone.model=scripted/cab_testkit:scripted_judge",
            f"run.results_dir={tmp_path / 'results'}", f"cache.dir={tmp_path / 'cache'}",
            f"benchmark.data={HERE / 'fixture_issues.jsonl'}", "benchmark.repo_url_template='file:///nonexistent/{owner}/{name}'",
            *extra,
        ])
    with open_dict(cfg):
        cfg.benchmark.local_repos = {"example/tinykv": str(FIXTURE_REPO)}
    return cfg


def test_cab_run_records_and_resume(tmp_path):
    calls_before = dict(cab_testkit.SCRIPT_CALLS)
    summary = runloop.run(_cfg(tmp_path))
    assert summary["evaluated"] == 1 and summary["init_failed_count"] == 1
    assert summary["init_failed_ids"] == ["cab_fixture_2"]
    assert summary["correct_pct"] == 100.0 and summary["appropriate_pct"] == 100.0 and summary["avg_turns"] == 1
    assert summary["maintainer_tokens_per_issue"] > 0 and summary["memory_tokens_per_issue"] == 0
    run = tmp_path / "results" / "cab" / "local" / "full" / "default"
    assert (run / "summary.json").is_file() and (run / "config.yaml").is_file() and (run / "manifest.json").is_file()
    sample = run / "samples" / "cab_fixture_1"
    for name in ("conversation.jsonl", "tool_calls.jsonl", "contexts.jsonl", "judgment.json", "ledger.jsonl",
                 "memory.json", "result.json"):
        assert (sample / name).is_file(), name
    result = json.loads((sample / "result.json").read_text())
    assert result["status"] == "ok" and result["checkout"]["provider"] == "local" and result["index_seconds"] >= 0
    failed = json.loads((run / "samples" / "cab_fixture_2" / "result.json").read_text())
    assert failed["status"] == "init_failed" and "git fetch failed" in failed["error"]
    assert failed["excluded_reason"] == "init_failed" and failed["tasks"][0]["passed"] is False  # excluded for every method
    assert result["tasks"] == [{"req_id": "cab_fixture_1", "namespace": "example/tinykv", "outcome": "CORRECT", "passed": True}]
    events = [json.loads(x) for x in (sample / "ledger.jsonl").read_text().splitlines()]
    assert {e["attempt"] for e in events} == {result["attempt"]} and result["usage"]["calls"] == len(events) == 4
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["benchmark"] == "cab" and manifest["family"] == "cab" and manifest["scripted"] is True
    assert manifest["models"] == {"backbone": "scripted/cab_testkit:scripted_maintainer",
                                  "user": "scripted/cab_testkit:scripted_user",
                                  "judge": "scripted/cab_testkit:scripted_judge"}
    used = {k: cab_testkit.SCRIPT_CALLS[k] - calls_before[k] for k in calls_before}
    assert used == {"maintainer": 2, "user": 1, "judge": 1}

    # resume: finished (ok and init_failed) issues are skipped, nothing is called again
    again = runloop.run(_cfg(tmp_path))
    assert {k: cab_testkit.SCRIPT_CALLS[k] - calls_before[k] for k in calls_before} == used
    assert again["evaluated"] == 1 and again["init_failed_count"] == 1


def test_cab_run_real_v3_offline_is_init_failed(tmp_path, cab_data):
    """No GitHub access here: real v3 issues are init_failed (recorded, excluded from the denominator)."""
    cfg = _cfg(tmp_path, f"benchmark.data={cab_data / 'cab_verified_v3.jsonl'}", "run.limit=3",
               "benchmark.repo_url_template='file:///nonexistent/{owner}/{name}'")
    summary = runloop.run(cfg)
    assert summary["issues_selected"] == 3 and summary["init_failed_count"] == 3 and summary["evaluated"] == 0
    assert summary["correct_pct"] is None


def test_crashed_issue_is_an_error_counted_as_incorrect(tmp_path, monkeypatch):
    """A crash inside an issue: error.txt, status error, its task listed as failed; retried on resume."""
    import benchmarks.cab.runner as runner

    def boom(*a, **k):
        raise RuntimeError("maintainer exploded")

    monkeypatch.setattr(runner.CodeAssistBench, "solve", boom)
    summary = runloop.run(_cfg(tmp_path, "run.ids=[cab_fixture_1]"))
    sample = tmp_path / "results" / "cab" / "local" / "full" / "default" / "samples" / "cab_fixture_1"
    result = json.loads((sample / "result.json").read_text())
    assert result["status"] == "error" and result["errored"] and "maintainer exploded" in result["error"]
    assert result["tasks"] == [{"req_id": "cab_fixture_1", "namespace": "example/tinykv", "outcome": "not_judged",
                                "passed": False}]
    assert "RuntimeError: maintainer exploded" in (sample / "error.txt").read_text()
    assert summary["n_errored"] == 1 and summary["issues_selected"] == 1
    monkeypatch.undo()
    again = runloop.run(_cfg(tmp_path, "run.ids=[cab_fixture_1]"))
    assert again["n_errored"] == 0 and again["status_counts"] == {"ok": 1}
