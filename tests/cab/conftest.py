"""Fixtures of the CAB tests."""

from __future__ import annotations

import pytest

from benchmarks.cab.loader import CabIssue, load_issues
from cab_testkit import HERE


@pytest.fixture(scope="session")
def fixture_issue() -> CabIssue:
    return load_issues(HERE / "fixture_issues.jsonl", task_ids=["cab_fixture_1"])[0]
