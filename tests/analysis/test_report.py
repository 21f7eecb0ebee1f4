"""`build_report` / `python -m scripts.report` and `python -m scripts.coverage` on fixture records."""

from __future__ import annotations

import json
import shutil

import pytest

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
    # the fixture records have no bracket runs: the brackets table is the one skipped artefact
    assert report.skipped == ["locoeval/brackets: no bracket runs (no_memory, oracle_context)"]
    assert {p.name for p in (tmp_path / "locoeval").iterdir()} == EXPECTED_LOCOEVAL
    assert {p.name for p in (tmp_path / "cab").iterdir()} == EXPECTED_CAB
    index = (tmp_path / "report.md").read_text()
    assert "0123456789ab" in index  # the manifests' git revision is quoted
    assert "python -m scripts.run method=reconmem backbone=qwen3_235b" in index
    assert "| litellm | 1.110.2 |" in index
    assert "error: 1, ok: 3" in index  # the errored sample is visible
    assert "1 unfinished sample folder(s) (no result.json) outside the manifest's selection ignored: s5" in index
    assert "![fig6](locoeval/fig6_coverage.png)" in index
    assert "Table 1. Pass@1" in index and "Table 5. Token consumption" in index
    # The validity block opens the report, names the models and what each method was scored on.
    assert index.index("## Validity") < index.index("## Runs") < index.index("\n## locoeval\n")
    validity = index[index.index("## Validity"):index.index("## Runs")]
    assert ("| openrouter/qwen/qwen3-235b-a22b-2507 (Qwen3-235B) | ReConMem | gemini/gemini-2.5-flash | — | fixture "
            "| 4 | 4 | 8 | 1 | 0 | 0 | 0 | 0 | 1 |") in validity  # ... unfinished, outside selection, repeats
    assert "i6: docker_unavailable in qwen3_235b/native_strands" in validity
    assert "judge: `gemini/gemini-2.5-flash`" in validity and "user: `gemini/gemini-2.5-flash`" in validity
    assert "ledger events carry no `cost_usd` and count as $0" in validity
    assert "scripted" not in index.lower()


def _scripted_copy(results_dir, tmp_path):
    src = results_dir / "locoeval" / "gpt5_mini"
    root = tmp_path / "runs"
    shutil.copytree(src, root / "locoeval" / "gpt5_mini")
    manifest = root / "locoeval" / "gpt5_mini" / "reconmem" / "fixture" / "manifest.json"
    m = json.loads(manifest.read_text())
    m["models"]["user"], m["scripted"] = "scripted/tests.analysis.scripted_judge:reply", True
    manifest.write_text(json.dumps(m))
    return root


def test_report_refuses_scripted_runs_unless_allowed(results_dir, tmp_path, capsys):
    from PIL import Image

    from benchmarks.analysis.report import ScriptedRunsError
    from scripts.report import main

    root = _scripted_copy(results_dir, tmp_path)
    with pytest.raises(ScriptedRunsError, match="user=scripted/.*--allow-scripted"):
        build_report([root], tmp_path / "out", n_resamples=20, tsne=False)
    assert not (tmp_path / "out").exists()
    assert main(["--runs", str(root), "--out", str(tmp_path / "cli"), "--no-tsne"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "--allow-scripted" in err[0]
    report = build_report([root], tmp_path / "out", n_resamples=20, tsne=False, allow_scripted=True)
    assert not report.failed, report.failures
    mark = "scripted replies — not a model's result"
    tables = [p for p in report.files() if p.suffix in (".md", ".tex", ".csv") and p.name != "report.md"]
    assert any(p.name == "table1.md" for p in tables)
    for p in tables:
        if p.suffix == ".md":
            assert mark in p.read_text(), p
        if p.suffix in (".tex", ".csv"):
            assert "scripted replies" in p.read_text(), p
    pngs = [p for p in report.files() if p.suffix == ".png"]
    assert pngs and all(Image.open(p).text.get("Description") == mark for p in pngs)
    assert mark.upper() in (tmp_path / "out" / "report.md").read_text()


def test_sharded_run_gives_the_same_tables_as_unsharded(results_dir, tmp_path):
    """Two shards writing one run directory (shards/manifest-i-of-2.json) merge into the
    same tables as the unsharded run of the same samples."""
    plain = build_report([results_dir / "locoeval" / "gpt5_mini"], tmp_path / "plain", n_resamples=100, tsne=False)
    sharded = build_report([FIXTURES / "sharded"], tmp_path / "sharded", n_resamples=100, tsne=False)
    assert not plain.failed and not sharded.failed
    for name in ("table1.csv", "table3.csv", "table4.csv", "fig8_by_k.csv", "fig5_per_turn_tokens.csv", "coverage.csv"):
        a = (tmp_path / "plain" / "locoeval" / name).read_text()
        assert a == (tmp_path / "sharded" / "locoeval" / name).read_text(), name
    index = (tmp_path / "sharded" / "report.md").read_text()
    assert "fixture (2 shards)" in index


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
