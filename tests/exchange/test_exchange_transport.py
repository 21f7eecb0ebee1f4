"""The exchange transport under the real LLMClient, without a run: requests written in the Batch input
format, answers imported and delivered, deferred task answers, superseded pending requests, options."""

from __future__ import annotations

import json

import pytest

from reconmem.platform.llm import (BackboneSpec, ExchangePending, LiteLLMTransport, LLMClient, Transport, UsageLedger,
                                   default_transport)
from reconmem.platform.llm.exchange import (ExchangeFolder, ExchangeOptions, ExchangeTransport, import_answers,
                                            import_batch_output, pending_requests, take_deferred)
from reconmem.platform.local_model.provider import LocalTransport
from reconmem.platform.testing import ScriptedTransport, scripted_spec

MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "What does foo() do?"}]
TOOL = {"type": "function", "function": {"name": "lookup", "description": "d", "parameters": {"type": "object"}}}


def _client(tmp_path, **options) -> LLMClient:
    spec = scripted_spec("x", context_window=4096)
    inner = ScriptedTransport(lambda messages, purpose: "never sent", model=spec.model)
    transport = ExchangeTransport(inner, tmp_path / "exchange", backbone=spec.name,
                                  options=ExchangeOptions(**options))
    return LLMClient(spec, cache_path=tmp_path / "c.sqlite", transport=transport, ledger=UsageLedger())


def test_every_transport_is_one_interface():
    spec = BackboneSpec(name="a", model="openai/gpt-5-mini", context_window=1000, max_output_tokens=10)
    local = BackboneSpec(name="l", model="local/m", context_window=1000, max_output_tokens=10, local={"n_ctx": 512})
    scripted = ScriptedTransport(["x"], model="scripted/x")
    for transport in (default_transport(spec), default_transport(local), scripted,
                      ExchangeTransport(scripted, "/nonexistent", backbone="x", options=ExchangeOptions())):
        assert isinstance(transport, Transport)
    assert isinstance(default_transport(spec), LiteLLMTransport) and isinstance(default_transport(local), LocalTransport)
    assert default_transport(local).context_window(1000) == 512


def test_a_request_goes_out_and_its_answer_comes_back_through_the_cache(tmp_path):
    llm = _client(tmp_path)
    with llm.ledger.tags(sample="s1", attempt="a1", turn=1):
        with pytest.raises(ExchangePending) as info:
            llm.chat(MSGS, purpose="turn_generation", json_mode=True, stop="\n\n", tools=[TOOL])
    [cid] = info.value.request_ids
    assert len(llm.ledger) == 0 and take_deferred("a1") == []
    [line] = [json.loads(x) for x in (tmp_path / "exchange" / "requests.jsonl").read_text().splitlines()]
    assert line == {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
                    "body": {"model": "scripted/x", "messages": MSGS, "max_tokens": 1024, "temperature": 0.0,
                             "tools": [TOOL], "response_format": {"type": "json_object"}, "stop": ["\n\n"]}}
    markdown = (tmp_path / "exchange" / "requests" / f"{cid}.md").read_text()
    assert "What does foo() do?" in markdown and "one JSON object" in markdown and "tool_calls" in markdown
    [waiting] = pending_requests(tmp_path)
    assert (waiting["sample"], waiting["position"], waiting["purpose"]) == ("s1", "1.0", "turn_generation")

    answer = tmp_path / "exchange" / "answers" / f"{cid}.md"
    answer.parent.mkdir()
    answer.write_text('{"a": 1}\n```tool_calls\n[{"name": "lookup", "arguments": {"q": "foo"}}]\n```\n')
    report = import_answers(tmp_path)
    assert report.imported == [cid] and report.ok and pending_requests(tmp_path) == []
    with llm.ledger.tags(sample="s1", attempt="a2", turn=1):
        first = llm.chat(MSGS, purpose="turn_generation", json_mode=True, stop="\n\n", tools=[TOOL])
        second = llm.chat(MSGS, purpose="turn_generation", json_mode=True, stop="\n\n", tools=[TOOL])
    assert first.text == '{"a": 1}' and first.tool_calls == [{"id": "call_0", "name": "lookup", "arguments": {"q": "foo"}}]
    assert (first.cached, second.cached, second.text) == (False, True, first.text)
    assert [e["cached"] for e in llm.ledger.events] == [False, True]
    assert import_answers(tmp_path).unchanged == [cid]  # importing again changes nothing


