"""The first verified LoCoEval-format set (benchmarks/locoeval/verified/, ``benchmark=locoeval_verified``):
format, counts, no shared task, oracle-validated tasks only, scripted turns that state every item, and
the validator (its validity checks as figures only: this set predates them).

Fast tests read only the shipped files (and the boltons sdist for the validator's broken-copy test);
the full validation run (every task's tests, ~10 min) is marked slow.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.locoeval.loader import SharedTaskWarning, load_samples
from benchmarks.locoeval.schema import STEP_KINDS

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "benchmarks" / "locoeval" / "verified"
SAMPLES = SET / "samples.jsonl"
VERIFICATION = SET / "samples.verification.jsonl"
TASKS = SET / "deveval_tasks.jsonl"


@pytest.fixture(scope="module")
def samples():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SharedTaskWarning)  # a task in two samples fails here
        return load_samples(SAMPLES)


@pytest.fixture(scope="module")
def verification():
    from benchmarks.locoeval.verified.validate import load_verification

    return load_verification(VERIFICATION)


def test_counts_and_shape(samples):
    subsets = Counter(s.subset for s in samples)
    assert len(samples) >= 48 and subsets["single-hop"] == subsets["multi-hop"]
    assert len({s.project_path for s in samples}) >= 10
    for s in samples:
        assert 24 <= len(s.outline) <= 50, s.id
        assert 1 <= len(s.requirements) <= 3, s.id
        assert all(st.text for st in s.outline), f"{s.id}: unscripted turn"
    kinds = {st.kind for s in samples for st in s.outline}
    assert kinds == set(STEP_KINDS)
    for s in samples:  # every sample has every kind
        assert {st.kind for st in s.outline} == set(STEP_KINDS), s.id


def test_no_task_in_two_samples_and_only_oracle_validated_tasks(samples):
    from benchmarks.deveval.tasks import load_manifest

    used = [(s.project_path, r.namespace) for s in samples for r in s.requirements]
    assert len(used) == len(set(used))
    manifest = load_manifest()
    for project, ns in used:
        loc = manifest.project(project).task(ns)
        assert loc is not None and loc.usable, ns  # oracle: reference passes, blank fails
    for s in samples:
        assert s.meta["task_namespaces"] == [r.namespace for r in s.requirements]


def test_shipped_task_records_are_exactly_the_ones_used(samples):
    from benchmarks.deveval.tasks import load_tasks

    records = {t.namespace for t in load_tasks(TASKS)}
    assert records == {r.namespace for s in samples for r in s.requirements}


def test_every_item_stated_and_every_distractor_revised(samples, verification):
    """The validator's conversation checks (no test run, no snapshot)."""
    from benchmarks.locoeval.verified.validate import conversation_checks

    for s in samples:
        for r in s.requirements:
            ver = verification[(s.id, r.req_id)]
            assert conversation_checks(s, r, ver) == [], (s.id, r.req_id)
            assert len(r.gt_items) >= 2 and len(r.distractors) == 1
            assert set(ver["items"]) == {i.id for i in r.gt_items}


def test_turn_texts_carry_no_author_labels(samples):
    """What a method sees (the scripted user text) names no item id, kind label or grader detail."""
    label = re.compile(r"\bR\d+\.(I|D)\d+\b|distractor|\bgt[_ ]items?\b", re.I)
    for s in samples:
        for st in s.outline:
            assert not label.search(st.text), (s.id, st.turn, st.text)
        for t in s.tasks:
            assert not label.search(t.query)


def test_config_points_at_the_shipped_files():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["benchmark=locoeval_verified"])
    from benchmarks.harness import resolve_data_path

    assert resolve_data_path(str(cfg.benchmark.samples)).resolve() == SAMPLES.resolve()
    assert resolve_data_path(str(cfg.benchmark.deveval_data)).resolve() == TASKS.resolve()
    assert list(cfg.benchmark.uses_backbones) == ["backbone"]


def _validate(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts.validate_locoeval", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def test_validator_reports_broken_items(boltons_root, samples, tmp_path):
    """A copy of one boltons sample with a grounding range moved out of the body and a revision
    turn that no longer states the fact: one FAIL line per broken check, exit status 1."""
    sample = next(s for s in samples if s.repo.get("name") == "boltons")
    obj = json.loads(json.dumps(sample.raw))
    rows = [json.loads(line) for line in VERIFICATION.read_text().splitlines() if json.loads(line)["sample_id"] == sample.id]
    req = obj["requirements"][0]
    row = next(r for r in rows if r["req_id"] == req["req_id"])
    first = req["gt_items"][0]["id"]
    row["items"][first]["lines"] = [[row["body_start"] - 3, row["body_start"] - 2]]
    revised = req["distractors"][0]["revised_by"]
    for step in obj["outline"]:
        if step["kind"] == "revision" and revised in step.get("item_ids", []):
            step["text"] = "Forget what I said earlier about that detail."
    (tmp_path / "s.jsonl").write_text(json.dumps(obj) + "\n")
    (tmp_path / "s.verification.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = _validate("--samples", str(tmp_path / "s.jsonl"), "--deveval-data", str(TASKS), "--static-only",
                     "--figures-only")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert any(f"grounding: {first}: lines" in ln and "outside the reference body" in ln for ln in lines), lines
    assert any(": revised: " in ln for ln in lines), lines
    assert lines[-1].startswith("validate_locoeval: ") and "failing checks" in lines[-1]
    # the unbroken copy passes its static checks
    (tmp_path / "ok.jsonl").write_text(json.dumps(sample.raw) + "\n")
    (tmp_path / "ok.verification.jsonl").write_text("".join(json.dumps(r) + "\n" for r in
                                                             [json.loads(x) for x in VERIFICATION.read_text().splitlines()
                                                              if json.loads(x)["sample_id"] == sample.id]))
    proc = _validate("--samples", str(tmp_path / "ok.jsonl"), "--deveval-data", str(TASKS), "--static-only",
                     "--figures-only")
    assert proc.returncode == 0 and " 0 failing checks" in proc.stdout, proc.stdout + proc.stderr
    # enforced, the same copy fails the validity checks the first set predates
    proc = _validate("--samples", str(tmp_path / "ok.jsonl"), "--deveval-data", str(TASKS), "--static-only")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert any(f": {c}: " in proc.stdout for c in ("literal", "sibling", "edit", "compare-share")), proc.stdout


def test_validator_missing_verification_file(tmp_path):
    (tmp_path / "x.jsonl").write_text(SAMPLES.read_text().splitlines()[0] + "\n")
    proc = _validate("--samples", str(tmp_path / "x.jsonl"), "--static-only")
    assert proc.returncode == 2 and "x.verification.jsonl does not exist" in proc.stderr


@pytest.mark.slow
@pytest.mark.timeout(7200)  # ~430 test runs: 13 min on the loaded 2-core machine
def test_shipped_set_passes_full_validation():
    """Every task: reference passes, blank fails, distractor and counterfactual bodies fail, the
    alternative body passes, grounding / stated / revised hold (runs every task's tests)."""
    proc = _validate("--samples", str(SAMPLES), "--workers", "2", "--quiet", "--figures-only", timeout=7200)
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert " 0 failing checks" in proc.stdout.splitlines()[-1]
