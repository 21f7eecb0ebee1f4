"""Shared fixtures: the real data shipped under tests/data/ (DevEval, CAB) and a real PyPI project.

Every test runs on the shipped data, so a clone with no ../shared runs the whole suite with the same
results. ``deveval_full_data`` is the full DevEval file when this machine has it (../shared or the
fetched copy), for the checks that the shipped subset was cut from it verbatim."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO_ROOT = Path(__file__).resolve().parents[1]
TEST_DATA = REPO_ROOT / "tests" / "data"
SHARED = Path(os.environ.get("RECONMEM_SHARED", REPO_ROOT.parent / "shared"))

# The real open-source project the index / method tests run on (a DevEval project, PyPI sdist).
BOLTONS = ("boltons", "23.1.1", "d2cb2fa83cf2ebe791be1e284183e8a43a1031355156a968f8e0a333ad2448fc")


@pytest.fixture(scope="session")
def deveval_data() -> Path:
    """DevEval's task records of the projects the tests use (tests/data/deveval/PROVENANCE.md)."""
    return TEST_DATA / "deveval" / "data.jsonl"


@pytest.fixture(scope="session")
def cab_data() -> Path:
    """The CodeAssistBench data files, unmodified (tests/data/cab/PROVENANCE.md)."""
    return TEST_DATA / "cab"


@pytest.fixture(scope="session")
def deveval_full_data() -> Path | None:
    """DevEval's full data.jsonl when this machine has it (../shared, else the fetched copy), else None."""
    from benchmarks.deveval.tasks import default_data_path

    for path in (SHARED / "data" / "deveval" / "data.jsonl", default_data_path()):
        if path.is_file():
            return path
    return None


@pytest.fixture(scope="session")
def shared_manifest() -> Path | None:
    """The manifest in ../shared the shipped one started from, when ../shared exists, else None."""
    path = SHARED / "data" / "deveval" / "pypi_sources.json"
    return path if path.is_file() else None


@pytest.fixture(scope="session")
def boltons_root() -> Path:
    """Unpacked boltons 23.1.1 sdist (downloaded once from PyPI, sha256-verified, cached)."""
    from reconmem.platform.downloads import fetch_pypi_source

    name, version, sha = BOLTONS
    return fetch_pypi_source(name, version, sha256=sha) / f"{name}-{version}"


# --- Docker tests in CI: a skipped docker-marked test is a failure -------------------------------
# `.ci/run` starts an engine (`make docker-engine`) and exports RECONMEM_REQUIRE_DOCKER=1, so a
# docker test that skips (no engine answered) fails instead of passing silently. Opt out on
# machines that cannot run an engine with RECONMEM_NO_DOCKER=1.
def _docker_required() -> bool:
    if os.environ.get("RECONMEM_NO_DOCKER") == "1":
        return False
    return bool(os.environ.get("CI")) or os.environ.get("RECONMEM_REQUIRE_DOCKER") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and item.get_closest_marker("docker") is not None and _docker_required():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (f"docker test skipped where Docker is required ({reason}); run `make docker-engine` "
                           f"or set RECONMEM_NO_DOCKER=1 on a machine that cannot run an engine")
