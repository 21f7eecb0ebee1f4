"""End to end: the demo LoCoEval run with executor=docker gives the same verdicts as executor=local.

SCRIPTED backbone replies (``docker_e2e_kit.reply``: reference functions for some tasks, wrong
bodies for the others); the Pass@1 judgement is real (DevEval tests on the boltons snapshot).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

CONF = Path(__file__).resolve().parents[2] / "conf"


def _verdicts(cfg) -> dict:
    from benchmarks import runloop

    runloop.run(cfg)
    root = Path(cfg.run.results_dir)
    out = {}
    for path in sorted(root.rglob("samples/*/result.json")):
        rec = json.loads(path.read_text())
        for task in rec.get("tasks", []):
            out[(path.parent.name, task.get("namespace") or task.get("req_id"))] = (task.get("outcome"),
                                                                                    task.get("passed"))
    return out


def _cfg(tmp_path: Path, executor: str, reply: str = "reply"):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=[
            "benchmark=demo", "method=full", "backbone=local", f"executor={executor}",
            f"backbone.model=scripted/docker_e2e_kit:{reply}", f"run.results_dir={tmp_path / executor}",
            "cache.llm=false", "benchmark.progress=false", f"run.run_id=agree_{executor}",
        ])


@pytest.mark.slow
@pytest.mark.docker
def test_demo_run_verdicts_agree_local_vs_docker(tmp_path, docker_client):
    local = _verdicts(_cfg(tmp_path, "local"))
    docker = _verdicts(_cfg(tmp_path, "docker"))
    assert local and set(local) == set(docker)
    assert local == docker, {k: (local[k], docker[k]) for k in local if local[k] != docker[k]}
    passed = [v for v in local.values() if v[1]]
    assert passed and len(passed) < len(local), "both verdicts occur (the comparison can fail)"


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_demo_run_survives_completions_that_kill_their_parent(tmp_path, executor, request):
    """Before the confinement, the local body's SIGKILL killed the runner (exit 137, no record)."""
    from benchmarks.sandbox.confine import choose

    if executor == "docker":
        request.getfixturevalue("docker_client")
    elif choose("auto").kind == "none":
        pytest.skip("no OS confinement available here (install bubblewrap: make sandbox-deps)")
    verdicts = _verdicts(_cfg(tmp_path, executor, reply="kill_parent_reply"))
    assert len(verdicts) == 6, verdicts                       # every task of the 3 demo samples recorded
    assert all(passed is False and outcome in ("fail", "error") for outcome, passed in verdicts.values()), verdicts
