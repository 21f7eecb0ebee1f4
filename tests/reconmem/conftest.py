"""Fixtures for the ReConMem mechanism tests: the real boltons index, the real embedder, scripted LLM replies."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from reconmem.platform.context import Session
from rm_helpers import PurposeScript


@pytest.fixture(scope="session")
def boltons_index(boltons_root):
    from reconmem.platform.code import RepositoryIndex

    return RepositoryIndex.build(boltons_root)


@pytest.fixture(scope="session")
def embedder():
    from reconmem.platform.embed import Embedder

    return Embedder()


@pytest.fixture
def make_method(boltons_index, embedder) -> Callable[..., Any]:
    """``make_method(script=None, meta=None, **options)`` -> a started ReConMem on boltons with scripted replies."""
    from reconmem.memory.method import ReConMem
    from reconmem.platform.testing import ScriptedLLM

    def factory(script: PurposeScript | None = None, meta: dict | None = None, **options: Any):
        llm = ScriptedLLM(script or PurposeScript())
        method = ReConMem(**options)
        method.start(Session(sample_id="boltons-test", llm=llm, embedder=embedder, repo=boltons_index, meta=meta or {}))
        return method

    return factory
