"""Provider batch submit / poll / collect (reconmem.platform.llm.batch) against the loopback stand-in
for OpenAI's Batch API (tests/http/batch_server.py: scripted replies, not a model's). The server
counts every custom_id it receives in a batch and every one it answers (what the provider bills):
a resubmission never sends an answered or in-flight request again."""

from __future__ import annotations

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

CONF = Path(__file__).resolve().parents[2] / "conf" / "backbone"
KEY_ENV = "OPENAI_API_KEY"


def gpt5_mini(api_base: str) -> BackboneSpec:
    """The shipped gpt5_mini backbone, pointed at the stand-in."""
    import yaml

    node = yaml.safe_load((CONF / "gpt5_mini.yaml").read_text())
    return BackboneSpec.from_config({**node, "api_base": api_base})


def request_line(cid: str, text: str, *, json_mode: bool = False) -> dict:
    return {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "exchange", "messages": [{"role": "user", "content": text}], "max_tokens": 64,
                     "temperature": 0.0, "json_mode": json_mode}}


def write_requests(run: Path, lines: list[dict]) -> None:
    folder = run / "exchange"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "requests.jsonl").open("a") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")


class RecordingImporter:
    """Stands in for the exchange's import in these unit tests: records each answers file's lines."""

    def __init__(self) -> None:
        self.answers: dict[str, dict] = {}
        self.files: list[Path] = []

    def __call__(self, run_dir: Path, path: Path) -> None:
        self.files.append(path)
        for raw in path.read_text().splitlines():
            row = json.loads(raw)
            assert row["custom_id"] not in self.answers, "an answer imported twice"
            self.answers[row["custom_id"]] = row["response"]["body"]


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
    write_requests(path, [request_line(f"r{i}", f"question {i}") for i in range(4)])
    return path


def test_submit_poll_collect_prices_at_the_batch_rate(server, run):
    spec = gpt5_mini(server.url)
    server.hold = True
    report = submit(run, spec)
    assert report.submitted == 4 and report.batch is not None and report.batch.status == "validating"
    assert dict(server.received) == {f"r{i}": 1 for i in range(4)}
    body = server.bodies["r0"]  # the request gpt5_mini's client would send: GPT-5's parameters
    assert body["model"] == "gpt-5-mini" and body["max_completion_tokens"] == 64 + 8192
    assert body["reasoning_effort"] == "medium" and "temperature" not in body and "max_tokens" not in body

    importer = RecordingImporter()
    held = collect(run, importer=importer)
    assert held.running == 1 and held.answered == 0 and not importer.files
    assert [b.status for b in poll(run)] == ["in_progress"]

    server.hold = False
    done = collect(run, importer=importer)
    assert done.answered == 4 and done.unanswered == 0 and not done.errors
    assert set(importer.answers) == {f"r{i}" for i in range(4)}
    record = BatchState.load(run / "exchange").batches[0]
    assert record.status == "completed" and record.collected_at and record.price_source == "litellm batch"
    # GPT-5 mini's batch price: $0.125 / $1.00 per 1M tokens (half the standard $0.25 / $2.00)
    assert record.cost_usd == pytest.approx(record.input_tokens * 0.125e-6 + record.output_tokens * 1.0e-6)
    assert record.input_tokens > 0 and record.output_tokens > 0
    assert (run / "exchange" / f"batch-{record.batch_id}-output.jsonl").is_file()
    again = collect(run, importer=importer)  # nothing left to collect: nothing imported twice
    assert again.answered == 0 and len(importer.files) == 1


def test_resubmission_pays_nothing_twice(server, run):
    spec = gpt5_mini(server.url)
    server.hold = True
    submit(run, spec)
    second = submit(run, spec)  # all four in flight
    assert second.batch is None and second.skipped_in_flight == 4 and len(server.batches) == 1
    server.hold = False
    importer = RecordingImporter()
    collect(run, importer=importer)
    assert submit(run, spec).batch is None  # all answered
    write_requests(run, [request_line("r4", "a new question"), request_line("r0", "question 0")])
    third = submit(run, spec)
    assert third.submitted == 1 and third.batch.custom_ids == ["r4"]
    collect(run, importer=importer)
    assert set(importer.answers) == {f"r{i}" for i in range(5)}
    assert max(server.received.values()) == 1 and server.duplicate_paid() == {}