def test_task_answers_are_deferred_not_cached_and_listed_for_the_loop(tmp_path):
    llm = _client(tmp_path)
    with llm.ledger.tags(sample="s1", attempt="a1", turn=5):
        one = llm.chat(MSGS, purpose="task_generation")
        two = llm.chat([*MSGS, {"role": "user", "content": "another task"}], purpose="task_generation")
        with pytest.raises(ExchangePending):  # not a task: stops the sample
            llm.chat(MSGS, purpose="memory_sketching")
    assert (one.text, two.text, len(llm.ledger)) == ("", "", 0)
    deferred = take_deferred("a1")
    assert len(deferred) == 2 and take_deferred("a1") == []
    assert {r["custom_id"] for r in pending_requests(tmp_path)} >= set(deferred)
    assert len(llm.cache) == 0
    off = _client(tmp_path / "off", defer_tasks=False)
    with off.ledger.tags(sample="s1", attempt="b1", turn=5), pytest.raises(ExchangePending):
        off.chat(MSGS, purpose="task_generation")


def test_a_new_prompt_at_an_unanswered_position_supersedes_the_old_request(tmp_path):
    llm = _client(tmp_path)
    for attempt, text in (("a1", "first wording"), ("a2", "second wording")):
        with llm.ledger.tags(sample="s1", attempt=attempt, turn=1), pytest.raises(ExchangePending):
            llm.chat([{"role": "user", "content": text}], purpose="turn_generation")
    waiting = pending_requests(tmp_path)
    assert len(waiting) == 1 and "second wording" in json.dumps(waiting[0]["line"])
    assert len(ExchangeFolder(tmp_path / "exchange").batch_lines()) == 2  # both written, one still asked


def test_bad_tool_calls_and_unreadable_batch_files_are_one_line(tmp_path):
    llm = _client(tmp_path)
    with llm.ledger.tags(sample="s1", attempt="a1", turn=1), pytest.raises(ExchangePending) as info:
        llm.chat(MSGS, purpose="turn_generation", tools=[TOOL])
    [cid] = info.value.request_ids
    answers = tmp_path / "exchange" / "answers"
    answers.mkdir()
    (answers / f"{cid}.md").write_text('ok\n```tool_calls\n[{"name": "rm_rf", "arguments": {}}]\n```\n')
    [error] = import_answers(tmp_path).errors
    assert error.startswith(f"{answers / cid}.md:1: ") and "'rm_rf' is not one of the request's tools (lookup)" in error
    (answers / f"{cid}.md").write_text("ok\n```tool_calls\n[{name: x}]\n```\n")
    assert "tool_calls block is not JSON" in import_answers(tmp_path).errors[0]
    missing = import_batch_output(tmp_path, tmp_path / "none.jsonl")
    assert missing.errors == [f"{tmp_path / 'none.jsonl'}: no such file"]


def test_exchange_options_are_checked(tmp_path):
    with pytest.raises(ValueError, match=r"backbone.exchange: unknown key\(s\) live_mode"):
        ExchangeOptions.from_config({"live_mode": True})
    with pytest.raises(ValueError, match="timeout_seconds and poll_seconds must be > 0"):
        ExchangeOptions.from_config({"timeout_seconds": 0})
    from omegaconf import OmegaConf

    from benchmarks.errors import ConfigError
    from benchmarks.harness import build_llm

    cfg = OmegaConf.create({"run": {"results_dir": str(tmp_path), "run_id": "r", "workers": 1},
                            "benchmark": {"name": "b"}, "method": {"name": "m"},
                            "backbone": {"name": "exchange", "model": "exchange/expert", "context_window": 1000,
                                         "max_output_tokens": 10, "exchange": {"answerd_by": "x"}},
                            "cache": {"dir": str(tmp_path / "cache"), "llm": False},
                            "llm": {"max_concurrency": None, "max_retries": 1, "timeout": 5}})
    with pytest.raises(ConfigError, match=r"^backbone.exchange: unknown key\(s\) answerd_by"):
        build_llm(cfg.backbone, cfg)
    cfg.backbone.exchange = {"answered_by": "x"}
    llm = build_llm(cfg.backbone, cfg)
    assert isinstance(llm.transport, ExchangeTransport)
    assert llm.transport.folder.path == tmp_path / "b" / "exchange" / "m" / "r" / "exchange"
