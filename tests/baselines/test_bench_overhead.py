"""`python -m scripts.bench methods` (benchmarks/perf/overhead.py): the per-turn overhead bench on a scripted conversation (its
scripted replies are well-formed for every method, every method runs all turns; no time is asserted)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from benchmarks.perf import overhead as bo
from benchmarks.perf.methods import backbone_cfg


class HashedWordsEmbedder:
    """A deterministic stand-in embedder (hashed words, 384-d), so the test needs no model."""

    model_id = "test-hashed-words"
    backend = "test"
    dim = 384
    cache_dir = None

    def encode(self, texts):
        out = np.zeros((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def encode_one(self, text):
        return self.encode([text])[0]


@pytest.fixture(scope="module")
def boltons(boltons_root):
    from reconmem.platform.code import RepositoryIndex

    return RepositoryIndex.build(boltons_root)


def test_the_conversation_is_about_the_repository_and_seeded(boltons):
    pairs = bo.conversation(boltons, 6, seed=1)
    assert len(pairs) == 6 and pairs == bo.conversation(boltons, 6, seed=1) != bo.conversation(boltons, 6, seed=2)
    names = {e.name for e in boltons.entities.values() if e.kind == "function"}
    for user, assistant in pairs:
        name = user.split("`")[1]
        assert name in names and f"`{name}`" in assistant and "```python" in assistant


def test_scripted_replies_pass_the_methods_own_validators():
    from baselines.ld_agent import _traits_shape
    from baselines.mem0 import _decisions_shape, _facts_shape

    msgs = [{"role": "user", "content": "remember the LRU size"}]
    assert _facts_shape(bo.scripted_reply("mem0")(msgs, "memory_extraction"))
    assert _decisions_shape(bo.scripted_reply("mem0r")(msgs, "memory_update"))[0]["event"] == "ADD"
    assert _traits_shape(bo.scripted_reply("ld_agent")(msgs, "persona"))["user_traits"]
    assert bo.scripted_reply("reconmem")(msgs, "memory_update")["action"] == "INSERT"
    assert bo.scripted_reply("reconmem")(msgs, "memory_sketching")["memories"][0]["text"].endswith("LRU size")


@pytest.mark.parametrize("method", bo.METHODS)
def test_every_method_runs_the_scripted_turns(method, boltons):
    cfg = backbone_cfg(bo.REPO_ROOT / "conf" / "backbone" / "gpt5_mini.yaml")
    embedder = HashedWordsEmbedder()
    row = bo.run_method(method, backbone_cfg=cfg, embedder=embedder, repo=boltons,
                        pairs=bo.conversation(boltons, 4, seed=0), repo_context_k=10)
    assert row["method"] == method and row["backend"] == "test" and row["turns"] == 4
    assert 0 <= row["p50_ms"] <= row["p95_ms"] <= row["max_ms"]
    assert row["embed_p95_ms"] >= 0 and row["cpu_p95_ms"] >= 0 and row["share_p95"] == pytest.approx(row["p95_ms"] / 1000 / bo.API_CALL_SECONDS)
    memory_calls = {"mem0": 8, "mem0r": 8, "reconmem": 8}  # two memory calls per observed turn
    assert row["calls"] == memory_calls.get(method, row["calls"])
    if method in ("full", "vanilla_rag", "memory_tool"):
        assert row["calls"] == 0


def test_the_table_puts_an_earlier_run_beside_this_one():
    row = {"method": "full", "backend": "torch", "turns": 3, "p50_ms": 1.0, "p95_ms": 50.0, "max_ms": 60.0,
           "embed_p95_ms": 45.0, "rest_p95_ms": 5.0, "cpu_p95_ms": 20.0, "share_p95": 0.025, "calls": 0, "ok": False}
    table = bo.format_table([dict(row, p95_ms=10.0, share_p95=0.005, ok=True)], {("full", "torch"): row})
    line = table.splitlines()[2]
    assert line.split()[:2] == ["full", "torch"] and "yes" in line and line.rstrip().endswith("50.0         2.50%")
    assert "40 ms" in table.splitlines()[-1]
