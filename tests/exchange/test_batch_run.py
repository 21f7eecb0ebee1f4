"""A whole run answered through a provider's batch API: the one-task demo on gpt5_mini with an exchange
node, ``python -m scripts.exchange submit / collect`` against the loopback stand-in for OpenAI's Batch
API (SCRIPTED replies, ``scripted_exchange.reply``, not a model's), re-run until no sample is pending.
Every request crosses the provider once; the run finishes with the records of its answers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import cycle
import scripted_exchange

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))

from batch_server import BatchServer  # noqa: E402

from benchmarks.records import RunDir  # noqa: E402
from reconmem.platform.llm.batch import BatchState  # noqa: E402
from reconmem.platform.llm.exchange import exchange_dir, pending_requests  # noqa: E402
from scripts.exchange import main as exchange_main  # noqa: E402

ANSWERER = "+backbone.exchange.answered_by='gpt-5-mini, batch stand-in'"


@pytest.fixture()
def server(monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
    with BatchServer(api_key="sk-stand-in") as srv:
        yield srv


def test_a_run_answered_through_the_batch_api_finishes_and_pays_each_request_once(server, tmp_path, capsys):
    cache = cycle.fresh_llm_cache(tmp_path)
    overrides = ["benchmark=demo_one_task", "method=reconmem", "backbone=gpt5_mini", ANSWERER,
                 "benchmark.evaluator=demo_replies.fake_evaluate", f"run.results_dir={tmp_path / 'results'}",
                 f"cache.dir={cache}", "benchmark.progress=false", "run.run_id=batch"]
    cfg = cycle.compose(overrides)
    purposes: dict[str, str] = {}  # the stand-in sees provider bodies; the scripted replies key on the purpose
    server.reply = lambda body: scripted_exchange.reply(body["messages"], purposes[json.dumps(body["messages"])])
    cycles = 0
    while True:
        summary = cycle.run(cfg)
        run_dir = Path(summary["run_dir"])
        if not summary.get("n_pending"):
            break
        cycles += 1
        assert cycles < 60, "still pending"
        waiting = pending_requests(run_dir)
        purposes.update({json.dumps(r["line"]["body"]["messages"]): str(r["purpose"]) for r in waiting})
        assert exchange_main(["submit", str(run_dir), "--backbone", "gpt5_mini", "--api-base", server.url]) == 0
        assert "the run's manifest names who answered: {'backbone': 'gpt-5-mini, batch stand-in'}" in capsys.readouterr().out
        assert exchange_main(["collect", str(run_dir)]) == 0
        out = capsys.readouterr().out
        assert f"{len(waiting)} answer(s) imported, 0 unanswered" in out and "at the batch rate" in out
    assert summary["status_counts"] == {"ok": 1} and summary["n_missing"] == 0
    # one batch per sequential call of the conversation: ReConMem's replies and memory calls, then the task
    state = BatchState.load(exchange_dir(run_dir))
    assert cycles == len(state.batches) >= 6
    assert all(b.status == "completed" and not b.failed for b in state.batches)
    assert max(server.received.values()) == 1 and server.duplicate_paid() == {}
    assert sum(len(b.answered) for b in state.batches) == len(server.paid)
    assert RunDir(run_dir).manifest["answered_by"] == {"backbone": "gpt-5-mini, batch stand-in"}
    # the run's ledger records what the provider billed (the batch rate), not the standard rate
    billed = sum(b.cost_usd for b in state.batches)
    sample = RunDir(run_dir).sample(RunDir(run_dir).manifest["selected"][0]["sample_id"])
    paid = [e for e in sample.ledger() if not e.get("cached")]
    assert billed > 0 and paid and all(e.get("billed") == "transport" for e in paid)
    recorded = sum(e["cost_usd"] for e in paid) + sample.result()["earlier_attempts_cost_usd"]
    assert recorded == pytest.approx(billed, rel=1e-6)
    assert exchange_main(["submit", str(run_dir), "--backbone", "gpt5_mini", "--api-base", server.url]) == 0
    assert "nothing to submit: 0 request(s)" in capsys.readouterr().out


def test_the_commands_name_a_bad_backbone_in_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "exchange").mkdir(parents=True)
    (run / "exchange" / "requests.jsonl").write_text("")
    assert exchange_main(["submit", str(run), "--backbone", "no_such_backbone"]) == 2
    assert "--backbone no_such_backbone: no conf/backbone/no_such_backbone.yaml" in capsys.readouterr().err
    assert exchange_main(["submit", str(run), "--backbone", "deepseek_v32"]) == 2
    assert "no batch API through litellm for provider 'deepseek'" in capsys.readouterr().err
