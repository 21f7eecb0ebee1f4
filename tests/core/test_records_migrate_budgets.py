"""Version-1 runs kept ReConMem's budgets in ``backbone.budgets``: migration reads them (Table 6)."""

from __future__ import annotations

import shutil
from pathlib import Path

from benchmarks.records import migrate_manifest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "results" / "locoeval" / "qwen3_235b"

# config.yaml as a version-1 run wrote it (resolved Hydra config; the backbone file held the budgets).
V1_CONFIG = """\
benchmark:
  name: locoeval
  _target_: benchmarks.locoeval.task.Benchmark
  samples: tests/fixtures/runs/locoeval_samples.jsonl
backbone:
  name: qwen3_235b
  label: Qwen3-235B
  model: openrouter/qwen/qwen3-235b-a22b-2507
  context_window: 262144
  budgets: {k1: 3, k2: 6, k31: 3, k32: 3}
user_backbone:
  name: gemini_25_flash
  model: gemini/gemini-2.5-flash
method:
  name: %(method)s
  label: %(label)s
  manager:
    _target_: %(target)s
%(manager)srun:
  run_id: fixture
"""


def _v1_config(method: str = "reconmem", label: str = "ReConMem", target: str = "reconmem.method.ReConMem",
               manager: str = "    gae: true\n    grounding_threshold: 0.35\n") -> dict:
    import yaml

    text = V1_CONFIG % {"method": method, "label": label, "target": target, "manager": manager}
    return yaml.safe_load(text)  # as RunDir.config reads it


def test_v1_budgets_on_the_backbone_reach_table_6(tmp_path):
    from benchmarks.analysis.records import load_runs

    run = tmp_path / "locoeval" / "qwen3_235b" / "reconmem" / "fixture"
    shutil.copytree(FIXTURE / "reconmem" / "fixture", run)
    (run / "config.yaml").write_text(V1_CONFIG % {"method": "reconmem", "label": "ReConMem",
                                                  "target": "reconmem.method.ReConMem",
                                                  "manager": "    gae: true\n    grounding_threshold: 0.35\n"},
                                     encoding="utf-8")
    assert "schema_version" not in (run / "manifest.json").read_text()  # a version-1 manifest
    assert load_runs(tmp_path / "locoeval").budgets("locoeval") == {
        ("qwen3_235b", "reconmem"): {"k1": 3, "k2": 6, "k31": 3, "k32": 3}}


def test_layers_over_the_backbone_budgets_and_methods_without_budgets():
    # the manager's k values left as the v1 interpolations (an unresolved copy): the backbone's
    interp = "".join(f"    {k}: ${{backbone.budgets.{k}}}\n" for k in ("k1", "k2", "k31", "k32"))
    raw = _v1_config(manager=interp)
    assert raw["method"]["manager"]["k1"] == "${backbone.budgets.k1}"
    params = migrate_manifest({}, raw, where="m.json")["method_params"]
    assert {k: params[k] for k in ("k1", "k2", "k31", "k32")} == {"k1": 3, "k2": 6, "k31": 3, "k32": 3}

    # an explicit k value of the run (an ablation's calibrated budget) wins over the backbone's
    params = migrate_manifest({}, _v1_config(method="reconmem_wo_gae", label="ReConMem w/o GAE",
                                             manager="    gae: false\n    k2: 8\n    k32: null\n"),
                              where="m.json")["method_params"]
    assert {k: params.get(k) for k in ("k1", "k2", "k31", "k32")} == {"k1": 3, "k2": 8, "k31": 3, "k32": 3}
    assert params["gae"] is False and "_target_" not in params

    # a baseline on the same backbone took no budgets: none are invented for it
    params = migrate_manifest({}, _v1_config(method="full", label="Full History", target="baselines.full.FullHistory",
                                             manager=""), where="m.json")["method_params"]
    assert not {"k1", "k2", "k31", "k32"} & set(params)
