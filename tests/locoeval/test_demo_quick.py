"""The demo's smaller sample files are the demo samples cut down, nothing else: the quick ones (two
samples, both subsets, only their fact-bearing turns, renumbered) and `make demo`'s one task (the
first quick sample's first requirement); `make demo-full` keeps experiment=demo."""

from __future__ import annotations

import json
from importlib import resources

from hydra import compose, initialize_config_dir

from benchmarks.locoeval.loader import load_samples
from scripts import demo
from scripts.run import CONFIG_DIR

KEPT_KINDS = {"requirement", "distractor", "info", "revision"}


def _rows(name: str) -> list[dict]:
    text = resources.files("benchmarks.locoeval").joinpath("demo", name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_quick_samples_are_the_demo_samples_without_their_chat_noise_and_recap_turns():
    full = {row["id"]: row for row in _rows("samples.jsonl")}
    quick = _rows("samples_quick.jsonl")
    assert {full[row["id"]]["subset"] for row in quick} == {"single-hop", "multi-hop"}
    assert len(quick) < len(full)
    for row in quick:
        source = full[row["id"]]
        expected = [dict(step, turn=i) for i, step in
                    enumerate((s for s in source["outline"] if s["kind"] in KEPT_KINDS), start=1)]
        assert row["outline"] == expected
        assert {k: v for k, v in row.items() if k != "outline"} == {k: v for k, v in source.items() if k != "outline"}
    loaded = load_samples("package:benchmarks.locoeval/demo/samples_quick.jsonl")  # the schema checks pass
    assert sum(len(s.tasks) for s in loaded) == sum(len(full[r["id"]]["tasks"]) for r in quick)


def test_one_task_sample_is_the_first_quick_sample_cut_to_its_first_requirement():
    source = _rows("samples_quick.jsonl")[0]
    (row,) = _rows("samples_one_task.jsonl")
    req = source["requirements"][0]["req_id"]
    assert row["id"] == "boltons-mathutils-clamp-single" and row["subset"] == source["subset"] == "single-hop"
    assert row["requirements"] == [r for r in source["requirements"] if r["req_id"] == req]
    assert row["tasks"] == [t for t in source["tasks"] if t["req_id"] == req]
    expected = [dict(step, turn=i) for i, step in
                enumerate((s for s in source["outline"] if s.get("req_id") == req), start=1)]
    assert row["outline"] == expected
    assert [s["kind"] for s in row["outline"]] == ["requirement", "distractor", "info", "revision"]
    assert {k: v for k, v in row.items() if k not in ("id", "requirements", "tasks", "outline")} == \
        {k: v for k, v in source.items() if k not in ("id", "requirements", "tasks", "outline")}
    (loaded,) = load_samples("package:benchmarks.locoeval/demo/samples_one_task.jsonl")  # the schema checks pass
    assert len(loaded.tasks) == 1


def test_make_demo_runs_one_task_quick_and_full_the_larger_experiments():
    assert demo.DEFAULT_EXPERIMENT == "demo_one_task"
    assert demo.EXPERIMENTS == {"--quick": "demo_quick", "--full": "demo"}
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        one = compose("config", overrides=["experiment=demo_one_task", "method=full"])
        quick = compose("config", overrides=["experiment=demo_quick", "method=full"])
        whole = compose("config", overrides=["experiment=demo", "method=full"])
    assert one.benchmark.name == "demo_one_task" and one.benchmark.samples.endswith("samples_one_task.jsonl")
    assert one.embedder.backend == quick.embedder.backend and one.method.budgets_by_backbone == quick.method.budgets_by_backbone
    assert one.benchmark.repo_adaptation_k == 2


def test_quick_and_whole_demo_share_budgets_model_and_adaptation():
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        quick = compose("config", overrides=["experiment=demo_quick", "method=full"])
        whole = compose("config", overrides=["experiment=demo", "method=full"])
    assert quick.benchmark.name == "demo_quick" and quick.benchmark.samples.endswith("samples_quick.jsonl")
    assert whole.benchmark.name == "demo" and whole.benchmark.samples.endswith("/samples.jsonl")
    assert quick.method.budgets_by_backbone == whole.method.budgets_by_backbone
    assert quick.benchmark.repo_adaptation_k == whole.benchmark.repo_adaptation_k == 2
    assert quick.backbone.name == whole.backbone.name == "local"
    assert quick.embedder.backend == whole.embedder.backend == "onnx"  # the default backend
