"""LLM cache keys are pinned: old caches must stay valid across refactors of the client.

The keys below were computed by the client before it was split into a package (commit d775234);
if one of these assertions fails, every user's cache silently stops hitting.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reconmem.platform.llm import BackboneSpec, Completion, LiteLLMTransport, LLMClient, request_key
from reconmem.platform.testing import ScriptedLLM

MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "What does foo() do?"}]


def _keys(path) -> list[str]:
    with sqlite3.connect(str(path)) as conn:
        return [row[0] for row in conn.execute("SELECT key FROM responses")]


def test_request_key_of_a_known_request():
    request = {"model": "local/qwen2.5-coder-0.5b-instruct", "messages": MSGS, "max_tokens": 128, "temperature": 0.0,
               "tools": None, "json_mode": False, "stop": ["\n\n"], "api_base": None,
               "local_weights": {"gguf_name": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                                 "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"}}
    assert request_key(request) == "005e1625d80f9c2c0bb2cfecf6396f5d699402031ff26c836680a258f570bc0e"


def test_scripted_client_writes_the_pinned_key(tmp_path):
    llm = ScriptedLLM(["x"], cache_path=tmp_path / "c.sqlite")
    llm.chat(MSGS, purpose="turn_generation")
    assert _keys(tmp_path / "c.sqlite") == ["b4b8eaab34b90ea9fb307e2fed963ae1f882f832a1e60c14e56fa2821e81a0ad"]


def test_openai_compatible_json_mode_request_writes_the_pinned_key(tmp_path, monkeypatch):
    spec = BackboneSpec(name="oc", model="openai/served-model", context_window=32768, max_output_tokens=64,
                        api_base="http://127.0.0.1:8000/v1")
    transport = LiteLLMTransport(spec)
    monkeypatch.setattr(transport, "send", lambda request, purpose, key: Completion(text="{}", model="served-model"))
    monkeypatch.setattr(transport, "count_messages", lambda messages: 10)
    monkeypatch.setattr(transport, "count_text", lambda text: 1)
    client = LLMClient(spec, cache_path=tmp_path / "c.sqlite", transport=transport)
    client.chat(MSGS, purpose="judge", json_mode=True)
    assert _keys(tmp_path / "c.sqlite") == ["01526f06cd85248b529bb2fcdcec651734ae21dad2221050d9d5e2f9ccd305a6"]


def test_local_transport_names_the_weights_and_pinned_threads():
    """The in-process model's key fields: the GGUF file and the pinned llama.cpp thread count (the values the
    client added before its transport became an interface)."""
    from omegaconf import OmegaConf

    from reconmem.platform.llm import default_transport
    from reconmem.platform.local_model.provider import LocalTransport

    spec = BackboneSpec.from_config(OmegaConf.load(Path(__file__).resolve().parents[2] / "conf/backbone/local.yaml"))
    transport = default_transport(spec)
    assert isinstance(transport, LocalTransport) and transport.exact_counts
    assert transport.cache_identity() == {
        "local_weights": {"gguf_name": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                          "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"},
        "local_threads": 2}
