"""The run's role clients (benchmarks/clients.py) and the call defaults over a client
(reconmem/platform/llm/defaults.py): built on first use, one client for equal config nodes, the
benchmark's defaults set once, a call's own values winning, cache keys as if spelled out.
SCRIPTED replies (``reply`` / ``other_reply`` below), not a model's."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from benchmarks.clients import RoleClients
from reconmem.platform.llm import CallDefaults, UsageLedger
from reconmem.platform.testing import ScriptedLLM

MSG = [{"role": "user", "content": "q"}]


def reply(messages, purpose):
    """Scripted reply: the purpose."""
    return f"ack {purpose}"


def other_reply(messages, purpose):
    """Scripted reply of a second model."""
    return "other"


def _cfg(tmp: Path, user_model: str) -> object:
    node = {"name": "s", "model": "scripted/test_role_clients:reply", "context_window": 4096}
    return OmegaConf.create({
        "backbone": node, "user_backbone": {**node, "model": user_model},
        "judge_backbone": {**node, "name": "never", "model": "scripted/no_such_module:reply"},
        "cache": {"dir": str(tmp / "cache"), "llm": False}, "llm": {"max_retries": 0, "timeout": 5},
        "run": {"workers": 1}})


@pytest.fixture(autouse=True)
def _here(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


def test_roles_are_built_on_first_use_and_equal_nodes_share_one_client(tmp_path):
    clients = RoleClients(_cfg(tmp_path, "scripted/test_role_clients:reply"), UsageLedger(),
                          {"backbone": CallDefaults({"turn_generation": 48})})
    assert clients.built() == ()
    backbone, user = clients.backbone, clients.user
    assert clients.built() == ("backbone", "user")  # the judge (an unimportable script) was never built
    assert user is backbone.client  # same node: one client; the user role has no defaults
    backbone.chat(MSG, purpose="turn_generation")
    user.chat(MSG, purpose="mock_user")
    assert [c["params"].get("max_tokens") for c in user.calls][0] == 48
    assert clients.backbone is backbone  # built once


def test_a_different_node_gets_its_own_client(tmp_path):
    clients = RoleClients(_cfg(tmp_path, "scripted/test_role_clients:other_reply"), UsageLedger())
    assert clients.user is not clients.backbone
    assert clients.user.chat(MSG, purpose="mock_user").text == "other"
    with pytest.raises(KeyError, match="unknown backbone role"):
        clients.get("maintainer")
    with pytest.raises(ValueError, match="unknown backbone role"):
        RoleClients(None, None, {"critic": CallDefaults()})


def test_defaults_fill_only_what_a_call_leaves_unset_and_keep_the_cache_key(tmp_path):
    llm = ScriptedLLM(reply, cache_path=tmp_path / "c.sqlite")
    view = llm.with_defaults(CallDefaults({"judge": 64, "memory_update": None}, temperature=None))
    view.chat(MSG, purpose="judge")
    view.chat(MSG, purpose="judge", max_tokens=7)
    view.chat(MSG, purpose="memory_update")
    hot = view.with_defaults(CallDefaults(temperature=0.7))
    hot.chat(MSG, purpose="judge")
    hot.chat([{"role": "user", "content": "another"}], purpose="judge", temperature=0.0)
    params = [c["params"] for c in llm.calls]
    assert [p.get("max_tokens") for p in params[:3]] == [64, 7, llm.spec.max_output_tokens]
    assert [p.get("temperature") for p in params[3:]] == [0.7, 0.0]
    assert params[3]["max_tokens"] == 64  # merged defaults keep the view's budgets
    # through the defaults or spelled out: the same request, the same cache key (a hit)
    spelled = llm.chat(MSG, purpose="judge", max_tokens=64)
    assert spelled.cached
    assert view.ledger is llm.ledger and view.context_window == llm.context_window
