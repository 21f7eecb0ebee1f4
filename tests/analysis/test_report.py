"""`build_report` / `python -m scripts.report` and `python -m scripts.coverage` on fixture records."""

from __future__ import annotations

import json
import shutil

from analysis_helpers import FIXTURES, hash_embed

from benchmarks.analysis.report import build_report

EXPECTED_LOCOEVAL = {
    "table1.md", "table1.tex", "table1.csv", "table3.md", "table3.tex", "table3.csv", "table4.md", "table4.tex",
    "table4.csv", "table6.md", "table6.tex", "table6.csv", "fig5_per_turn_tokens.csv", "fig5_per_turn_tokens.png",
    "fig5_per_turn_tokens.pdf", "coverage.md", "coverage.tex", "coverage.csv", "coverage_task_runs.csv",
    "fig6_coverage.png", "fig6_coverage.pdf", "fig7_tsne.csv", "fig7_tsne.png", "fig7_tsne.pdf", "fig8_by_k.csv",
    "fig8_by_l.csv", "fig8_pass_by_k_l.png", "fig8_pass_by_k_l.pdf"}
EXPECTED_CAB = {"table2.md", "table2.tex", "table2.csv", "table5.md", "table5.tex", "table5.csv"}


def test_build_report_produces_every_artefact(results_dir, tmp_path):
    report = build_report([results_dir], tmp_path, n_resamples=200, embed=hash_embed, command="test")
    assert not report.failed, report.failures
    assert report.skipped == []
    assert {p.name for p in (tmp_path / "locoeval").iterdir()} == EXPECTED_LOCOEVAL
    assert {p.name for p in (tmp_path / "cab").iterdir()} == EXPECTED_CAB
    index = (tmp_path / "report.md").read_text()
    assert "0123456789ab" in index  # the manifests' git revision is quoted
    assert "python -m scripts.run method=reconmem backbone=qwen3_235b" in index
    assert "| litellm | 1.110.2 |" in index
    assert "error: 1, ok: 3" in index  # the errored sample is visible
    assert "1 unfinished sample(s)" in index
    assert "![fig6](locoeval/fig6_coverage.png)" in index
    assert "Table 1. Pass@1" in index and "Table 5. Token consumption" in index


def test_report_lists_what_it_cannot_build(tmp_path):
    src = FIXTURES / "results" / "locoeval" / "qwen3_235b" / "full"
    shutil.copytree(src, tmp_path / "runs" / "locoeval" / "qwen3_235b" / "full")
    report = build_report([tmp_path / "runs"], tmp_path / "out", n_resamples=50, embed=hash_embed)
    skipped = "\n".join(report.skipped)
    assert "table4: no ok samples of method 'reconmem'" in skipped
    assert "table6: no ablation runs" in skipped
    assert "fig6: no coverage.json records" in skipped
    assert (tmp_path / "out" / "locoeval" / "table1.md").exists()
    assert "## Not produced" in (tmp_path / "out" / "report.md").read_text()


def test_report_cli(results_dir, tmp_path, capsys):
    from scripts.report import main

    rc = main(["--runs", str(results_dir / "cab"), "--out", str(tmp_path), "--resamples", "50", "--no-tsne"])
    assert rc == 0
    printed = capsys.readouterr().out.split()
    assert str(tmp_path / "cab" / "table2.md") in printed and str(tmp_path / "report.md") in printed
    assert main(["--runs", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2


def test_coverage_cli_with_a_scripted_judge(results_dir, tmp_path, capsys):
    from scripts.coverage import main

    run = tmp_path / "locoeval" / "qwen3_235b" / "reconmem" / "fixture"
    shutil.copytree(results_dir / "locoeval" / "qwen3_235b" / "reconmem" / "fixture", run)
    for p in run.glob("samples/*/coverage.json"):
        p.unlink()
    args = ["--runs", str(tmp_path), "--samples", str(FIXTURES / "locoeval_samples.jsonl"),
            "judge_backbone.model=scripted/scripted_judge:reply", f"cache.dir={tmp_path / 'cache'}"]
    assert main(args) == 0
    assert "judged 3 sample(s)" in capsys.readouterr().out  # s1, s2, s4 (s3 errored)
    record = json.loads((run / "samples" / "s1" / "coverage.json").read_text())
    assert record["judge_model"] == "scripted/scripted_judge:reply"
    assert [t["req_id"] for t in record["task_runs"]] == ["r1", "r2"]
    assert {e["purpose"] for e in record["ledger"]} == {"coverage_judge"}
    assert all(e["sample"] == "s1" for e in record["ledger"])
    views = record["task_runs"][0]["views"]
    assert set(views) == {"original", "dual", "combined"} and all(v["complete"] for v in views.values())
    # Evidence ids are always ids of the judged view.
    assert all(ev[0] in "SC" for v in views.values() for it in v["items"] for ev in it["evidence"])
    assert not (run / "samples" / "s3" / "coverage.json").exists()
    assert main(args) == 0
    assert "skipped 3 already judged" in capsys.readouterr().out
    assert main(["--runs", str(tmp_path), "--judge-backbone", "no_such_backbone"]) == 2
