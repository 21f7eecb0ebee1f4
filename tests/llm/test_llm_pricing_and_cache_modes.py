"""Pricing (litellm's offline map, conf/pricing.yaml overrides) and both cache modes under two
processes writing the same keys at once."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3

import pytest

from reconmem.platform.llm import Pricing, PricingError, ResponseCache, ShardedResponseCache, load_pricing_file, open_cache
from reconmem.platform.llm.pricing import DEFAULT_PRICING_FILE


def test_prices_from_litellm_map_and_free_local_models():
    pricing = Pricing({})
    gpt = pricing.price("openai/gpt-5-mini")
    assert gpt.source == "litellm" and gpt.cost(1_000_000, 1_000_000) == pytest.approx(0.25 + 2.0)
    assert pricing.price("local/qwen2.5-coder-0.5b-instruct").cost(10**6, 10**6) == 0
    assert pricing.price("scripted/x").source == "scripted"
    assert pricing.price("openai/no-such-served-model").source == "unpriced"


def test_pricing_file_overrides_and_same_as():
    pricing = Pricing({"openai/gpt-5-mini": {"input_per_mtok": 1.0, "output_per_mtok": 3.0},
                       "openai/my-server": {"same_as": "deepseek/deepseek-chat"}})
    assert pricing.price("openai/gpt-5-mini").cost(10**6, 0) == pytest.approx(1.0)
    assert pricing.price("openai/my-server").source == "pricing.yaml->litellm"


def test_shipped_pricing_file_prices_every_paper_backbone():
    table = load_pricing_file(DEFAULT_PRICING_FILE)
    pricing = Pricing(table)
    for model in ("openai/gpt-5-mini", "deepseek/deepseek-chat", "openrouter/qwen/qwen3-235b-a22b-2507",
                  "gemini/gemini-2.5-flash"):
        assert pricing.price(model).is_paid, model


def test_malformed_pricing_file_names_the_entry(tmp_path):
    bad = tmp_path / "pricing.yaml"
    bad.write_text("models:\n  openai/x: {input_per_mtok: 1}\n")
    with pytest.raises(PricingError, match=r"pricing.yaml: models.openai/x"):
        load_pricing_file(bad)


def _writer(mode: str, path: str, worker: int, n: int) -> None:
    cache = open_cache(path, mode)
    for i in range(n):
        # both processes write the SAME keys (as two jobs of a sweep would) plus their own
        cache.put(f"{i:064x}", {"text": f"shared {i}", "usage": {"input_tokens": i, "output_tokens": 1}}, model="m")
        cache.put(f"{worker:02x}{i:062x}", {"text": f"own {worker} {i}"}, model="m")


@pytest.mark.parametrize("mode", ["sqlite", "sharded"])
def test_two_processes_writing_the_same_keys_lose_and_corrupt_nothing(tmp_path, mode):
    n = 150
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(mode, str(tmp_path / "cache"), w, n)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = open_cache(tmp_path / "cache", mode)
    assert len(cache) == 3 * n
    for i in range(n):
        assert cache.get(f"{i:064x}") == {"text": f"shared {i}", "usage": {"input_tokens": i, "output_tokens": 1}}
        for w in (1, 2):
            assert cache.get(f"{w:02x}{i:062x}") == {"text": f"own {w} {i}"}
    if mode == "sqlite":
        with sqlite3.connect(str(tmp_path / "cache" / "llm_cache.sqlite")) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    else:
        files = list((tmp_path / "cache" / "llm_cache.d").rglob("*"))
        assert not [f for f in files if f.name.endswith(".tmp")]  # no half-written entries left behind
        for f in files:
            if f.is_file():
                json.loads(f.read_text())


def test_sharded_mode_reads_through_an_existing_sqlite_cache(tmp_path):
    ResponseCache(tmp_path).put("ab" * 32, {"text": "old"})
    sharded = ShardedResponseCache(tmp_path)
    assert sharded.get("ab" * 32) == {"text": "old"}
    sharded.put("cd" * 32, {"text": "new"})
    assert sharded.get("cd" * 32) == {"text": "new"} and ResponseCache(tmp_path).get("cd" * 32) is None


def test_exchange_answered_models_are_free_without_a_warning(caplog):
    """``backbone=exchange`` (model ``exchange/expert``): an expert's answers cost nothing and need no price entry."""
    from reconmem.platform.llm import Pricing

    pricing = Pricing({})
    with caplog.at_level("WARNING"):
        price = pricing.price("exchange/expert")
    assert (price.input_per_token, price.output_per_token, price.source) == (0.0, 0.0, "exchange")
    assert pricing.batch_price("exchange/expert") == price and "no price" not in caplog.text
