"""Floor / ceiling / memory headroom per subset in Table 1, the brackets table and the report, on the
fixture records plus hand-written bracket runs of GPT-5 mini over the same samples (s1..s4)."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_helpers import RESULTS

from benchmarks import records as rec

# (sample, subset, project) -> passed per task; the fixture's Full run passes s1 r1 r2, s2 r1, s3 r1, s4 r1 r2.
SAMPLES = {"s1": ("single-hop", "repoA", 2), "s2": ("single-hop", "repoB", 1),
           "s3": ("multi-hop", "repoA", 3), "s4": ("multi-hop", "repoC", 2)}
OUTCOMES = {
    "no_memory": {"s1": [False, False], "s2": [True], "s3": [False, False, False], "s4": [True, False]},
    "oracle_context": {"s1": [True, True], "s2": [True], "s3": [True, False, True], "s4": [True, True]},
}
LABELS = {"no_memory": "No Memory (floor)", "oracle_context": "Oracle Context (ceiling)"}


def write_bracket_run(root: Path, method: str) -> Path:
    run = root / "locoeval" / "gpt5_mini" / method / "fixture"
    rec.atomic_write_text(run / rec.CONFIG, "\n".join([
        "benchmark:", "  name: locoeval", "backbone:", "  name: gpt5_mini", "  label: GPT-5 mini",
        "  model: openai/gpt-5-mini", "method:", f"  name: {method}", f"  label: {LABELS[method]}",
        "  skip_prep_replies: true", "run:", "  run_id: fixture", ""]))
    selected = [{"sample_id": sid, "subset": sub, "project": proj, "repo_cluster": proj, "n_turns": 32, "n_tasks": n,
                 "tasks": [{"req_id": f"r{i + 1}", "namespace": f"{proj}.mod_{sid}.r{i + 1}"} for i in range(n)]}
                for sid, (sub, proj, n) in SAMPLES.items()]
    rec.atomic_write_json(run / rec.MANIFEST, {
        "benchmark": "locoeval", "family": "locoeval", "method": method, "backbone": "gpt5_mini", "run_id": "fixture",
        "models": {"backbone": "openai/gpt-5-mini", "user": None, "judge": None},
        "model_labels": {"backbone": "GPT-5 mini", "user": None, "judge": None}, "scripted": False,
        "hide_task_tests": True, "privileged_inputs": ["task_oracle"] if method == "oracle_context" else [],
        "skip_prep_replies": True, "shard": None, "n_shards": None, "n_selected": len(SAMPLES), "selected": selected})
    for sid, (sub, proj, n) in SAMPLES.items():
        tasks = [{"req_id": f"r{i + 1}", "namespace": f"{proj}.mod_{sid}.r{i + 1}", "passed": p,
                  "outcome": "pass" if p else "fail"} for i, p in enumerate(OUTCOMES[method][sid])]
        d = run / rec.SAMPLES / sid
        rec.write_jsonl(d / rec.LEDGER, [{"purpose": "task_generation", "input_tokens": 900, "output_tokens": 120,
                                          "cached": False, "model": "openai/gpt-5-mini", "cost_usd": 0.0005,
                                          "sample": sid, "attempt": "a1", "turn": 40 + i, "phase": "task",
                                          "role": "assistant"} for i in range(n)])
        rec.atomic_write_json(d / "result.json", {
            "sample_id": sid, "subset": sub, "project": proj, "repo_cluster": proj, "n_turns": 32, "n_tasks": n,
            "status": "ok", "error": None, "prep_replies": "skipped", "tasks": tasks, "attempt": "a1",
            "wall_seconds": 1.0})
    return run


@pytest.fixture(scope="module")
def with_brackets(tmp_path_factory):
    from benchmarks.analysis.records import load_runs
    from benchmarks.analysis.run_records import LOCOEVAL

    root = tmp_path_factory.mktemp("bracket_runs")
    for method in OUTCOMES:
        write_bracket_run(root, method)
    runs = load_runs([RESULTS / "locoeval", root / "locoeval"])
    return root, runs.tasks_frame("locoeval"), runs.samples_frame("locoeval", family=LOCOEVAL), runs.labels


def _block_row(table, heading: str, model_prefix: str) -> dict:
    block = next(b for b in table.blocks if b.heading == heading)
    row = next(r for r in block.rows if r[0].startswith(model_prefix))
    return {" ".join(c).strip(): v for c, v in zip(block.columns, row)}


def test_table1_prints_floor_ceiling_and_headroom_per_subset(with_brackets):
    from benchmarks.analysis import tables

    _, tasks, samples, names = with_brackets
    t1 = tables.table1(tasks, samples, n_resamples=200, names=names)
    single = _block_row(t1, "Single-hop", "openai/gpt-5-mini")
    multi = _block_row(t1, "Multi-hop", "openai/gpt-5-mini")
    assert (single["No Memory (floor) Pass@1"], single["Oracle Context (ceiling) Pass@1"],
            single["Memory headroom pp"]) == ("33.333", "100.000", "+66.67")
    assert (multi["No Memory (floor) Pass@1"], multi["Oracle Context (ceiling) Pass@1"],
            multi["Memory headroom pp"]) == ("20.000", "80.000", "+60.00")
    assert _block_row(t1, "Single-hop", "openrouter/")["Memory headroom pp"] == "—"  # Qwen3: no bracket runs
    data = t1.data
    floor = data[(data["method"] == "no_memory") & (data["backbone"] == "gpt5_mini")]
    assert sorted(floor["n_tasks"]) == [3, 5]
    assert any("Memory headroom" in n for n in t1.notes)


def test_table1_without_bracket_runs_is_unchanged(runset):
    from benchmarks.analysis import tables

    t1 = tables.table1(runset.tasks_frame("locoeval"), runset.samples_frame("locoeval"), n_resamples=50)
    assert not any("headroom" in " ".join(c) for b in t1.blocks for c in b.columns)


def test_brackets_table_headroom_ci_and_recovered_share(with_brackets):
    from benchmarks.analysis import brackets

    _, tasks, _, names = with_brackets
    table = brackets.brackets_table(tasks, methods=["full"], n_resamples=200, names=names)
    assert [b.heading for b in table.blocks] == ["Single-hop", "Multi-hop", "All tasks"]
    d = table.data.set_index("subset")
    assert d.loc["single-hop", "headroom_pp"] == pytest.approx(200 / 3)
    assert d.loc["multi-hop", "headroom_pp"] == pytest.approx(60.0)
    assert d.loc["all", "headroom_pp"] == pytest.approx(100 * 7 / 8 - 100 * 2 / 8)
    assert d.loc["all", "n_paired"] == 8 and bool(d.loc["all", "same_tasks"])
    assert d.loc["single-hop", "full_recovered_pct"] == pytest.approx(100.0)  # Full passes all 3: full recovery
    assert d.loc["multi-hop", "full_recovered_pct"] == pytest.approx(100 * (60 - 20) / 60)
    row = _block_row(table, "Multi-hop", "openai/gpt-5-mini")
    assert row["No Memory (floor) Pass@1 (passed/tasks)"] == "20.0 (1/5)"
    assert row["Oracle Context (ceiling) Pass@1 (passed/tasks)"] == "80.0 (4/5)"
    assert [r["headroom_pp"] for r in brackets.headroom_summary(tasks)] == pytest.approx([200 / 3, 60.0, 62.5])


def test_report_shows_the_brackets(with_brackets, tmp_path):
    from benchmarks.analysis.report import build_report

    root, _, _, _ = with_brackets
    report = build_report([RESULTS / "locoeval", root / "locoeval"], tmp_path / "report", n_resamples=50, tsne=False)
    assert not report.failed, report.failures
    table1 = (tmp_path / "report" / "locoeval" / "table1.md").read_text()
    assert "Memory headroom" in table1 and "+66.67" in table1 and "+60.00" in table1
    assert "Floor, ceiling and memory headroom" in (tmp_path / "report" / "locoeval" / "brackets.md").read_text()


def test_brackets_table_pairs_repeat_i_with_repeat_i(tmp_path):
    """run.repeat=2 of both brackets: the paired headroom has one row per task and repeat (8 tasks x 2 = 16),
    where pairing without the repeat gave every repeat of one bracket with every repeat of the other (32)."""
    import json
    import shutil

    from benchmarks.analysis import brackets
    from benchmarks.analysis.records import load_runs

    single = tmp_path / "single"
    for method in OUTCOMES:
        run = write_bracket_run(single, method)
        for i in (1, 2):
            dst = tmp_path / "rep" / "locoeval" / "gpt5_mini" / method / f"fixture-r{i}"
            shutil.copytree(run, dst)
            m = json.loads((dst / rec.MANIFEST).read_text())
            m.update(run_id=f"fixture-r{i}", repeat={"index": i, "of": 2, "run_id": "fixture"})
            (dst / rec.MANIFEST).write_text(json.dumps(m))
    tasks = load_runs([tmp_path / "rep"]).tasks_frame("locoeval")
    assert sorted(set(tasks["repeat"])) == [1, 2]
    d = brackets.brackets_table(tasks, n_resamples=100).data.set_index("subset")
    assert d.loc["all", "n_paired"] == 16 and d.loc["single-hop", "n_paired"] == 6
    assert d.loc["all", "paired_pp"] == pytest.approx(62.5) and bool(d.loc["all", "same_tasks"])


def _add_record_outside(run: Path, sid: str = "s9") -> None:
    """A passing record of a sample the run's manifest does not select (left by an earlier run.ids)."""
    rec.atomic_write_json(run / rec.SAMPLES / sid / "result.json", {
        "sample_id": sid, "subset": "single-hop", "project": "repoD", "repo_cluster": "repoD", "n_turns": 32,
        "n_tasks": 1, "status": "ok", "error": None, "prep_replies": "skipped", "attempt": "a1", "wall_seconds": 1.0,
        "tasks": [{"req_id": "r1", "namespace": f"repoD.mod_{sid}.r1", "passed": True, "outcome": "pass"}]})


