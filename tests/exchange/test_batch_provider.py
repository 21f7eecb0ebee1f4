"""Provider batch submit / poll / collect (reconmem.platform.llm.batch) against the loopback stand-in
for OpenAI's Batch API (tests/http/batch_server.py: scripted replies, not a model's). The server
counts every custom_id it receives in a batch and every one it answers (what the provider bills):
a resubmission never sends an answered or in-flight request again."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

HTTP = Path(__file__).resolve().parents[1] / "http"
sys.path.insert(0, str(HTTP))

from batch_server import BatchServer  # noqa: E402

from reconmem.platform.llm import BackboneSpec  # noqa: E402
from reconmem.platform.llm.batch import (  # noqa: E402
    NOT_SUBMITTED,
    SUBMITTING,
    BatchError,
    BatchState,
    collect,
    poll,
    submit,
)
from reconmem.platform.llm.exchange import ExchangeFolder, custom_id, exchange_dir, pending_requests  # noqa: E402

CONF = Path(__file__).resolve().parents[2] / "conf" / "backbone"
KEY_ENV = "OPENAI_API_KEY"


def gpt5_mini(api_base: str) -> BackboneSpec:
    """The shipped gpt5_mini backbone, pointed at the stand-in."""
    import yaml

    node = yaml.safe_load((CONF / "gpt5_mini.yaml").read_text())
    return BackboneSpec.from_config({**node, "api_base": api_base})


def ask(run: Path, *questions: str, model: str = "openai/gpt-5-mini") -> list[str]:
    """Write requests as gpt5_mini's client builds them into the run's exchange folder; their ids."""
    folder = ExchangeFolder(exchange_dir(run))
    ids = []
    for text in questions:
        request = {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": 64 + 8192,
                   "temperature": 0.0, "tools": None, "json_mode": False, "stop": None, "api_base": None,
                   "reasoning_effort": "medium"}
        key = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
        ids.append(custom_id(key))
        folder.write_request(ids[-1], key, request, purpose="turn_generation", backbone="gpt5_mini",
                             sample=None, position=None)
    return ids


def answered(run: Path) -> dict[str, str]:
    """custom_id -> the imported answer's text."""
    folder = ExchangeFolder(exchange_dir(run))
    return {cid: folder.stored(cid)["completion"]["text"] for cid in folder.batch_lines() if folder.answered(cid)}


