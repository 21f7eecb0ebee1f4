"""The oracle command on a small selection (boltons, 2 tasks) and its report."""

from __future__ import annotations

import json
import re

import pytest

from scripts import deveval_oracle


def test_oracle_cli_reports_and_prints_the_final_line(tmp_path, shared_dir, capsys):
    out = tmp_path / "report.json"
    rc = deveval_oracle.main(["--projects", "boltons", "--limit", "2", "--workers", "2", "--quiet",
                              "--data", str(shared_dir / "data" / "deveval" / "data.jsonl"), "--out", str(out)])
    assert rc == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"oracle: 2/2 reference pass, 2/2 blank fail, \d+ s", last), last
    report = json.loads(out.read_text())
    assert report["n"] == 2 and report["agreement"] == 1.0 and report["excluded"] == []
    assert {r["ref"]["outcome"] for r in report["results"]} == {"pass"}


def test_unknown_project_is_a_clear_error(shared_dir):
    from benchmarks.deveval.tasks import TaskDataError

    with pytest.raises(TaskDataError, match="unknown project"):
        deveval_oracle.main(["--projects", "no-such-project", "--data",
                             str(shared_dir / "data" / "deveval" / "data.jsonl")])