def test_records_outside_the_selection_are_left_out_and_named(tmp_path):
    """A record of a sample outside its run's recorded selection: not in any frame or number, named in the
    brackets table's notes, the validity row, the warnings and the report."""
    from benchmarks.analysis import brackets
    from benchmarks.analysis.records import load_runs
    from benchmarks.analysis.report import build_report

    runs_dirs = {method: write_bracket_run(tmp_path, method) for method in OUTCOMES}
    before = brackets.brackets_table(load_runs([tmp_path]).tasks_frame("locoeval"), n_resamples=100).data
    for run in runs_dirs.values():
        _add_record_outside(run)
    runs = load_runs([tmp_path])
    tasks = runs.tasks_frame("locoeval")
    assert "s9" not in set(tasks["sample_id"]) and len(tasks) == 2 * 8
    assert "s9" not in set(runs.samples_frame("locoeval")["sample_id"])
    outside = runs.outside_selection_frame("locoeval")
    assert sorted(zip(outside["method"], outside["sample_id"])) == [("no_memory", "s9"), ("oracle_context", "s9")]
    table = brackets.brackets_table(tasks, n_resamples=100, names=runs.labels, outside=outside)
    assert table.data.drop(columns=["n_resamples"], errors="ignore").equals(
        before.drop(columns=["n_resamples"], errors="ignore"))
    assert table.notes[0].startswith("Outside the selection: 2 record(s) of 1 sample(s)")
    assert "s9 (No Memory (floor) fixture, Oracle Context (ceiling) fixture)" in table.notes[0]
    assert "Outside the selection" in table.to_markdown()
    validity = runs.validity("locoeval").set_index("method")
    assert validity.loc["no_memory", "outside_selection"] == 1 and validity.loc["no_memory", "outside_ids"] == "s9"
    assert validity.loc["no_memory", "scored"] == 4
    counts = {m["method"]: m["status_counts"] for m in runs.manifests()}
    assert counts["no_memory"] == {"ok": 4, "outside selection (left out)": 1}
    assert sum("1 record(s) outside the manifest's selection left out of every table: s9" in w
               for w in runs.warnings) == 2
    report = build_report([tmp_path], tmp_path / "report", n_resamples=50, tsne=False)
    assert not report.failed, report.failures
    assert "Outside the selection: 2 record(s)" in (tmp_path / "report" / "locoeval" / "brackets.md").read_text()


