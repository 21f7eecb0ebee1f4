"""The FaultServer fronting the REAL local GGUF model (Qwen2.5-Coder-0.5B via reconmem.platform's
local backbone): the HTTP client path survives faults on real model output."""

from __future__ import annotations

import pytest

from fault_server import FaultServer
from reconmem.platform.llm import BackboneSpec, LLMClient, UsageLedger

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_client():
    from hydra import compose, initialize_config_dir

    from conftest import HERE

    with initialize_config_dir(config_dir=str(HERE.parents[1] / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["backbone=local"])
    spec = BackboneSpec.from_config(cfg.backbone)
    try:
        client = LLMClient(spec, ledger=UsageLedger())
        client.count_tokens("probe")
    except Exception as exc:  # noqa: BLE001 - weights not installed on this machine
        pytest.skip(f"local backbone unavailable: {exc}")
    return client


def test_http_client_over_the_local_model_with_faults(local_client, no_proxy):
    def reply(body):
        return local_client.chat(body["messages"], purpose="turn_generation", max_tokens=min(48, body.get("max_tokens") or 48)).text

    with FaultServer(reply, retry_after=0.05) as server:
        server.plan = ["429", "reset", "truncated_body", "503"]
        spec = BackboneSpec(name="oc", model="openai/served-model", context_window=32768, max_output_tokens=48,
                            api_base=server.url)
        client = LLMClient(spec, ledger=UsageLedger(), retry_base_delay=0.01, retry_max_delay=0.05, timeout=120)
        first = client.chat([{"role": "user", "content": "Write a Python function add(a, b) returning a + b."}],
                            purpose="task_generation")
        second = client.chat_json([{"role": "user", "content": 'Answer with JSON only: {"answer": <2+2>}'}],
                                  purpose="memory_update")
        stats = server.stats()
    assert "def add" in first.text or "return" in first.text, first.text
    assert second is None or isinstance(second, (dict, list))  # parsed, or counted as a json failure
    assert stats["faults"] == {"429": 1, "reset": 1, "truncated_body": 1, "503": 1}
    assert stats["paid"] == 2 and stats["duplicate_paid"] == 0
    assert client.ledger.events[0]["retries"] == 4