@pytest.fixture()
def server(monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(KEY_ENV, "sk-stand-in")
    with BatchServer(api_key="sk-stand-in") as srv:
        yield srv


@pytest.fixture()
def run(tmp_path):
    path = tmp_path / "run"
    return path, ask(path, *(f"question {i}" for i in range(4)))


def test_submit_poll_collect_prices_at_the_batch_rate(server, run):
    run, ids = run
    spec = gpt5_mini(server.url)
    server.hold = True
    report = submit(run, spec)
    assert report.submitted == 4 and report.batch is not None and report.batch.status == "validating"
    assert dict(server.received) == {cid: 1 for cid in ids}
    body = server.bodies[ids[0]]  # what litellm.completion would send GPT-5 mini
    assert body["model"] == "gpt-5-mini" and body["max_completion_tokens"] == 64 + 8192
    assert body["reasoning_effort"] == "medium" and "temperature" not in body and "max_tokens" not in body

    held = collect(run)
    assert held.running == 1 and held.answered == 0 and not answered(run)
    assert [b.status for b in poll(run)] == ["in_progress"]

    server.hold = False
    done = collect(run)
    assert done.answered == 4 and done.unanswered == 0 and not done.errors
    assert set(answered(run)) == set(ids) and not pending_requests(run)
    record = BatchState.load(exchange_dir(run)).batches[0]
    assert record.status == "completed" and record.collected_at and record.price_source == "litellm batch"
    # GPT-5 mini's batch price: $0.125 / $1.00 per 1M tokens (half the standard $0.25 / $2.00)
    assert record.input_tokens > 0 and record.output_tokens > 0
    assert record.cost_usd == pytest.approx(record.input_tokens * 0.125e-6 + record.output_tokens * 1.0e-6)
    assert (exchange_dir(run) / f"batch-{record.batch_id}-output.jsonl").is_file()
    again = collect(run)  # nothing left to collect
    assert again.answered == 0 and again.running == 0


def test_resubmission_pays_nothing_twice(server, run):
    run, ids = run
    spec = gpt5_mini(server.url)
    server.hold = True
    submit(run, spec)
    second = submit(run, spec)  # all four in flight
    assert second.batch is None and second.skipped_in_flight == 4 and len(server.batches) == 1
    server.hold = False
    collect(run)
    assert submit(run, spec).batch is None  # all answered
    new = ask(run, "a new question", "question 0")  # question 0 again: the same request id
    assert new[1] == ids[0]
    third = submit(run, spec)
    assert third.submitted == 1 and third.batch.custom_ids == [new[0]]
    collect(run)
    assert set(answered(run)) == {*ids, new[0]}
    assert max(server.received.values()) == 1 and server.duplicate_paid() == {}


def test_partial_failure_leaves_the_failed_pending_with_their_reasons(server, run):
    run, ids = run
    spec = gpt5_mini(server.url)
    server.fail_ids, server.error_ids = {ids[1]}, {ids[2]}
    submit(run, spec)
    report = collect(run)
    assert report.answered == 2 and report.unanswered == 2 and set(answered(run)) == {ids[0], ids[3]}
    assert {r["custom_id"] for r in pending_requests(run)} == {ids[1], ids[2]}
    text = "\n".join(report.lines)
    assert f"unanswered {ids[1]}: batch-" in text and "HTTP 500: injected 500" in text
    assert f"unanswered {ids[2]}: batch-" in text and "server_error: injected request error" in text
    assert "submittable again" in text

    server.fail_ids, server.error_ids = set(), set()
    retry = submit(run, spec)
    assert sorted(retry.batch.custom_ids) == sorted(ids[1:3]) and retry.resubmitted == 2
    collect(run)
    assert set(answered(run)) == set(ids) and not pending_requests(run)
    assert server.duplicate_paid() == {}  # the failed requests were not billed, the answered not sent again
    assert server.received == {ids[0]: 1, ids[1]: 2, ids[2]: 2, ids[3]: 1}


def test_an_answer_the_exchange_rejects_stays_pending(server, run):
    run, ids = run
    spec = gpt5_mini(server.url)
    server.reply = lambda body: "" if "question 3" in json.dumps(body) else "An answer."
    submit(run, spec)
    report = collect(run)
    assert report.answered == 3 and [r["custom_id"] for r in pending_requests(run)] == [ids[3]]
    assert f"unanswered {ids[3]}: answered but not imported: " in "\n".join(report.lines)
    assert "empty answer" in "\n".join(report.lines)


def test_an_expired_batch_keeps_its_answers_and_resubmits_only_the_unanswered(server, run):
    run, ids = run
    spec = gpt5_mini(server.url)
    server.expire_after = 1
    submit(run, spec)
    report = collect(run)
    record = BatchState.load(exchange_dir(run)).batches[0]
    assert record.status == "expired" and record.answered == [ids[0]]
    assert report.answered == 1 and report.unanswered == 3 and "batch_expired" in "\n".join(report.lines)
    server.expire_after = None
    retry = submit(run, spec)
    assert sorted(retry.batch.custom_ids) == sorted(ids[1:])
    collect(run)
    assert set(answered(run)) == set(ids) and server.duplicate_paid() == {}


def test_a_batch_failing_validation_answers_nothing_and_says_why(server, run):
    run, ids = run
    spec = gpt5_mini(server.url)
    server.reject = "Invalid value for 'model'"
    submit(run, spec)
    report = collect(run)
    assert report.answered == 0 and report.unanswered == 4
    assert "failed" in report.lines[0] and "Invalid value for 'model'" in report.lines[0]
    server.reject = None
    assert submit(run, spec).submitted == 4


def test_a_lost_create_answer_is_found_on_the_provider_not_sent_again(server, run):
    run, ids = run
    spec = gpt5_mini(server.url)
    server.hold, server.lose_create = True, True
    with pytest.raises(BatchError, match="got no answer"):
        submit(run, spec)
    assert BatchState.load(exchange_dir(run)).batches[0].status == SUBMITTING
    for _ in range(3):  # later batches of another client push it to the provider's second page
        server.create_batch({"input_file_id": server.add_file(b"", "batch")["id"], "endpoint": "/v1/chat/completions",
                             "completion_window": "24h"})
    server.page_size = 2
    again = submit(run, spec)
    assert again.batch is None and again.skipped_in_flight == 4
    assert "found batch" in again.resolved[0]
    assert len(server.batches) == 4 and max(server.received.values()) == 1


def test_an_unreachable_provider_sends_nothing_and_keeps_the_state(server, run):
    run, ids = run
    spec = gpt5_mini(server.url)
    server.hold, server.lose_create = True, True
    with pytest.raises(BatchError):
        submit(run, spec)
    with pytest.raises(BatchError, match="cannot list the provider's batches to find it"):
        submit(run, gpt5_mini("http://127.0.0.1:9/v1"), api_base="http://127.0.0.1:9/v1")
    assert [b.status for b in BatchState.load(exchange_dir(run)).batches] == [SUBMITTING]
    assert len(server.batches) == 1


def test_the_api_key_comes_from_the_backbones_variable(server, run, monkeypatch):
    run, ids = run
    spec = gpt5_mini(server.url)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(BatchError, match=f"{KEY_ENV} is not set"):
        submit(run, spec)
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    with pytest.raises(BatchError, match="upload.*failed"):
        submit(run, spec)
    assert server.unauthorized >= 1 and not server.batches
    assert BatchState.load(exchange_dir(run)).batches[0].status == NOT_SUBMITTED
    monkeypatch.setenv(KEY_ENV, "sk-stand-in")
    assert submit(run, spec).submitted == 4


def test_only_the_backbones_own_requests_are_sent(server, run):
    run, ids = run
    other = ask(run, "for another backbone", model="deepseek/deepseek-chat")
    report = submit(run, gpt5_mini(server.url))
    assert report.submitted == 4 and other[0] not in server.received
    assert "not sent: waiting requests of other models (deepseek/deepseek-chat)" in "\n".join(report.lines())


def test_backbones_without_a_batch_api_and_runs_without_requests_are_one_line_errors(server, run, tmp_path):
    run, ids = run
    deepseek = BackboneSpec(name="deepseek_v32", model="deepseek/deepseek-chat", context_window=131072,
                            max_output_tokens=8192, api_key_env=KEY_ENV)
    with pytest.raises(BatchError, match="deepseek_v32.*no batch API through litellm for provider 'deepseek'"):
        submit(run, deepseek)
    with pytest.raises(BatchError, match="no exchange requests"):
        submit(tmp_path / "none", gpt5_mini(server.url))
    with pytest.raises(BatchError, match="no batches submitted"):
        collect(run)


def test_collect_wait_polls_until_the_batch_finishes(server, run, capsys):
    from scripts.exchange import main as exchange_main

    run, ids = run
    assert exchange_main(["submit", str(run), "--backbone", "gpt5_mini", "--api-base", server.url]) == 0
    server.hold_polls = 3
    assert exchange_main(["collect", str(run), "--wait", "--interval", "0.01"]) == 0
    out = capsys.readouterr().out
    assert out.count("1 batch(es) running; next poll in 0.01 s") == 3
    assert "4 answer(s) imported, 0 unanswered, 0 batch(es) running" in out and set(answered(run)) == set(ids)


def test_a_large_submission_is_split_at_the_providers_file_limits(server, run):
    run, ids = run
    report = submit(run, gpt5_mini(server.url), max_requests=3)
    assert [len(b.custom_ids) for b in report.batches] == [3, 1] and len(server.batches) == 2
    assert "batch batch-" in report.lines()[0] and "(3, validating)" in report.lines()[0]
    collect(run)
    assert set(answered(run)) == set(ids) and max(server.received.values()) == 1
