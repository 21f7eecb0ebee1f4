"""The shipped demo samples: real boltons 23.1.1 tasks, grounded items, the required patterns."""

from __future__ import annotations

import json

import pytest

from benchmarks.deveval.tasks import SHIPPED_MANIFEST
from benchmarks.locoeval import builder
from benchmarks.locoeval.loader import load_samples
from benchmarks.locoeval.repo import blanked_copy

DEMO = "package:benchmarks.locoeval/demo/samples.jsonl"


@pytest.fixture(scope="module")
def demo():
    return load_samples(DEMO)


def test_demo_shape(demo):
    assert len(demo) >= 3
    assert sum(len(s.tasks) for s in demo) >= 6
    assert {s.subset for s in demo} == {"single-hop", "multi-hop"}
    for s in demo:
        assert len(s.outline) >= 12 and all(st.scripted for st in s.outline)
        assert any(st.kind == "noise" for st in s.outline)
        assert s.repo == {"provider": "pypi", "name": "boltons", "version": "23.1.1",
                          "sha256": "d2cb2fa83cf2ebe791be1e284183e8a43a1031355156a968f8e0a333ad2448fc"}
    distractors = [d for s in demo for r in s.requirements for d in r.distractors]
    assert distractors  # each is revised later: enforced by the schema checks on load


def test_demo_tasks_are_oracle_usable_and_items_grounded(demo, deveval_data, boltons_root):
    manifest = json.loads(SHIPPED_MANIFEST.read_text())
    entry = next(e for e in manifest if e["pypi_name"] == "boltons")
    rows = {t["namespace"]: t for t in entry["tasks"]}
    deveval = builder.load_deveval(deveval_data)
    for s in demo:
        for req in s.requirements:
            assert rows[req.namespace]["oracle_pass"] and rows[req.namespace]["blank_fails"]
            rec = deveval[req.namespace]
            assert sorted(req.tests) == sorted(rec["tests"])
            task = builder.read_task(boltons_root, rec, s.repo)
            assert task.signature == req.signature and task.completion_path == req.completion_path
            for item in req.gt_items:
                ok, why = builder.verify_item({"text": item.text, "evidence": list(item.evidence)}, task.body)
                assert ok, f"{s.id} {item.id}: {why}"


def test_blanked_copy_hides_reference_bodies(demo, boltons_root, tmp_path):
    """The index the methods retrieve from must not contain the reference solution."""
    s = demo[0]
    targets = [(r.namespace, r.completion_path) for r in s.requirements]
    blanked = blanked_copy(boltons_root, targets, cache_dir=tmp_path, project_path=s.project_path)
    text = (blanked / "boltons" / "mathutils.py").read_text()
    assert "min(max(x, lower), upper)" not in text and "bisect.bisect_left(options, x)" not in text
    assert "def clamp(x, lower=float('-inf'), upper=float('inf')):" in text and "Limit a value to a given range." in text
    assert text.count("raise NotImplementedError") == 2
    assert "bisect.bisect_right(options, x)" in text  # floor (not a target) untouched
    assert (boltons_root / "boltons" / "mathutils.py").read_text().count("min(max(x, lower), upper)") == 1


def test_hide_task_tests_removes_the_judging_tests_from_the_index(demo, boltons_root, tmp_path):
    """benchmark.hide_task_tests: the indexed copy lacks the test files of the sample's tasks."""
    from benchmarks.locoeval.runner import sample_index, task_test_files

    s = demo[0]
    assert task_test_files(s) == ["tests/test_mathutils.py"]
    shown = sample_index(s, tmp_path / "shown", hide_task_tests=False)
    hidden = sample_index(s, tmp_path / "hidden")  # the default hides them
    assert any(p.startswith("tests/test_mathutils.py") for p in shown.files())
    assert not any(p.startswith("tests/test_mathutils.py") for p in hidden.files())
    assert any(p.startswith("tests/") for p in hidden.files())  # other tests stay
    assert (boltons_root / "tests" / "test_mathutils.py").is_file()  # the pristine snapshot keeps them for judging
