"""Every method's outputs on a scripted conversation equal the recorded ones, turn by turn.

Each method observes the per-turn bench's scripted conversation over boltons (``benchmarks.perf.overhead``:
zero-latency scripted backbone, seeded questions about the repository's functions) with a
deterministic stand-in embedder. Per turn the test hashes what reaches the backbone and the
records: the built context (``Context.to_dict()`` without timings), its token count and every
memory call the turn made (purpose and the request's cache key); after the last turn the method's
``state()``. The hashes are compared with ``data/method_fingerprints.json``, so a speed change in a
method cannot change a context, a prompt or an LLM cache key unnoticed. Two windows: the backbone's
own (400K, nothing trimmed) and a small one (every method trims its history).

A deliberate output change re-records the file:
``RECONMEM_RECORD_FINGERPRINTS=1 python -m pytest tests/baselines/test_method_fingerprints.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from test_bench_overhead import HashedWordsEmbedder

from benchmarks.perf import overhead as bo
from benchmarks.perf.methods import backbone_cfg as load_backbone_cfg
from benchmarks.perf.methods import build_manager
from reconmem.platform.llm.cache import request_key

FINGERPRINTS = Path(__file__).with_name("data") / "method_fingerprints.json"
RECORD = os.environ.get("RECONMEM_RECORD_FINGERPRINTS") == "1"
TURNS = 14
WINDOWS = {"full_window": None, "small_window": (3000, 512)}  # (context_window, max_output_tokens)
TIMING_KEYS = ("timing_ms", "seconds", "elapsed_ms")


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, (list, tuple)):
        return [_without_timings(v) for v in value]
    return value


def _digest(value: Any) -> str:
    blob = json.dumps(_without_timings(value), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:20]


def fingerprint(method: str, repo: Any, window: tuple[int, int] | None) -> dict[str, Any]:
    """Per-turn hashes of ``method``'s contexts and memory calls, and of its final state."""
    from omegaconf import OmegaConf

    from reconmem.platform.context import Session, Turn
    from reconmem.platform.llm import UsageLedger
    from reconmem.platform.testing import ScriptedLLM

    cfg = load_backbone_cfg(bo.REPO_ROOT / "conf" / "backbone" / "gpt5_mini.yaml")
    if window is not None:
        cfg = OmegaConf.merge(cfg, {"context_window": window[0], "max_output_tokens": window[1]})
    llm = ScriptedLLM(bo.scripted_reply(method), ledger=UsageLedger(), context_window=int(cfg.context_window),
                      max_output_tokens=int(cfg.max_output_tokens))
    cm = build_manager(method, cfg, 10)
    cm.start(Session(sample_id=f"fingerprint-{method}", llm=llm, embedder=HashedWordsEmbedder(), repo=repo,
                     system_prompt=bo.SYSTEM_PROMPT, context_window=llm.context_window))
    turns = []
    for i, (user, assistant) in enumerate(bo.conversation(repo, TURNS, seed=0)):
        first_call = len(llm.calls)
        context = cm.context_for(user)
        tokens = llm.count_tokens(context.messages)
        cm.observe(Turn(index=i, user=user, assistant=assistant))
        calls = [{"purpose": c["purpose"], "key": request_key({"messages": c["messages"], **c["params"]})}
                 for c in llm.calls[first_call:]]
        turns.append(_digest({"context": context.to_dict(), "tokens": tokens, "calls": calls}))
    return {"turns": turns, "state": _digest(cm.state())}


@pytest.fixture(scope="module")
def boltons(boltons_root):
    from reconmem.platform.code import RepositoryIndex

    return RepositoryIndex.build(boltons_root)


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    return json.loads(FINGERPRINTS.read_text(encoding="utf-8")) if FINGERPRINTS.exists() else {}


@pytest.mark.parametrize("window", list(WINDOWS))
@pytest.mark.parametrize("method", bo.METHODS)
def test_method_outputs_match_the_recorded_fingerprint(method, window, boltons, recorded):
    got = fingerprint(method, boltons, WINDOWS[window])
    key = f"{method}/{window}"
    if RECORD:
        recorded[key] = got
        FINGERPRINTS.parent.mkdir(parents=True, exist_ok=True)
        FINGERPRINTS.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n", encoding="utf-8")
        return
    assert key in recorded, f"{FINGERPRINTS.name}: no fingerprint for {key} (record it, see the module docstring)"
    want = recorded[key]
    differing = [i for i, (a, b) in enumerate(zip(got["turns"], want["turns"])) if a != b]
    assert len(got["turns"]) == len(want["turns"]) and not differing, f"{key}: turns {differing} differ"
    assert got["state"] == want["state"], f"{key}: the final state() differs"


def test_the_small_window_makes_the_methods_trim(boltons):
    """The small window is small enough that Full History drops turns (else it would test nothing more)."""
    from reconmem.platform.context import Session, Turn
    from reconmem.platform.llm import UsageLedger
    from reconmem.platform.testing import ScriptedLLM
    from omegaconf import OmegaConf

    cfg = OmegaConf.merge(load_backbone_cfg(bo.REPO_ROOT / "conf" / "backbone" / "gpt5_mini.yaml"),
                          {"context_window": WINDOWS["small_window"][0], "max_output_tokens": WINDOWS["small_window"][1]})
    llm = ScriptedLLM(bo.scripted_reply("full"), ledger=UsageLedger(), context_window=int(cfg.context_window),
                      max_output_tokens=int(cfg.max_output_tokens))
    cm = build_manager("full", cfg, 10)
    cm.start(Session(sample_id="trim", llm=llm, embedder=HashedWordsEmbedder(), repo=boltons,
                     system_prompt=bo.SYSTEM_PROMPT, context_window=llm.context_window))
    trimmed = []
    for i, (user, assistant) in enumerate(bo.conversation(boltons, TURNS, seed=0)):
        trimmed.append(cm.context_for(user).meta["truncated_turns"])
        cm.observe(Turn(index=i, user=user, assistant=assistant))
    assert max(trimmed) > 0
