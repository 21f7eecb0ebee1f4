"""Context-window margins and backbone settings against the FaultServer (scripted replies, not a
model's), through the real client and litellm's transports: a provider's
context-length error is re-fitted once to the limit it reports; GPT-5 mini's reasoning effort and
cap are sent, its reasoning tokens recorded and an empty visible output flagged; Qwen3's OpenRouter
provider is pinned."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from reconmem.platform.llm import BackboneSpec, ContextLengthExceeded, LLMClient, UsageLedger

CONF = Path(__file__).resolve().parents[2] / "conf" / "backbone"
LOREM = "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 30


def _conversation(turns: int = 12) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": "You are a helpful code assistant."}]
    for i in range(turns):
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}: {LOREM}"})
    return msgs + [{"role": "user", "content": "What did we decide in the last turn?"}]


def _client(server, *, window: int = 32768, **spec_kw) -> LLMClient:
    spec = BackboneSpec(name="oc", model="openai/served-model", context_window=window, max_output_tokens=64,
                        api_base=server.url, **spec_kw)
    return LLMClient(spec, ledger=UsageLedger(), retry_base_delay=0.01, retry_max_delay=0.05, timeout=2.0)


def _from_conf(name: str, server) -> LLMClient:
    node = OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"))
    node.update(api_base=server.url, api_key_env=None)
    return LLMClient(BackboneSpec.from_config(node), ledger=UsageLedger(), retry_base_delay=0.01, timeout=2.0)


def test_context_error_is_refitted_once_to_the_reported_limit(fault_server, caplog):
    fault_server.context_limit = 2000  # the provider's real window is smaller than the configured one
    client = _client(fault_server)
    messages = _conversation()
    ours = client.count_tokens(messages)
    with caplog.at_level(logging.WARNING, logger="reconmem.platform.llm.client"):
        reply = client.chat(messages, purpose="turn_generation")
    assert "return a + b" in reply.text
    stats = fault_server.stats()
    assert stats["requests"] == 2 and stats["faults"] == {"context_limit": 1} and stats["paid"] == 1
    (event,) = client.ledger.events
    refit = event["refit"]
    assert refit["reported_limit"] == 2000 and refit["reported_prompt_tokens"] > 2000 - 64
    assert refit["tokens_before"] == ours and refit["tokens_after"] <= refit["prompt_budget"] < ours
    assert refit["trimmed_history"] > 0  # the oldest turns went; system message and question kept
    assert any("re-fitted once" in r.getMessage() for r in caplog.records)


def test_a_second_context_error_after_the_refit_is_raised(fault_server):
    fault_server.context_limit = 2000
    fault_server.plan = ["ok", "context_deepseek"]  # the re-fitted request is refused too
    client = _client(fault_server)
    with pytest.raises(ContextLengthExceeded, match="after one re-fit") as info:
        client.chat(_conversation(), purpose="turn_generation")
    assert info.value.limit_tokens == 131072 and fault_server.stats()["requests"] == 2  # never a third
    assert client.ledger.events == []


def test_context_error_that_trimming_cannot_help_is_raised_at_once(fault_server):
    fault_server.context_limit = 40  # not even the question fits
    client = _client(fault_server)
    with pytest.raises(ContextLengthExceeded):
        client.chat([{"role": "user", "content": LOREM}], purpose="turn_generation")
    fault_server.plan = ["context_openai"]  # reports 128,000 tokens: our prompt is far below, nothing to trim
    with pytest.raises(ContextLengthExceeded):
        client.chat([{"role": "user", "content": "short"}], purpose="turn_generation")
    assert fault_server.stats()["requests"] <= 3


@pytest.mark.parametrize("fault,limit,prompt", [("context_openai", 128000, 131000), ("context_anthropic", 200000, 215000),
                                                ("context_gemini", 1048576, 1200000), ("context_deepseek", 131072, 139000),
                                                ("context_vllm", 32768, 32768), ("context_llamacpp", 32768, 40000)])
def test_each_wording_reports_its_limit(fault_server, fault, limit, prompt):
    fault_server.storm = fault
    with pytest.raises(ContextLengthExceeded) as info:
        _client(fault_server).chat([{"role": "user", "content": "hi"}], purpose="judge")
    assert (info.value.limit_tokens, info.value.prompt_tokens) == (limit, prompt)


def test_count_margin_shrinks_the_prompt_budget():
    from reconmem.platform.fit import window_budget
    from reconmem.platform.llm.margins import default_count_margin

    qwen = BackboneSpec.from_config(OmegaConf.load(CONF / "qwen3_235b.yaml"))
    assert default_count_margin(qwen.model) == pytest.approx(0.16)
    assert window_budget(262144, 8192, 0.16) == int((262144 - 8192) / 1.16)
    assert default_count_margin("local/qwen2.5-coder-0.5b-instruct") == 0.0
    assert default_count_margin("openai/served-model", "http://127.0.0.1:1/v1") == default_count_margin("gemini/x")
    with pytest.raises(ValueError, match="backbone.count_margin"):
        BackboneSpec.from_config({**OmegaConf.to_container(OmegaConf.load(CONF / "local.yaml")), "count_margin": 1.5})


def test_gpt5_mini_reasoning_effort_and_cap_are_sent_and_reasoning_tokens_recorded(fault_server, caplog):
    bodies = []

    def reasoning_reply(body):  # scripted: the whole cap went to reasoning, nothing visible
        bodies.append(body)
        return {"content": "", "finish_reason": "length", "reasoning_tokens": body["max_completion_tokens"]}

    fault_server.reply = reasoning_reply
    client = _from_conf("gpt5_mini", fault_server)
    with caplog.at_level(logging.WARNING, logger="reconmem.platform.llm.client"):
        reply = client.chat([{"role": "user", "content": "Implement add."}], purpose="task_generation", max_tokens=1024)
    body = bodies[-1]
    assert body["reasoning_effort"] == "medium" and body["max_completion_tokens"] == 1024 + 8192
    assert reply.text == "" and reply.finish_reason == "length" and reply.usage.reasoning_tokens == 9216
    (event,) = client.ledger.events
    assert event["reasoning_tokens"] == 9216 and event["empty_output"] is True
    assert any("empty visible output" in r.getMessage() and "reasoning_max_tokens" in r.getMessage()
               for r in caplog.records)

    fault_server.reply = lambda body: {"content": "def add(a, b): return a + b", "reasoning_tokens": 700}
    ok = client.chat([{"role": "user", "content": "Again."}], purpose="task_generation", max_tokens=1024)
    assert ok.usage.reasoning_tokens == 700 and client.ledger.events[-1]["reasoning_tokens"] == 700
    assert "empty_output" not in client.ledger.events[-1]


def test_qwen3_openrouter_provider_is_pinned(fault_server):
    bodies = []
    fault_server.reply = lambda body: bodies.append(body) or "ok"
    client = _from_conf("qwen3_235b", fault_server)
    client.chat([{"role": "user", "content": "hi"}], purpose="judge")
    assert bodies[-1]["provider"] == {"order": ["fireworks"], "allow_fallbacks": False}
    assert client.spec.settings_record()["provider"] == {"order": ["fireworks"], "allow_fallbacks": False}
