"""The `retriever` config group: dense by default; bm25 / hybrid runs are their own method column."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir

CONF = Path(__file__).resolve().parents[2] / "conf"


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_dense_is_the_default_and_keeps_the_method():
    from benchmarks.harness import retriever_spec, with_retriever_identity

    cfg = _cfg("method=full")
    assert retriever_spec(cfg).name == "dense"
    assert with_retriever_identity(cfg) is cfg


def test_bm25_and_hybrid_name_and_label_the_run():
    from benchmarks.harness import retriever_spec, with_retriever_identity

    for name, label in (("bm25", "BM25"), ("hybrid", "Hybrid")):
        cfg = with_retriever_identity(_cfg("method=full", f"retriever={name}"))
        assert (cfg.method.name, cfg.method.label, cfg.method.base_name) == (f"full_{name}", f"Full History ({label})", "full")
        assert with_retriever_identity(cfg).method.name == f"full_{name}"  # applied once
        assert retriever_spec(cfg).record()["name"] == name
    assert retriever_spec(_cfg("retriever=hybrid", "retriever.rrf_k=10")).rrf_k == 10


def test_unknown_backend_is_a_config_error():
    import pytest

    from benchmarks.errors import ConfigError
    from benchmarks.harness import retriever_spec

    with pytest.raises(ConfigError, match="unknown backend"):
        retriever_spec(_cfg("retriever.name=tfidf"))