def test_run_without_a_recorded_selection_counts_every_record(tmp_path):
    """A manifest written before ``selected``: every record is counted, as before, and nothing is outside."""
    import json

    from benchmarks.analysis import brackets
    from benchmarks.analysis.records import load_runs

    for method in OUTCOMES:
        run = write_bracket_run(tmp_path, method)
        _add_record_outside(run)
        m = json.loads((run / rec.MANIFEST).read_text())
        del m["selected"], m["n_selected"]
        (run / rec.MANIFEST).write_text(json.dumps(m))
    runs = load_runs([tmp_path])
    tasks = runs.tasks_frame("locoeval")
    assert "s9" in set(tasks["sample_id"]) and len(tasks) == 2 * 9
    assert runs.outside_selection_frame("locoeval").empty
    table = brackets.brackets_table(tasks, n_resamples=100, names=runs.labels,
                                    outside=runs.outside_selection_frame("locoeval"))
    assert not any(n.startswith("Outside the selection") for n in table.notes)
    d = table.data.set_index("subset")
    assert (d.loc["all", "floor_n_tasks"], d.loc["all", "ceiling_n_tasks"]) == (9, 9)
    assert d.loc["all", "headroom_pp"] == pytest.approx(100 * 8 / 9 - 100 * 3 / 9)
    assert any("manifest without 'selected'" in w for w in runs.warnings)