def test_partial_failure_leaves_the_failed_pending_with_their_reasons(server, run):
    spec = gpt5_mini(server.url)
    server.fail_ids, server.error_ids = {"r1"}, {"r2"}
    submit(run, spec)
    importer = RecordingImporter()
    report = collect(run, importer=importer)
    assert report.answered == 2 and report.unanswered == 2 and set(importer.answers) == {"r0", "r3"}
    text = "\n".join(report.lines)
    assert "unanswered r1: batch-" in text and "HTTP 500: injected 500" in text
    assert "unanswered r2: batch-" in text and "server_error: injected request error" in text
    assert "submittable again" in text

    server.fail_ids, server.error_ids = set(), set()
    retry = submit(run, spec)
    assert sorted(retry.batch.custom_ids) == ["r1", "r2"] and retry.resubmitted == 2
    collect(run, importer=importer)
    assert set(importer.answers) == {f"r{i}" for i in range(4)}
    assert server.duplicate_paid() == {}  # the failed requests were not billed, the answered not sent again
    assert server.received == {"r0": 1, "r1": 2, "r2": 2, "r3": 1}


def test_an_expired_batch_keeps_its_answers_and_resubmits_only_the_unanswered(server, run):
    spec = gpt5_mini(server.url)
    server.expire_after = 1
    submit(run, spec)
    importer = RecordingImporter()
    report = collect(run, importer=importer)
    record = BatchState.load(run / "exchange").batches[0]
    assert record.status == "expired" and record.answered == ["r0"]
    assert report.answered == 1 and report.unanswered == 3 and "batch_expired" in "\n".join(report.lines)
    server.expire_after = None
    retry = submit(run, spec)
    assert sorted(retry.batch.custom_ids) == ["r1", "r2", "r3"]
    collect(run, importer=importer)
    assert set(importer.answers) == {f"r{i}" for i in range(4)} and server.duplicate_paid() == {}


def test_a_batch_failing_validation_answers_nothing_and_says_why(server, run):
    spec = gpt5_mini(server.url)
    server.reject = "Invalid value for 'model'"
    submit(run, spec)
    report = collect(run, importer=RecordingImporter())
    assert report.answered == 0 and report.unanswered == 4
    assert "failed" in report.lines[0] and "Invalid value for 'model'" in report.lines[0]
    server.reject = None
    assert submit(run, spec).submitted == 4


def test_a_lost_create_answer_is_found_on_the_provider_not_sent_again(server, run):
    spec = gpt5_mini(server.url)
    server.hold, server.lose_create = True, True
    with pytest.raises(BatchError, match="got no answer"):
        submit(run, spec)
    assert BatchState.load(run / "exchange").batches[0].status == SUBMITTING
    again = submit(run, spec)
    assert again.batch is None and again.skipped_in_flight == 4
    assert "found batch" in again.resolved[0]
    assert len(server.batches) == 1 and max(server.received.values()) == 1


def test_the_api_key_comes_from_the_backbones_variable(server, run, monkeypatch):
    spec = gpt5_mini(server.url)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(BatchError, match=f"{KEY_ENV} is not set"):
        submit(run, spec)
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    with pytest.raises(BatchError, match="upload.*failed"):
        submit(run, spec)
    assert server.unauthorized >= 1 and not server.batches
    assert BatchState.load(run / "exchange").batches[0].status == NOT_SUBMITTED
    monkeypatch.setenv(KEY_ENV, "sk-stand-in")
    assert submit(run, spec).submitted == 4


def test_backbones_without_a_batch_api_and_bad_requests_are_one_line_errors(server, run, tmp_path):
    deepseek = BackboneSpec(name="deepseek_v32", model="deepseek/deepseek-chat", context_window=131072,
                            max_output_tokens=8192, api_key_env=KEY_ENV)
    with pytest.raises(BatchError, match="deepseek_v32.*no batch API through litellm for provider 'deepseek'"):
        submit(run, deepseek)
    bad = tmp_path / "bad"
    write_requests(bad, [request_line("x", "q")])
    with (bad / "exchange" / "requests.jsonl").open("a") as fh:
        fh.write('{"custom_id": "y", "body": "not an object"}\n')
    with pytest.raises(BatchError, match=r"requests.jsonl:2: body: expected an object"):
        submit(bad, gpt5_mini(server.url))
    with pytest.raises(BatchError, match="no exchange requests"):
        submit(tmp_path / "none", gpt5_mini(server.url))
