"""The sample builder on one real DevEval task (boltons 23.1.1 clamp) with SCRIPTED LLM replies."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from benchmarks.deveval.tasks import SHIPPED_MANIFEST
from benchmarks.locoeval import builder
from benchmarks.locoeval.schema import parse_sample
from reconmem.platform.testing import ScriptedLLM

NS = "boltons.mathutils.clamp"


@pytest.fixture(scope="module")
def clamp_task(deveval_data, boltons_root):
    deveval = builder.load_deveval(deveval_data)
    manifest = json.loads(SHIPPED_MANIFEST.read_text())
    entry = next(e for e in manifest if e["pypi_name"] == "boltons")
    assert NS in builder.usable_namespaces(entry)
    return builder.read_task(boltons_root, deveval[NS], builder.repo_spec_for(entry))


def scripted_builder(messages, purpose):
    """Scripted builder replies: items (one of them ungrounded) and one mutation."""
    assert purpose == "builder"
    prompt = messages[-1]["content"]
    if "information items" in prompt:
        return {"items": [
            {"text": "If upper < lower, raise ValueError('expected upper bound (%r) >= lower bound (%r)' % (upper, lower)).",
             "evidence": ["upper < lower", "expected upper bound (%r) >= lower bound (%r)"]},
            {"text": "Return min(max(x, lower), upper).", "evidence": ["min(max(x, lower), upper)"]},
            # only in the docstring, not in the code: must be rejected
            {"text": "It behaves like numpy's clip.", "evidence": ["numpy's clip"]},
            # evidence present but the text does not mention it: rejected
            {"text": "Be careful with the bounds.", "evidence": ["upper < lower"]},
        ]}
    if "WRONG" in prompt:
        if "ValueError" in prompt:
            return json.dumps({"text": "If upper < lower, silently swap the two bounds."})
        return json.dumps({"text": "Return max(min(x, upper), lower) + 1."})
    raise AssertionError(f"unexpected builder prompt: {prompt[:200]}")


def test_reads_reference_body_without_docstring(clamp_task):
    assert clamp_task.signature == "def clamp(x, lower=float('-inf'), upper=float('inf')):"
    assert "min(max(x, lower), upper)" in clamp_task.body
    assert "numpy" not in clamp_task.body and clamp_task.completion_path == "boltons/mathutils.py"


def test_verify_item_rules(clamp_task):
    body = clamp_task.body
    assert builder.verify_item({"text": "return min(max(x, lower), upper)", "evidence": ["min(max(x,lower),upper)"]}, body)[0]
    assert not builder.verify_item({"text": "uses numpy", "evidence": ["numpy"]}, body)[0]
    assert not builder.verify_item({"text": "return it", "evidence": ["return"]}, body)[0]
    assert not builder.verify_item({"text": "no evidence"}, body)[0]
    item = {"text": "If upper < lower raise ValueError", "evidence": ["upper < lower", "ValueError"]}
    assert builder.verify_distractor("If upper < lower swap them", item)[0]
    assert not builder.verify_distractor("If upper < lower raise ValueError", item)[0]


def test_builds_grounded_samples_with_revised_distractor(clamp_task):
    llm = ScriptedLLM(scripted_builder)
    topics = ["boltons.strutils.slugify", "boltons.iterutils.chunked", "boltons.fileutils.mkdir_p"]
    shared = builder.build_project_samples(llm, [clamp_task], seed=3, parallel_topics=topics, allow_shared_tasks=True)
    assert [s["subset"] for s in shared] == ["single-hop", "multi-hop"]
    # default: independent subsets -- the single task goes into one sample only
    alone = builder.build_project_samples(ScriptedLLM(scripted_builder), [clamp_task], seed=3, parallel_topics=topics)
    assert [s["subset"] for s in alone] == ["single-hop"] and alone[0] == shared[0]
    assert alone[0]["meta"]["task_namespaces"] == [NS]
    samples = shared
    for obj in samples:
        sample = parse_sample(obj)  # schema + cross-field checks
        req = sample.requirements[0]
        assert req.namespace == NS and req.signature == clamp_task.signature
        assert [i.id for i in req.gt_items] == ["R1.I1", "R1.I2"]
        for item in req.gt_items:  # grounded: every evidence string is in the reference body
            assert builder.verify_item({"text": item.text, "evidence": list(item.evidence)}, clamp_task.body)[0]
        rejected = obj["meta"]["builder"]["rejected_items"]["R1"]
        assert {r["reason"].split(" ")[0] for r in rejected} == {"evidence", "the"}
        assert len(req.distractors) == 1
        d = req.distractors[0]
        d_turn = next(s.turn for s in sample.outline if d.id in s.item_ids)
        rev = [s.turn for s in sample.outline if s.kind == "revision" and d.revised_by in s.item_ids]
        assert rev and min(rev) > d_turn
        assert 30 <= len(sample.outline) <= 69
        kinds = {s.kind for s in sample.outline}
        assert {"requirement", "info", "distractor", "revision", "retrospective", "noise"} <= kinds
        assert all(s.text is None for s in sample.outline)  # the mock user writes the queries
    # builder calls: 1 extraction + 1 mutation, all tagged builder
    assert [c["purpose"] for c in llm.calls] == ["builder", "builder"]
    # deterministic given the seed (and the same replies)
    again = builder.build_project_samples(ScriptedLLM(scripted_builder), [clamp_task], seed=3, parallel_topics=topics,
                                          allow_shared_tasks=True)
    assert again == samples


def test_filter_and_grouping(clamp_task):
    samples = builder.build_project_samples(ScriptedLLM(scripted_builder), [clamp_task], solves=lambda t: True)
    assert samples == []
    groups = builder.group_tasks(list(range(40)), random.Random(0))
    assert all(1 <= len(g) <= 4 for g in groups) and sorted(x for g in groups for x in g) == list(range(40))


def _fake_req(rid, n_items, n_dis):
    t = builder.TaskSource(namespace=f"pkg.mod.f{rid}", project_path="P/p", completion_path="pkg/mod.py",
                           signature=f"def f{rid}():", body="return 1", tests=["t"], requirement={}, repo={"provider": "local", "path": "/x"})
    items = [{"id": f"{rid}.I{i}", "text": f"item {i}", "evidence": ["1"]} for i in range(1, n_items + 1)]
    dis = [{"id": f"{rid}.D{i}", "text": f"wrong {i}", "revised_by": f"{rid}.I{i}"} for i in range(1, n_dis + 1)]
    return rid, builder.BuiltRequirement(task=t, items=items, distractors=dis)


@pytest.mark.parametrize("subset", ["single-hop", "multi-hop"])
@pytest.mark.parametrize("seed", range(6))
def test_outline_lengths_and_order(subset, seed):
    reqs = [_fake_req(f"R{i}", 5, 2) for i in range(1, 5)]  # 4 tasks: the largest groups
    outline = builder.build_outline(reqs, subset, random.Random(seed), parallel_topics=["a.b", "c.d"])
    assert 30 <= len(outline) <= 69 and [s["turn"] for s in outline] == list(range(1, len(outline) + 1))
    for rid, b in reqs:
        intro = next(s["turn"] for s in outline if s["kind"] == "requirement" and s["req_id"] == rid)
        info_turns = [s["turn"] for s in outline if s.get("req_id") == rid and s["kind"] in ("info", "distractor")]
        assert min(info_turns) > intro
        for d in b.distractors:
            d_turn = next(s["turn"] for s in outline if s.get("item_ids") == [d["id"]])
            assert any(s["kind"] == "revision" and s["item_ids"] == [d["revised_by"]] and s["turn"] > d_turn for s in outline)
        if subset == "single-hop":  # a task's steps are contiguous
            own = [s["turn"] for s in outline if s.get("req_id") == rid]
            assert own == list(range(own[0], own[-1] + 1))


def test_cli_builds_valid_samples(deveval_data, boltons_root, tmp_path):
    """``python -m scripts.build_locoeval`` end to end with a SCRIPTED builder backbone (no filter)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from benchmarks.locoeval.loader import load_samples

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "built.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(root)])}
    cmd = [sys.executable, "-m", "scripts.build_locoeval", "--deveval-data", str(deveval_data),
           "--sources-manifest", str(SHIPPED_MANIFEST), "--projects", "boltons",
           "--max-tasks", "6", "--no-filter", "--out", str(out), "backbone.model=scripted/scripted_backbone:builder_reply"]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    samples = load_samples(out)
    assert samples and {s.subset for s in samples} == {"single-hop", "multi-hop"}
    used = [r.namespace for s in samples for r in s.requirements]
    assert len(used) == len(set(used)) == 6  # every task in exactly one sample
    assert all(30 <= len(s.outline) <= 69 and 1 <= len(s.requirements) <= 4 for s in samples)
    again = tmp_path / "again.jsonl"
    proc = subprocess.run(cmd[:-2] + [str(again), cmd[-1]], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and again.read_text() == out.read_text()  # deterministic


def test_retrieval_only_filter_prompt_and_verdict(clamp_task):
    """The filter asks with repository code only (no conversation) and returns the Pass@1 verdict."""

    class FakeIndex:
        def search(self, query, embedder, k):
            assert "clamp" in query and k == 2
            return [("boltons/mathutils.py/floor", 0.9), ("boltons/mathutils.py/ceil", 0.8)]

        def display_source(self, path):
            return f"def {path.rsplit('/', 1)[-1]}(x, options=None):\n    raise NotImplementedError"

    llm = ScriptedLLM(["```python\ndef clamp(x, lower=float('-inf'), upper=float('inf')):\n    return x\n```"] * 2)
    seen = []

    def evaluate(ns, text):
        seen.append((ns, text))
        return {"passed": len(seen) == 2}

    kw = dict(llm=llm, index=FakeIndex(), embedder=None, evaluate=evaluate, k=2)
    assert builder.retrieval_only_solves(clamp_task, **kw) is False
    assert builder.retrieval_only_solves(clamp_task, **kw) is True
    prompt = llm.calls[0]["messages"][-1]["content"]
    assert "# boltons/mathutils.py/floor" in prompt and clamp_task.signature in prompt
    assert llm.calls[0]["purpose"] == "builder" and seen[0][0] == NS


def _build_demo_repository(tmp_path, *extra):
    """``scripts.build_locoeval`` over the demo repository (boltons 23.1.1) and the demo's shipped
    DevEval records, with a SCRIPTED builder backbone and no Pass@1 filter."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / ("built" + "".join(e.strip("-") for e in extra) + ".jsonl")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(root)])}
    cmd = [sys.executable, "-m", "scripts.build_locoeval",
           "--deveval-data", str(root / "benchmarks/locoeval/demo/deveval_tasks.jsonl"),
           "--sources-manifest", str(root / "benchmarks/deveval/data/pypi_sources.json"), "--projects", "boltons",
           "--no-filter", "--seed", "1", "--out", str(out), *extra, "backbone.model=scripted/scripted_backbone:builder_reply"]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_demo_repository_build_has_no_task_in_two_samples(boltons_root, tmp_path):
    """Issue 13.4: single-hop and multi-hop samples come from disjoint task groups."""
    import warnings

    from benchmarks.locoeval.loader import SharedTaskWarning, load_samples

    out = _build_demo_repository(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SharedTaskWarning)   # a shared task would raise here
        samples = load_samples(out)
    demo_tasks = {json.loads(line)["namespace"] for line in
                  (Path(__file__).resolve().parents[2] / "benchmarks/locoeval/demo/deveval_tasks.jsonl").read_text().splitlines()}
    used = [r.namespace for s in samples for r in s.requirements]
    assert sorted(used) == sorted(demo_tasks)          # all 6 demo tasks, each exactly once
    assert {s.subset for s in samples} == {"single-hop", "multi-hop"}
    for s in samples:                                  # every sample records its tasks
        assert s.meta["task_namespaces"] == [r.namespace for r in s.requirements]

    # --allow-shared-tasks: both subsets from the same groups, and the loader warns
    shared_out = _build_demo_repository(tmp_path, "--allow-shared-tasks")
    with pytest.warns(SharedTaskWarning, match="scored in 2 samples"):
        both = load_samples(shared_out)
    assert len(both) == 2 * len({tuple(s.meta["task_namespaces"]) for s in both})

