"""The real client (litellm's OpenAI provider over HTTP) against each injected fault of the
FaultServer (scripted replies): what is retried, how often, what is raised, what is recorded."""

from __future__ import annotations

import logging

import pytest

from fault_server import CONTEXT_ERRORS
from reconmem.platform.llm import BackboneSpec, ContextLengthExceeded, CostLimitReached, LLMClient, LLMError, UsageLedger

MSGS = [{"role": "user", "content": "Please write add now."}]


def _client(server, tmp_path=None, **kw):
    spec = BackboneSpec(name="oc", model="openai/served-model", context_window=32768, max_output_tokens=64,
                        api_base=server.url, pricing_model=kw.pop("pricing_model", None))
    kw.setdefault("retry_base_delay", 0.01)
    kw.setdefault("retry_max_delay", 0.05)
    kw.setdefault("timeout", 1.0)
    return LLMClient(spec, ledger=kw.pop("ledger", UsageLedger()),
                     cache_path=(tmp_path / "cache") if tmp_path else None, **kw)


@pytest.mark.parametrize("fault", ["429", "500", "502", "503", "reset", "timeout", "empty_choice", "truncated_body"])
def test_transient_fault_is_retried_once_then_answered(fault_server, fault, caplog):
    fault_server.plan = [fault]
    client = _client(fault_server)
    with caplog.at_level(logging.WARNING, logger="reconmem.platform.llm"):
        reply = client.chat(MSGS, purpose="task_generation")
    assert "return a + b" in reply.text
    stats = fault_server.stats()
    assert stats["requests"] == 2 and stats["paid"] == 1, stats  # no hidden retries inside the SDK
    (event,) = client.ledger.events
    assert event["retries"] == 1 and event["cached"] is False
    assert any("retrying" in r.getMessage() for r in caplog.records)


def test_retries_are_bounded_and_the_error_names_the_attempts(fault_server):
    fault_server.storm = "503"
    client = _client(fault_server, max_retries=3)
    with pytest.raises(LLMError, match="giving up after 4 attempts"):
        client.chat(MSGS, purpose="task_generation")
    assert fault_server.stats()["requests"] == 4
    assert client.ledger.events == []  # nothing answered, nothing recorded as paid


def test_retry_after_header_is_honoured(fault_server, monkeypatch):
    sleeps = []
    monkeypatch.setattr("reconmem.platform.llm.client.time.sleep", sleeps.append)
    fault_server.retry_after = 1.5
    fault_server.plan = ["429"]
    client = _client(fault_server, retry_base_delay=0.001, retry_max_delay=10.0)
    client.chat(MSGS, purpose="judge")
    assert sleeps == [1.5]


@pytest.mark.parametrize("fault", sorted(CONTEXT_ERRORS))
def test_context_length_error_in_each_provider_wording_is_never_retried(fault_server, fault):
    fault_server.storm = fault
    client = _client(fault_server)
    with pytest.raises(ContextLengthExceeded):
        client.chat(MSGS, purpose="turn_generation")
    assert fault_server.stats()["requests"] == 1


def test_json_cut_in_the_middle_is_counted_not_raised(fault_server):
    fault_server.plan = ["truncated_json"]
    client = _client(fault_server)
    sketch = [{"role": "user", "content": 'Answer with JSON only: {"memories": [...]}'}]
    assert client.chat_json(sketch, purpose="memory_sketching") is None
    assert client.json_failures["memory_sketching"] == 1
    assert fault_server.stats()["requests"] == 1


def test_cost_recorded_and_limit_stops_paid_calls_but_not_cached_ones(fault_server, tmp_path):
    ledger = UsageLedger(cost_limit_usd=1e-9)
    client = _client(fault_server, tmp_path, ledger=ledger, pricing_model="openai/gpt-5-mini")
    first = client.chat(MSGS, purpose="task_generation")
    (event,) = ledger.events
    expected = first.usage.input_tokens * 0.25e-6 + first.usage.output_tokens * 2e-6
    assert event["cost_usd"] == pytest.approx(expected) and event["cost_usd"] > 0
    assert client.chat(MSGS, purpose="task_generation").cached  # cached: free and never blocked
    assert ledger.events[-1]["cost_usd"] == 0
    with pytest.raises(CostLimitReached, match="cost_limit_usd"):
        client.chat([{"role": "user", "content": "another question"}], purpose="task_generation")
    assert fault_server.stats()["requests"] == 1


def test_unpriced_server_model_costs_nothing_and_is_never_blocked(fault_server):
    ledger = UsageLedger(cost_limit_usd=0.0)
    client = _client(fault_server, ledger=ledger)
    client.chat(MSGS, purpose="judge")
    assert ledger.events[0]["cost_usd"] == 0 and client.price.source == "unpriced"


def test_concurrency_cap_bounds_requests_in_flight(fault_server):
    from concurrent.futures import ThreadPoolExecutor

    fault_server.latency = 0.2
    client = _client(fault_server, max_concurrency=3)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: client.chat([{"role": "user", "content": f"q{i}"}], purpose="judge"), range(8)))
    assert fault_server.stats()["max_in_flight"] == 3
