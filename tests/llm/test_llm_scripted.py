"""ScriptedLLM: scripted replies through the real LLMClient code (request, ledger, JSON, context check)."""

from __future__ import annotations

import pytest

from reconmem.platform.llm import ContextLengthExceeded, LLMClient, LLMResponse, TransientLLMError, UsageLedger
from reconmem.platform.testing import ScriptedLLM, ScriptExhausted

MSGS = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]


def test_list_script_consumed_in_order_and_calls_recorded():
    llm = ScriptedLLM(["first", "second"])
    assert isinstance(llm, LLMClient)
    a = llm.chat(MSGS, purpose="turn_generation")
    b = llm.chat(MSGS, purpose="judge", max_tokens=7, stop="END")
    assert isinstance(a, LLMResponse) and (a.text, b.text) == ("first", "second")
    assert [c["purpose"] for c in llm.calls] == ["turn_generation", "judge"]
    assert llm.calls[1]["params"]["max_tokens"] == 7 and llm.calls[1]["params"]["stop"] == ["END"]
    assert llm.calls[0]["messages"] == MSGS
    assert llm.remaining == 0


def test_exhausted_script_raises_clear_error():
    llm = ScriptedLLM(["only"])
    llm.chat(MSGS, purpose="judge")
    with pytest.raises(ScriptExhausted, match=r"exhausted after 1 replies.*purpose=persona.*hello there"):
        llm.chat(MSGS, purpose="persona")


def test_callable_script_sees_messages_and_purpose():
    seen = []

    def script(messages, purpose):
        seen.append((messages[-1]["content"], purpose))
        return f"echo:{messages[-1]['content']}"

    llm = ScriptedLLM(script)
    assert llm.chat(MSGS, purpose="mock_user").text == "echo:hello there"
    assert seen == [("hello there", "mock_user")]
    assert llm.remaining is None


def test_usage_is_deterministic_approximation_and_lands_in_ledger():
    ledger = UsageLedger()
    llm = ScriptedLLM(["x" * 40], ledger=ledger)
    resp = llm.chat(MSGS, purpose="turn_generation")
    # "system\nbe brief" = 15 chars -> 4; "user\nhello there" = 16 chars -> 4; + 2*4 overhead + 3 priming
    assert resp.usage.input_tokens == 4 + 4 + 8 + 3 == llm.count_tokens(MSGS)
    assert resp.usage.output_tokens == 10 == llm.count_tokens("x" * 40)
    (event,) = ledger.events
    assert event["purpose"] == "turn_generation" and event["input_tokens"] == 19 and event["cached"] is False


def test_structured_reply_usage_and_tool_calls():
    llm = ScriptedLLM([{"text": "", "tool_calls": [{"name": "search", "arguments": {"q": "x"}}],
                        "usage": {"input_tokens": 100, "output_tokens": 5}}])
    resp = llm.chat(MSGS, purpose="maintainer_tool_step",
                    tools=[{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}])
    assert resp.usage.input_tokens == 100 and resp.usage.output_tokens == 5
    assert resp.tool_calls == [{"id": "call_0", "name": "search", "arguments": {"q": "x"}}]
    assert resp.finish_reason == "tool_calls"


def test_context_window_check_raises_before_transport():
    llm = ScriptedLLM(["never"], context_window=20)
    with pytest.raises(ContextLengthExceeded, match="does not fit the context window of 20"):
        llm.chat([{"role": "user", "content": "y" * 200}], purpose="turn_generation")
    assert llm.calls == [] and llm.remaining == 1


def test_max_tokens_clamped_to_room_left():
    llm = ScriptedLLM(["ok"], context_window=100)
    llm.chat(MSGS, purpose="judge", max_tokens=500)
    assert llm.calls[0]["params"]["max_tokens"] == 100 - llm.count_tokens(MSGS)


def test_exception_reply_is_retried_when_transient():
    llm = ScriptedLLM([TransientLLMError("overloaded"), "fine"])
    assert llm.chat(MSGS, purpose="judge").text == "fine"
    assert len(llm.calls) == 2 and len(llm.ledger) == 1


def test_chat_json_with_dict_reply_and_json_mode_flag():
    llm = ScriptedLLM([{"facts": ["a", "b"]}])
    assert llm.chat_json(MSGS, purpose="memory_extraction") == {"facts": ["a", "b"]}
    assert llm.calls[0]["params"]["json_mode"] is True
