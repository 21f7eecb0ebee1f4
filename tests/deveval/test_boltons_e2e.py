"""End to end on real DevEval tasks of boltons 23.1.1 (PyPI sdist): reference passes, blank fails,
and scripted model replies (named as such) are spliced and judged by the task's own tests."""

from __future__ import annotations

import pytest

from benchmarks.deveval.evaluate import evaluate_completion, oracle_task, reference_for
from benchmarks.deveval.providers import get_snapshot
from benchmarks.deveval.tasks import env_spec_for, load_manifest, load_tasks
from benchmarks.sandbox import build_executor

SPEC = {"provider": "pypi", "name": "boltons", "version": "23.1.1",
        "sha256": "d2cb2fa83cf2ebe791be1e284183e8a43a1031355156a968f8e0a333ad2448fc"}
# by position and by name (lines shifted in the sdist), functions and methods
TASKS = ["boltons.listutils.SplayList.shift", "boltons.funcutils.format_invocation",
         "boltons.strutils.is_uuid", "boltons.cacheutils.ThresholdCounter.get"]


@pytest.fixture(scope="module")
def data_path(deveval_data):
    return deveval_data


@pytest.fixture(scope="module")
def tasks(data_path):
    return {t.namespace: t for t in load_tasks(data_path)}


@pytest.fixture(scope="module")
def executor():
    return build_executor({"name": "local", "timeout_s": 60})


@pytest.mark.parametrize("namespace", TASKS)
def test_oracle_reference_passes_blank_fails(namespace, tasks, executor):
    entry = load_manifest().project("Utilities/boltons")
    root = get_snapshot(SPEC)
    res = oracle_task(tasks[namespace], root, env=env_spec_for(entry), executor=executor, hint=entry.task(namespace))
    assert res["ref"]["outcome"] == "pass", res["ref"]
    assert res["blank"]["outcome"] in ("fail", "error") and res["usable"]


def test_scripted_replies_are_judged(tasks, executor, data_path):
    ns = "boltons.strutils.is_uuid"
    ref = reference_for(ns, SPEC, task=tasks[ns])
    assert ref["signature"].startswith("def is_uuid(")
    # scripted reply 1: the reference function inside prose and a fence -> pass
    reply = f"Here is the implementation.\n\n```python\n{ref['function']}\n```\n\nIt validates the UUID."
    out = evaluate_completion(ns, reply, repo_spec=SPEC, executor=executor, data_path=data_path)
    assert out["outcome"] == "pass" and out["passed"] is True, out["log"][-2000:]
    assert out["completion"].strip() and out["seconds"] > 0
    # scripted reply 2: a wrong body -> fail by the tests
    wrong = "```python\ndef is_uuid(obj, version=4):\n    return True\n```"
    out = evaluate_completion(ns, wrong, repo_spec=SPEC, executor=executor, data_path=data_path)
    assert out["outcome"] == "fail" and not out["passed"]
    # scripted reply 3: `pass` only -> failure without running
    out = evaluate_completion(ns, "def is_uuid(obj, version=4):\n    pass", repo_spec=SPEC, executor=executor,
                              data_path=data_path)
    assert out["outcome"] == "fail" and "trivial" in out["log"]
    # scripted reply 4: a syntax error -> error without running
    out = evaluate_completion(ns, "```python\nreturn (\n```", repo_spec=SPEC, executor=executor, data_path=data_path)
    assert out["outcome"] in ("error", "fail") and not out["passed"]
