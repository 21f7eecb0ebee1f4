"""Shared fixtures: real data from ../shared (tests may read it) and a real PyPI project."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RECONMEM_SHARED", REPO_ROOT.parent / "shared"))

# The real open-source project the index / method tests run on (a DevEval project, PyPI sdist).
BOLTONS = ("boltons", "23.1.1", "d2cb2fa83cf2ebe791be1e284183e8a43a1031355156a968f8e0a333ad2448fc")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI: shared data directory not found at {SHARED} (set RECONMEM_SHARED)")
        pytest.skip(f"shared data directory not found at {SHARED} (set RECONMEM_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def boltons_root() -> Path:
    """Unpacked boltons 23.1.1 sdist (downloaded once from PyPI, sha256-verified, cached)."""
    from reconmem.platform.downloads import fetch_pypi_source

    name, version, sha = BOLTONS
    return fetch_pypi_source(name, version, sha256=sha) / f"{name}-{version}"
