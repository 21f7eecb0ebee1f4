"""The records package: the status meanings, validation in one line, manifest migration and the
resolved method parameters the analysis reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.records import SCHEMA_VERSION, RecordError, RunDir, Status, migrate_manifest, sample_class

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "results"


def test_status_meanings():
    final = {s.value for s in Status if s.final}
    assert final == {"ok", "judge_error", "init_failed", "docker_unavailable", "excluded"}
    assert {s.value for s in Status if s.excluded} == {"init_failed", "docker_unavailable", "excluded"}
    assert {s.value for s in Status if s.scored} == {"ok", "error", "interrupted", "pending", "missing", "judge_error"}
    assert {s.value for s in Status if s.unfinished} == {"interrupted", "pending", "missing"}
    assert [sample_class({"status": s}) for s in ("ok", "error", "judge_error", "interrupted", "pending",
                                                  "init_failed")] == ["ok", "errored", "errored", "missing", "missing",
                                                                      "excluded"]
    assert sample_class({"status": "ok", "excluded_reason": "init_failed"}) == "excluded"
    with pytest.raises(ValueError, match="unknown status 'weird'"):
        Status.parse("weird")


def test_v1_manifest_is_migrated_from_its_own_config():
    config = {"benchmark": {"name": "cab_v3", "_target_": "benchmarks.cab.runner.CodeAssistBench"},
              "backbone": {"name": "gpt5_mini", "model": "openai/gpt-5-mini"},
              "user_backbone": {"model": "u"}, "judge_backbone": {"model": "j"},
              "method": {"name": "reconmem", "label": "ReConMem",
                         "budgets_by_backbone": {"gpt5_mini": {"k1": 3, "k2": 5}},
                         "manager": {"_target_": "x.Y", "k1": None, "k2": None, "k31": 1, "backbone": "gpt5_mini"}}}
    m = migrate_manifest({"git_rev": "x"}, config, where="m.json")
    assert m["schema_version"] == SCHEMA_VERSION and m["family"] == "cab" and m["method_label"] == "ReConMem"
    assert m["models"] == {"backbone": "openai/gpt-5-mini", "user": "u", "judge": "j"}
    params = m["method_params"]
    assert (params["k1"], params["k2"], params["k31"]) == (3, 5, 1) and "k32" not in params  # never today's defaults


def test_unknown_family_and_newer_schema_are_refused_in_one_line():
    with pytest.raises(RecordError, match=r"m.json: field .family.: missing.*known family \(locoeval, cab\)"):
        migrate_manifest({}, {"benchmark": {"name": "toy", "_target_": "toy.Toy"}}, where="m.json")
    with pytest.raises(RecordError, match=r"m.json: field 'family'"):
        migrate_manifest({"schema_version": 2, "family": "toy"}, {}, where="m.json")
    with pytest.raises(RecordError, match="schema_version 99 is newer"):
        migrate_manifest({"schema_version": 99}, {}, where="m.json")


def test_analysis_reads_the_recorded_budgets_not_the_config(tmp_path):
    from benchmarks.analysis.run_records import load_run

    dst = tmp_path / "locoeval" / "qwen3_235b" / "reconmem" / "fixture"
    shutil.copytree(FIXTURES / "locoeval" / "qwen3_235b" / "reconmem" / "fixture", dst)
    assert load_run(dst).budgets == {"k1": 2, "k2": 4, "k31": 2, "k32": 2}  # v1: migrated from its config.yaml
    m = json.loads((dst / "manifest.json").read_text())
    m.update(schema_version=SCHEMA_VERSION, method_params={"k1": 1, "k2": 7, "k31": 3, "k32": 3})
    (dst / "manifest.json").write_text(json.dumps(m))
    assert load_run(dst).budgets == {"k1": 1, "k2": 7, "k31": 3, "k32": 3}


def test_the_loop_records_resolved_method_params(tmp_path):
    from omegaconf import OmegaConf

    from benchmarks.harness import build_method
    from benchmarks.runloop import method_params

    cfg = OmegaConf.create({"backbone": {"name": "deepseek_v32"}, "method": OmegaConf.load(
        Path(__file__).resolve().parents[2] / "conf" / "method" / "reconmem.yaml")})
    params = method_params(cfg, build_method(cfg))
    assert (params["k1"], params["k2"], params["k31"], params["k32"]) == (3, 6, 3, 3) and "_target_" not in params


def test_a_benchmark_with_an_unknown_family_is_a_config_error(tmp_path, monkeypatch):
    from omegaconf import OmegaConf

    from benchmarks.errors import ConfigError
    from benchmarks.runloop import build_benchmark

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))
    import toy_benchmark

    monkeypatch.setattr(toy_benchmark.ToyBenchmark, "family", "toy")
    with pytest.raises(ConfigError, match=r"family: unknown family 'toy' \(known: locoeval, cab\)"):
        build_benchmark(OmegaConf.create({"benchmark": {"name": "toy", "_target_": "toy_benchmark.ToyBenchmark"}}))


def test_run_dir_is_the_only_layout(tmp_path):
    run = RunDir.at(tmp_path, "locoeval", "local", "full", "r1")
    run.write_result("a/b", {"status": "ok", "tasks": []})
    assert [r["sample_id"] for r in run.results()] == ["a/b"]
    assert [r.path for r in RunDir.of_method(tmp_path, "locoeval", "full")] == [run.path]
    assert [r.path for r in RunDir.discover(tmp_path)] == [run.path]


def test_old_rows_are_migrated_when_read(tmp_path):
    from benchmarks.records import SampleDir, write_jsonl

    d = tmp_path / "s"
    write_jsonl(d / "conversation.jsonl", [
        {"turn": 1, "phase": "prep", "kind": "chat", "user": "hi", "assistant": "", "assistant_skipped": True},
        {"turn": 2, "role": "maintainer", "content": "answer"}])
    write_jsonl(d / "contexts.jsonl", [{"turn": 0, "recalled": False, "messages": [], "meta": {"no_recall": True}}])
    conv = SampleDir(str(d)).conversation()  # a str path is accepted
    assert [(r["turn"], r["role"], r["content"]) for r in conv] == [(1, "user", "hi"), (1, "assistant", ""),
                                                                     (2, "assistant", "answer")]
    assert conv[1]["skipped"] is True and conv[0]["kind"] == "chat"
    assert SampleDir(d).contexts() == [{"turn": 0, "recalled": False, "context": {"messages": [], "meta": {"no_recall": True}}}]
