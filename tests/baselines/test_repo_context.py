"""The unified repository adaptation: k most similar functions, full code, source REPO_WIDE."""

from __future__ import annotations

import shutil

import pytest

from baselines.full import FullHistory
from baselines.ld_agent import LDAgent
from baselines.mem0 import Mem0
from baselines.memgpt import MemGPT
from baselines.mem0r import Mem0R
from baselines.repo_context import repo_items
from baselines.vanilla_rag import VanillaRAG
from reconmem.platform.context import REPO_WIDE, Session


@pytest.fixture(scope="module")
def small_repo(boltons_root, tmp_path_factory):
    """One real boltons module (a small index keeps the cold embedding time short)."""
    from reconmem.platform.code import RepositoryIndex

    root = tmp_path_factory.mktemp("boltons_small")
    (root / "boltons").mkdir()
    for name in ("strutils.py",):
        shutil.copy(boltons_root / "boltons" / name, root / "boltons" / name)
    return RepositoryIndex.build(root)


def _session(make_session, repo, k):
    base = make_session([], repo_context_k=k)
    return Session(sample_id="t", llm=base.llm, embedder=base.embedder, repo=repo, system_prompt=base.system_prompt,
                   context_window=base.context_window, repo_context_k=k)


@pytest.mark.parametrize("factory", [FullHistory, VanillaRAG, Mem0, MemGPT, LDAgent], ids=lambda f: f.__name__)
def test_baselines_add_k_repository_functions(factory, make_session, small_repo):
    session = _session(make_session, small_repo, 3)
    cm = factory()
    cm.start(session)
    query = "Turn a page title into a URL slug with dashes"
    ctx = cm.context_for(query)
    code = [i for i in ctx.items if i.kind == "code"]
    assert len(code) == 3 and all(i.source == REPO_WIDE for i in code)
    assert "boltons/strutils.py/slugify" in [i.id for i in code]
    for item in code:
        assert small_repo.display_source(item.id) in item.text  # full code
        assert small_repo.display_source(item.id) in ctx.messages[0]["content"]
    assert [i.id for i in code] == [p for p, _ in small_repo.search(query, session.embedder, k=3)]


def test_repo_adaptation_off_and_mem0r_opts_out(make_session, small_repo):
    session = _session(make_session, small_repo, 0)
    assert repo_items(session, "slugify") == []
    session10 = _session(make_session, small_repo, 10)
    cm = Mem0R(repo_k=0)
    cm.start(session10)
    assert [i for i in cm.context_for("slugify a title").items if i.kind == "code"] == []  # its own access only
