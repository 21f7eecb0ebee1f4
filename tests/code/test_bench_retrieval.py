"""``python -m scripts.bench retrieval`` on the shipped boltons records (BM25 only: no embedding)."""

from __future__ import annotations

import json


def test_pairs_and_table(deveval_data, boltons_index, tmp_path, capsys):
    from scripts import bench_retrieval as bench

    out = tmp_path / "r.json"
    assert bench.main(["--data", str(deveval_data), "--projects", "Utilities/boltons", "--max-per-project", "12",
                       "--backends", "bm25", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "space=all" in printed and "space=functions" in printed and "recall@10" in printed
    report = json.loads(out.read_text())
    figures = report["spaces"]["all"]["bm25"]
    assert report["projects"] == ["Utilities/boltons"] and figures["queries"] == 12
    assert figures["pairs"] > figures["queries"] and 0 < figures["recall@10"] <= 1 and 0 < figures["mrr"] <= 1


def test_gold_resolution(deveval_data, boltons_root):
    from benchmarks.locoeval.repo import resolve_file
    from benchmarks.perf import retrieval as bench

    rec = next(json.loads(line) for line in deveval_data.read_text().splitlines()
               if json.loads(line)["namespace"] == "boltons.urlutils.QueryParamDict.to_text")
    from reconmem.platform.code import RepositoryIndex

    index = RepositoryIndex.build(boltons_root)
    (q,) = bench.build_queries([rec], index, boltons_root, "Utilities/boltons")
    assert resolve_file(boltons_root, rec["completion_path"], "Utilities/boltons").name == "urlutils.py"
    assert q.target == "boltons/urlutils.py/QueryParamDict/to_text"
    assert q.gold == {"boltons/urlutils.py/QueryParamDict": "container", "boltons/urlutils.py": "container",
                      "boltons/urlutils.py/quote_query_part": "intra_file", "boltons/urlutils.py/to_unicode": "intra_file",
                      "boltons/dictutils.py/OrderedMultiDict/iteritems": "cross_file"}
    assert "Functionality" not in q.text and q.text.startswith(rec["requirement"]["Functionality"][:20])


def test_a_task_whose_test_file_is_not_in_the_snapshot_is_skipped_and_counted(deveval_data, boltons_root, tmp_path,
                                                                                capsys):
    """A run refuses such a task (BlankingError); the bench leaves it out and says so."""
    import pytest

    from benchmarks.locoeval.repo import BlankingError, blanked_copy
    from benchmarks.perf import retrieval as perf
    from scripts import bench_retrieval as bench

    records = [json.loads(line) for line in deveval_data.read_text().splitlines() if line.strip()]
    first = perf.select_records([r for r in records if r["project_path"] == "Utilities/boltons"], 1)[0]
    first["tests"] = list(first["tests"]) + ["tests/test_not_in_the_sdist.py::test_gone"]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    out = tmp_path / "r.json"
    assert bench.main(["--data", str(data), "--projects", "Utilities/boltons", "--max-per-project", "12",
                       "--backends", "bm25", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "retrieval: 1 task skipped: judging test file not in the snapshot 1" in captured.out
    assert "Utilities/boltons: 1 task skipped: judging test file not in the snapshot 1" in captured.err
    report = json.loads(out.read_text())
    assert report["skipped_tasks"] == {"judging test file not in the snapshot": 1}
    assert report["spaces"]["all"]["bm25"]["queries"] == 11

    with pytest.raises(BlankingError, match="test_not_in_the_sdist"):  # still fatal where a run blanks
        blanked_copy(boltons_root, [(first["namespace"], first["completion_path"])], cache_dir=tmp_path / "cache",
                     project_path="Utilities/boltons", hidden_files=["tests/test_not_in_the_sdist.py"])
