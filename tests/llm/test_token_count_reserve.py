"""``benchmarks.token_counts`` (``python -m scripts.measure_token_counts``): the reserve rule, and
the shipped reference measurement agrees with the reserves the client applies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.token_counts import ROOT, report_lines, reserve

REFERENCE = ROOT / "results" / "reference" / "token_counts.json"


def test_reserve_rounds_the_largest_undercount_up_to_a_half_per_cent_plus_a_half():
    assert reserve(0.151) == 0.16
    assert reserve(0.15) == 0.155
    assert reserve(0.0) == reserve(-0.03) == 0.005  # an overcount needs no reserve beyond the half per cent


def test_the_reference_report_prints_and_its_reserves_follow_the_rule():
    if not REFERENCE.is_file():
        pytest.skip(f"{REFERENCE} not shipped")
    report = json.loads(Path(REFERENCE).read_text(encoding="utf-8"))
    fams = report["families"]
    for family in ("qwen", "deepseek", "openai"):
        assert fams[family]["reserve"] == reserve(max(r[family]["error"] for r in report["rows"]))
    lines = report_lines(report)
    assert lines[0].startswith(f"{report['prompts']} prompts (") and len(lines) == 6
    assert lines[-1].startswith("other") and f"{fams['other']['reserve']:.2%}" in lines[-1]
