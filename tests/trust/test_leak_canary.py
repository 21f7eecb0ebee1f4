"""Leak canary: nothing the grader knows reaches a method.

A recording ContextManager (``canary_kit.RecordingManager``) is run through the real runners with
their default configs and scripted backbone replies (not a model's):

* the LoCoEval runner (``benchmarks.locoeval.runner.LoCoEval`` through the run loop) on the shipped demo samples;
* the CAB runner (``benchmarks.cab.runner.CodeAssistBench`` through the run loop) on the fixture issues of tests/cab.

It records the Session (system prompt, meta, the repository index it is given: every entity's path
and source), every query, every Turn. The test fails if any of these carries an outline ``kind``
(as a value or key) or ``brief``, a gt-item or distractor id, the reference body of a judged
function, or the source of a test that judges a task; for CAB, the judge's satisfaction conditions
or the issue's resolving comments anywhere but in the user's own words.

Against commit d775234 (``git worktree add /tmp/h2_old d775234``; ``PYTHONPATH=/tmp/h2_old:tests/trust``)
the LoCoEval check fails: the outline kinds came in ``Turn.meta`` and the judging tests were in the
indexed repository (docs/baselines.md quotes the failure).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import open_dict

import benchmarks
import canary_kit

ROOT = Path(benchmarks.__file__).resolve().parents[1]  # the checkout under test (may be an old worktree)
CONF = ROOT / "conf"
CAB_TESTS = Path(__file__).resolve().parents[1] / "cab"


def _compose(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=overrides)


def _method_facing(sample_id: str) -> str:
    try:
        from benchmarks.task import method_facing_id
    except ImportError:  # an older checkout handed methods the benchmark's own id
        return sample_id
    return method_facing_id(sample_id)


def _locoeval_canary(tmp: Path, overrides: list[str]):
    from benchmarks.locoeval.loader import load_samples
    from benchmarks import runloop

    cfg = _compose([
        "method=full", "backbone=local",
        "backbone.model=scripted/canary_kit:reply", "benchmark.evaluator=canary_kit.fake_evaluate",
        f"run.results_dir={tmp / 'results'}", "cache.llm=false", "benchmark.progress=false", "run.run_id=canary",
        *overrides,
    ])
    with open_dict(cfg):
        cfg.method.manager = {"_target_": "canary_kit.RecordingManager"}
    canary_kit.RECORD.clear()
    runloop.run(cfg)
    received = list(canary_kit.RECORD)
    samples = load_samples(str(cfg.benchmark.samples))
    if cfg.run.get("limit"):
        samples = samples[: int(cfg.run.limit)]
    return samples, received


@pytest.fixture(scope="module")
def locoeval_run(tmp_path_factory):
    return _locoeval_canary(tmp_path_factory.mktemp("canary_locoeval"), ["benchmark=demo"])


@pytest.fixture(scope="module")
def verified_run(tmp_path_factory):
    """The second verified set's first samples (docstrings removed, its judging tests hidden); the
    whole set: ``LEAK_CANARY_VERIFIED_LIMIT=150``."""
    limit = int(os.environ.get("LEAK_CANARY_VERIFIED_LIMIT", "2"))
    return _locoeval_canary(tmp_path_factory.mktemp("canary_verified"),
                            ["benchmark=locoeval_verified_v2", f"run.limit={limit}"])


@pytest.mark.parametrize("run_name", ["locoeval_run", "verified_run"])
def test_locoeval_runner_hands_methods_no_grader_knowledge(run_name, request):
    samples, received = request.getfixturevalue(run_name)
    by_id = {r.sample_id: r for r in received}
    assert set(by_id) == {_method_facing(s.id) for s in samples}, "every sample reached the recorder"
    leaks: list[str] = []
    for sample in samples:
        rec = by_id[_method_facing(sample.id)]
        assert rec.sample_id != sample.id and not re.search(r"-(sh|mh|single|multi)\b|hop", rec.sample_id), \
            f"the method-facing id {rec.sample_id!r} carries the benchmark's id or subset"
        leaks += [f"{sample.id}: harness file {m!r} in the indexed tree" for m in canary_kit.disk_markers(rec)]
        turns = [c for c, _ in rec.items if c == "turn"]
        assert len(turns) == len(sample.outline), "every preparation turn was observed"
        assert any(c.startswith("repo.source:") for c, _ in rec.items), "the repository index was walked"
        secrets = canary_kit.locoeval_secrets(sample)
        assert secrets["reference_body"] and secrets["judging_test"]  # the canary has something to look for
        leaks += [f"{sample.id}: {leak}" for leak in canary_kit.find_leaks(rec, secrets)]
    assert not leaks, "grader knowledge reached the method:\n" + "\n".join(leaks)


def test_canary_detects_a_planted_leak(locoeval_run):
    """The check can fail: plant each secret category into a copy of what was received."""
    samples, received = locoeval_run
    sample = samples[0]
    rec = next(r for r in received if r.sample_id == _method_facing(sample.id))
    secrets = canary_kit.locoeval_secrets(sample)
    for category, values in secrets.items():
        planted = canary_kit.Received(rec.sample_id, list(rec.items))
        if category in ("kind", "subset"):
            planted.add(f"leaf:turn[1].meta.{category}", values[0])
        else:
            planted.add("query", f"prefix {values[0]} suffix")
        assert any(leak.startswith(category) for leak in canary_kit.find_leaks(planted, secrets)), category


def _cab_cfg(tmp: Path):
    cfg = _compose([
        "benchmark=cab", "method=full", "backbone=local",
        "backbone.model=scripted/cab_testkit:scripted_maintainer",
        "user_backbone.model=scripted/cab_testkit:scripted_user",
        "judge_backbone.model=scripted/cab_testkit:scripted_judge",
        f"run.results_dir={tmp / 'results'}", f"cache.dir={tmp / 'cache'}",
        f"benchmark.data={CAB_TESTS / 'fixture_issues.jsonl'}",
        "benchmark.repo_url_template='file:///nonexistent/{owner}/{name}'",
    ])
    with open_dict(cfg):
        cfg.benchmark.local_repos = {"example/tinykv": str(CAB_TESTS.parent / "fixtures" / "cab_repo")}
        cfg.method.manager = {"_target_": "canary_kit.RecordingManager"}
    return cfg


def test_cab_runner_hands_methods_no_grader_knowledge(tmp_path, monkeypatch):
    import json
    import sys

    monkeypatch.syspath_prepend(str(CAB_TESTS))
    from benchmarks import runloop

    canary_kit.RECORD.clear()
    runloop.run(_cab_cfg(tmp_path))
    received = list(canary_kit.RECORD)
    assert received, "at least one fixture issue reached the method"
    issues = {_method_facing(json.loads(line)["task_id"]): json.loads(line) for line in (CAB_TESTS / "fixture_issues.jsonl").read_text().splitlines()
              if line.strip()}
    leaks = []
    for rec in received:
        issue = issues[rec.sample_id]
        comments = ast.literal_eval(issue["comments"]) if isinstance(issue["comments"], str) else issue["comments"]
        secrets = {"satisfaction_condition": list(issue["satisfaction_conditions"]),
                   "resolving_comment": [c["body"] for c in comments], "task_id": [issue["task_id"]]}
        # the user agent knows the conditions and may quote them: only non-user channels count
        user_channels = ("query", "turn")
        leaks += [f"{rec.sample_id}: {leak}" for leak in canary_kit.find_leaks(rec, secrets, exact_leaf=(),
                                                                             skip_channels=user_channels)]
        turn_meta = [t for c, t in rec.items if c.startswith("leaf:turn") and ".meta" in c]
        for secret in secrets["satisfaction_condition"] + secrets["resolving_comment"]:
            assert not any(canary_kit.normalise(secret) in canary_kit.normalise(t) for t in turn_meta), secret
    assert not leaks, "grader knowledge reached the method:\n" + "\n".join(leaks)
    del sys
