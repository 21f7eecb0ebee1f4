"""Coverage judge (scripted LLM replies via reconmem.platform.testing.ScriptedLLM), views and aggregation."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from benchmarks.analysis import coverage as cov
from benchmarks.locoeval import coverage_judge as cj
from benchmarks.records import RunDir
from reconmem.platform.testing import ScriptedLLM

GT = [{"id": "R1.I0", "text": "timeout is 30 seconds"}, {"id": "R1.I1", "text": "retry three times"}]


def ctx(items):
    return {"query": "q", "messages": [], "items": items}


CONTEXT = ctx([
    {"kind": "memory", "id": "m1", "text": "The timeout is 30 seconds.", "source": "original_query",
     "meta": {"stage": "initial", "routes": ["semantic"]}},
    {"kind": "code", "id": "pkg/a.py/f", "text": "def f(): retry(3)", "source": "original_query",  # ungrounded code side
     "meta": {"stage": "initial", "routes": ["structural_graph"]}},
    {"kind": "code", "id": "pkg/a.py", "text": "# a.py summary", "source": "expansion",
     "meta": {"stage": "inter_graph", "routes": ["r_dual"], "via": "m1"}},
    {"kind": "memory", "id": "m2", "text": "The timeout is 30 seconds.", "source": "expansion",
     "meta": {"stage": "inter_graph", "routes": ["r_dual_reverse"], "via": "pkg/a.py/f"}},
    {"kind": "code", "id": "pkg/b.py/g", "text": "def g(): pass", "source": "repo_wide",
     "meta": {"routes": ["repo_wide"]}},
    {"kind": "history_turn", "id": "t1", "text": "user: hi", "source": "recent", "meta": {}},
    {"kind": "memory", "id": "m3", "text": "declared", "source": "memory", "meta": {"branches": ["original_query", "dual_query"]}},
])


def test_branches_follow_routes_and_via():
    branches = cj.item_branch_map(CONTEXT["items"])
    assert branches == [{"original_query"}, {"dual_query"}, {"original_query"}, {"dual_query"}, {"dual_query"}, set(),
                        {"original_query", "dual_query"}]


def test_views_dedupe_within_modality_only_in_combined():
    views = cj.context_views(CONTEXT)
    assert [s["eid"] for s in views["original"]] == ["S1", "C1", "S2"]
    assert [s["text"] for s in views["dual"]] == ["def f(): retry(3)", "The timeout is 30 seconds.", "def g(): pass", "declared"]
    combined = views["combined"]
    assert [s["text"] for s in combined].count("The timeout is 30 seconds.") == 1  # exact duplicate removed
    assert len(combined) == 5 and "user: hi" not in {s["text"] for s in combined}


def test_validate_judgement_rules():
    ok = cj.validate_judgement({"items": [{"id": "G1", "supported": True, "evidence": ["S1"]},
                                           {"id": "G2", "supported": False, "evidence": []}]}, GT, ["S1", "C1"])
    assert ok.complete and ok.supported == ["R1.I0"]
    bad_ids = cj.validate_judgement({"items": [{"id": "G1", "supported": True, "evidence": ["S1", "S9"]},
                                                {"id": "G2", "supported": True, "evidence": []}]}, GT, ["S1"])
    assert bad_ids.complete and bad_ids.supported == []  # invalid / missing evidence fails the item
    assert "invalid evidence ids ['S9']" in bad_ids.items[0].problem
    assert bad_ids.items[1].problem == "supported without evidence ids"
    missing = cj.validate_judgement({"items": [{"id": "G1", "supported": True, "evidence": ["S1"]}]}, GT, ["S1"])
    assert not missing.complete and "missing judgments for ['G2']" in missing.problems
    dup = cj.validate_judgement({"items": [{"id": "G1", "supported": False}, {"id": "G1", "supported": True, "evidence": ["S1"]},
                                            {"id": "G2", "supported": False}]}, GT, ["S1"])
    assert not dup.complete
    assert not cj.validate_judgement(None, GT, ["S1"]).complete
    assert not cj.validate_judgement({"items": [{"id": "G1", "supported": "maybe"}, {"id": "G2", "supported": False}]},
                                      GT, ["S1"]).complete


def test_judge_with_scripted_replies_records_purpose_and_checks_evidence():
    llm = ScriptedLLM([{"items": [{"id": "G1", "supported": True, "evidence": ["S1"]},
                                  {"id": "G2", "supported": True, "evidence": ["C7"]}]}])
    judge = cj.CoverageJudge(llm)
    res = judge.judge_view("original", GT, cj.context_views(CONTEXT)["original"])
    assert res.supported == ["R1.I0"] and res.complete and res.attempts == 1
    assert llm.calls[0]["purpose"] == "coverage_judge"
    prompt = llm.calls[0]["messages"][1]["content"]
    assert "G1: timeout is 30 seconds" in prompt and "S1:\nThe timeout is 30 seconds." in prompt
    assert "R1.I0" not in prompt  # GT ids are renamed so they cannot collide with evidence ids
    assert [e["purpose"] for e in llm.ledger.events] == ["coverage_judge"]


def test_incomplete_answer_is_retried_then_marked():
    llm = ScriptedLLM([{"items": [{"id": "G1", "supported": True, "evidence": ["S1"]}]},
                       {"items": [{"id": "G1", "supported": True, "evidence": ["S1"]}, {"id": "G2", "supported": False}]}])
    res = cj.CoverageJudge(llm).judge_view("original", GT, [{"eid": "S1", "text": "x"}])
    assert res.complete and res.attempts == 2
    assert "rejected: missing judgments for ['G2']" in llm.calls[1]["messages"][-1]["content"]
    stubborn = ScriptedLLM([{"items": []}, "not json at all"])
    res = cj.CoverageJudge(stubborn).judge_view("dual", GT, [{"eid": "S1", "text": "x"}])
    assert not res.complete and res.supported == [] and res.attempts == 2


def test_empty_view_needs_no_call_and_results_are_cached(tmp_path):
    llm = ScriptedLLM([])
    res = cj.CoverageJudge(llm).judge_view("dual", GT, [])
    assert res.complete and res.supported == [] and llm.calls == []
    cache = tmp_path / "cache.sqlite"
    first = ScriptedLLM([{"items": [{"id": "G1", "supported": True, "evidence": ["S1"]}, {"id": "G2", "supported": False}]}],
                        cache_path=cache)
    a = cj.CoverageJudge(first).judge_view("original", GT, [{"eid": "S1", "text": "timeout 30"}])
    again = ScriptedLLM([], cache_path=cache)  # an empty script: any transport call would fail
    b = cj.CoverageJudge(again).judge_view("original", GT, [{"eid": "S1", "text": "timeout 30"}])
    assert a.supported == b.supported == ["R1.I0"]
    assert again.calls == [] and again.ledger.events[0]["cached"] is True


def test_judge_sample_on_a_fixture_record(tmp_path, results_dir):
    src = results_dir / "locoeval" / "qwen3_235b" / "reconmem" / "fixture"
    shutil.copytree(src, tmp_path / "run")
    sample = RunDir(tmp_path / "run").sample("s1")
    spec = next(json.loads(line) for line in (results_dir.parent / "locoeval_samples.jsonl").read_text().splitlines()
                if json.loads(line)["id"] == "s1")
    from scripted_judge import reply

    llm = ScriptedLLM(reply)
    record = cj.judge_sample(cj.CoverageJudge(llm), sample, spec)
    assert [t["req_id"] for t in record["task_runs"]] == ["r1", "r2"]
    assert len(llm.calls) == 2 * 3  # one call per view per task-run
    first = record["task_runs"][0]
    assert first["gt_item_ids"] == ["r1.I0", "r1.I1", "r1.I2", "r1.I3"]
    assert all(v["complete"] for v in first["views"].values())


def test_task_run_split_and_fixture_aggregation(runset, results_dir):
    entry = {"gt_item_ids": ["a", "b", "c", "d"], "views": {
        "original": {"supported": ["a", "b"], "complete": True}, "dual": {"supported": ["b", "c"], "complete": True},
        "combined": {"supported": ["a", "b", "c"], "complete": True}}}
    v = cov.task_run_coverage(entry)
    assert (v["cov_original"], v["cov_dual"], v["cov_combined"]) == (0.5, 0.5, 0.75)
    assert (v["only_original"], v["both"], v["only_dual"], v["neither"]) == (0.25, 0.25, 0.25, 0.25)

    frame = cov.coverage_frame(runset.merged_samples("locoeval"))
    assert len(frame) == 13 and (~frame.complete).sum() == 1
    # Independent computation straight from the files: macro-average over complete task-runs.
    per_run = []
    for path in sorted(results_dir.glob("locoeval/*/reconmem/fixture/samples/*/coverage.json")):
        for t in json.loads(path.read_text())["task_runs"]:
            if all(t["views"][x]["complete"] for x in ("original", "dual", "combined")):
                n = len(t["gt_item_ids"])
                o, d = set(t["views"]["original"]["supported"]), set(t["views"]["dual"]["supported"])
                per_run.append([len(o) / n, len(d) / n, len(t["views"]["combined"]["supported"]) / n, len(d - o) / n])
    expected = np.mean(per_run, axis=0) * 100
    summary = cov.coverage_summary(frame, n_resamples=300).set_index("metric")
    assert summary.loc["cov_original", "estimate"] == pytest.approx(expected[0])
    assert summary.loc["cov_dual", "estimate"] == pytest.approx(expected[1])
    assert summary.loc["cov_combined", "estimate"] == pytest.approx(expected[2])
    assert summary.loc["only_dual", "estimate"] == pytest.approx(expected[3])
    assert summary.loc["combined_minus_original", "estimate"] == pytest.approx(expected[2] - expected[0])
    shares = summary.loc[list(cov.CATEGORIES), "estimate"].sum()
    assert shares == pytest.approx(100)
    assert summary.loc["cov_original", "n_task_runs"] == 12 and summary.loc["cov_original", "n_clusters"] == 3
    assert (summary["low"] <= summary["estimate"] + 1e-9).all() and (summary["estimate"] <= summary["high"] + 1e-9).all()


# ---------------------------------------------------------------------------- independent views
VIEWS_CONTEXT = ctx([
    {"kind": "memory", "id": "m1", "text": "The timeout is 30 seconds.", "source": "original_query",
     "meta": {"stage": "initial", "routes": ["semantic"]}},
    {"kind": "code", "id": "pkg/a.py/f", "text": "def f(): retry(3)", "source": "dual_query",
     "meta": {"stage": "initial", "routes": ["structural_graph"]}},
])
VIEWS_CONTEXT["meta"] = {"views": {
    "original": [{"kind": "memory", "id": "m1", "stage": "initial"},
                 {"kind": "code", "id": "pkg/a.py/f", "stage": "inter_graph", "via": "m1"}],
    "dual": [{"kind": "code", "id": "pkg/a.py/f", "stage": "initial"}]}}


def test_an_item_reachable_from_both_branches_is_in_both():
    views = cj.context_views(VIEWS_CONTEXT)
    assert [s["item_id"] for s in views["original"]] == ["m1", "pkg/a.py/f"]
    assert [s["item_id"] for s in views["dual"]] == ["pkg/a.py/f"]
    assert [s["item_id"] for s in views["combined"]] == ["m1", "pkg/a.py/f"]
    # the legacy first-route split gives f to the dual branch only
    legacy = cj.context_views({k: v for k, v in VIEWS_CONTEXT.items() if k != "meta"})
    assert [s["item_id"] for s in legacy["original"]] == ["m1"]
    gt = [{"id": "retry", "text": "retry three times"}]
    judge = cj.CoverageJudge(ScriptedLLM(lambda messages, purpose: {"items": [
        {"id": "G1", "supported": "retry(3)" in messages[-1]["content"],
         "evidence": [e for e in ("C1",) if "retry(3)" in messages[-1]["content"]]}]}))
    entry = {"gt_item_ids": ["retry"], "views": {v: j.to_dict() for v, j in judge.judge_task_run(gt, VIEWS_CONTEXT).items()}}
    split = cov.task_run_coverage(entry)
    assert (split["both"], split["only_original"], split["only_dual"]) == (1.0, 0.0, 0.0)
    assert cj.view_source(VIEWS_CONTEXT) == "independent"


def test_branch_map_of_a_context_uses_the_views():
    assert cj.context_branch_map(VIEWS_CONTEXT) == [{"original_query"}, {"original_query", "dual_query"}]
    assert cj.context_branch_map({"items": VIEWS_CONTEXT["items"]}) == [{"original_query"}, {"dual_query"}]


def test_items_trimmed_by_the_window_guard_leave_every_view():
    trimmed = json.loads(json.dumps(VIEWS_CONTEXT))
    trimmed["items"] = trimmed["items"][:1]
    trimmed["meta"]["trimmed_items"] = ["pkg/a.py/f"]
    views = cj.context_views(trimmed)
    assert [s["item_id"] for s in views["original"]] == ["m1"] and views["dual"] == []
    del trimmed["meta"]["trimmed_items"]
    with pytest.raises(ValueError, match="not an item of the context"):
        cj.context_views(trimmed)


def test_judge_prompt_versions():
    v2 = cj.CoverageJudge(ScriptedLLM([])).system
    v1 = cj.CoverageJudge(ScriptedLLM([]), prompt_version="coverage-v1").system
    assert v2.count("\nExample ") == 8 and v1.count("\nExample ") == 2  # the paper's judge prompt has eight
    assert v2.startswith(v1.split("Example A")[0])  # same instructions, more examples
    from importlib import resources

    assert v1 == resources.files("benchmarks.locoeval").joinpath("prompts/coverage_judge_system.txt").read_text()
    with pytest.raises(ValueError, match="unknown prompt version"):
        cj.CoverageJudge(ScriptedLLM([]), prompt_version="coverage-v9")


def test_coverage_cli_refuses_a_local_judge(capsys):
    from scripts.coverage import main

    assert main(["--runs", "tests/fixtures/runs/results"]) == 2  # default judge_backbone: the local model
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "allow_local_eval_models=true" in err[0] and "gemini_25_flash" in err[0]


def test_coverage_cli_selects_the_judge_backbone_by_name(capsys, monkeypatch):
    from scripts.coverage import main

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    assert main(["--runs", "tests/fixtures/runs/results", "--judge-backbone", "gemini_25_flash"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "GEMINI_API_KEY" in err[0]
