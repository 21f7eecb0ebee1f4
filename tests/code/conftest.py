"""Fixtures of the repository-index tests: the real boltons sdist and the per-language fixture files."""

from __future__ import annotations

from pathlib import Path

import pytest

LANGS_ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "langs"


@pytest.fixture(scope="session")
def boltons_index(boltons_root):
    from reconmem.platform.code import RepositoryIndex

    return RepositoryIndex.build(boltons_root)


@pytest.fixture(scope="session")
def langs_index():
    from reconmem.platform.code import RepositoryIndex

    return RepositoryIndex.build(LANGS_ROOT)
