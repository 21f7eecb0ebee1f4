"""The exchange end to end on the one-task demo with SCRIPTED replies (``scripted_exchange.reply``, not a
model's): a direct run and the same replies delivered through the exchange (status / import / re-run
cycles, Batch output JSONL or ``answers/<id>.md``) give identical records minus timing, for Full,
ReConMem and the agentic Memory Tool (its ``compress_history`` tool call crosses the exchange) and for
both brackets through ``scripts.brackets``; replay asks nothing new; a changed prompt at an answered
position is refused; live mode flows in one run; bad answer files touch nothing finished.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import cycle
from benchmarks.analysis.compare_runs import compare_runs
from benchmarks.records import RunDir, Status
from reconmem.platform.llm.exchange import REQUESTS, exchange_dir, pending_requests

EXCHANGE = "+backbone.exchange.answered_by=scripted answerer"


@pytest.fixture
def cache(tmp_path_factory) -> Path:
    """An empty LLM cache per test (the index and embedding caches shared): no test replays another's answers."""
    return cycle.fresh_llm_cache(tmp_path_factory.mktemp("exchange_cache"))


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("exchange_results")


def _requests(run_dir: Path) -> int:
    path = exchange_dir(run_dir) / REQUESTS
    return len(path.read_text().splitlines()) if path.is_file() else 0


@pytest.mark.parametrize("method,answer", [("full", "batch"), ("reconmem", "markdown"), ("memory_tool", "batch")])
def test_exchange_run_gives_the_records_of_a_direct_run(results, cache, method, answer):
    direct = cycle.run(cycle.compose(cycle.demo_overrides(results, cache, method, "direct")))
    assert direct["status_counts"] == {"ok": 1}
    cfg = cycle.compose(cycle.demo_overrides(results, cache, method, "exchange", EXCHANGE))
    done = cycle.run_cycles(cfg, answer=answer)
    assert done["status_counts"] == {"ok": 1} and done["n_missing"] == 0
    # one cycle per sequential call of the conversation (4 turns and their memory calls), plus the task
    assert done["cycles"] >= 6 and done["answered"] == done["cycles"] - 1
    report = compare_runs(Path(direct["run_dir"]), Path(done["run_dir"]))
    assert report["differences"] == [] and report["identical"] == report["files"] >= 5, report["differences"]
    manifest = RunDir(done["run_dir"]).manifest
    assert manifest["answered_by"] == {"backbone": "scripted answerer"}
    if method == "memory_tool":  # the agent's compress_history call was answered through the exchange
        memory = RunDir(done["run_dir"]).sample_dirs()[0].memory()
        assert [c["span"] for c in memory["compressions"]] == [[1, 2]]

    # replay is exact: the finished run again, and a new run id over the same cache, ask nothing
    before = _requests(Path(done["run_dir"]))
    again = cycle.run(cfg)
    assert again["status_counts"] == {"ok": 1} and _requests(Path(done["run_dir"])) == before
    replay = cycle.run(cycle.compose(cycle.demo_overrides(results, cache, method, "replay", EXCHANGE)))
    assert replay["status_counts"] == {"ok": 1} and replay.get("n_pending") == 0
    assert _requests(Path(replay["run_dir"])) == 0
    assert compare_runs(Path(direct["run_dir"]), Path(replay["run_dir"]))["differences"] == []


def test_a_pending_sample_is_missing_everywhere_until_answered(results, cache):
    cfg = cycle.compose(cycle.demo_overrides(results, cache, "full", "pending", EXCHANGE))
    summary = cycle.run(cfg)
    run = RunDir(summary["run_dir"])
    sample = run.sample_dirs()[0]
    result = sample.result()
    assert result["status"] == "pending" and result["pending_requests"] == [r["custom_id"] for r in
                                                                            pending_requests(run.path)]
    assert not Status.PENDING.final and Status.PENDING.unfinished and not Status.PENDING.errored
    assert (summary["n_pending"], summary["n_missing"], summary["n_errored"]) == (1, 1, 0)
    assert [t["passed"] for t in result["tasks"]] == [False]  # the task counts, as failed
    assert not sample.file("conversation.jsonl").exists()  # partial records removed, the ledger kept
    assert sample.file("ledger.jsonl").exists()
    from benchmarks.analysis.records import load_runs

    runs = load_runs([run.path])
    [rec] = runs.runs[0].samples
    assert rec.missing and not rec.errored and not rec.ok
    # a re-run without answers asks the same request again and writes it once
    again = cycle.run(cfg)
    assert again["n_pending"] == 1 and _requests(run.path) == 1
    from scripts.exchange import main

    [waiting] = pending_requests(run.path)
    out = _run_main(main, ["status", str(run.path.parent)])
    assert out["code"] == 0 and f"{run.path}: 1 request(s) waiting; samples: 1 pending" in out["stdout"]
    assert f"  {sample.name}: 1 waiting (1 turn_generation)" in out["stdout"]
    assert f"{waiting['custom_id']}  position 1.0  turn_generation  {waiting['markdown']}" in out["stdout"]
    assert _run_main(main, ["status", str(run.path), "--paths"])["stdout"].split() == [waiting["markdown"]]
    assert _run_main(main, ["status", str(run.path / "samples")])["code"] == 2  # no exchange run there


def test_a_changed_prompt_at_an_answered_position_names_both_hashes(results, cache):
    cfg = cycle.compose(cycle.demo_overrides(results, cache, "full", "conflict", EXCHANGE))
    done = cycle.run_cycles(cfg)
    run = RunDir(done["run_dir"])
    result_file = run.sample_dirs()[0].file("result.json")
    result_file.unlink()  # as if the finished sample had been lost: it is redone
    changed = cycle.compose(cycle.demo_overrides(results, cache, "full", "conflict", EXCHANGE,
                                                 "benchmark.turn_max_tokens=47"))
    summary = cycle.run(changed)
    result = run.sample_dirs()[0].result()
    assert summary["status_counts"] == {"error": 1}
    error = result["error"]
    assert error.startswith("ExchangeConflict") and "call position 1.0" in error
    hashes = [w for w in error.replace(")", " ").split() if w.startswith("req_")]
    assert len(set(hashes)) == 2 and "\n" not in error


def test_bad_answer_files_are_one_line_each_and_touch_nothing_finished(results, cache, tmp_path):
    from reconmem.platform.llm.exchange import ExchangeFolder
    from scripts.exchange import main

    cfg = cycle.compose(cycle.demo_overrides(results, cache, "full", "bad", EXCHANGE))
    run_dir = Path(cycle.run_cycles(cfg)["run_dir"])
    folder = ExchangeFolder(exchange_dir(run_dir))
    cid, row = next(iter(folder.index().items()))
    request = {"custom_id": cid, "line": folder.batch_lines()[cid], "purpose": row["purpose"]}
    good = cycle.batch_output_line(request, 0)
    others = [c for c in folder.index() if c != cid]
    errors = [
        {**good, "custom_id": "req_000000000000000000000000"},                                   # unknown id
        {**good, "custom_id": others[0], "error": {"code": "server_error", "message": "overloaded"},
         "response": None},                                                                      # provider error
        {**good, "custom_id": others[1], "response": {"status_code": 500, "body": {"error": {"message": "boom"}}}},
        {**good, "custom_id": others[2], "response": {"status_code": 200, "body": {"model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "length"}]}}},
        good,                                                                                    # the same again
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(e) + "\n" for e in errors) + json.dumps(good)[:40] + "\n")
    answers = exchange_dir(run_dir) / "answers"
    answers.mkdir()
    (answers / f"{cid}.md").write_text("   \n")
    (answers / "req_111111111111111111111111.md").write_text("an answer to nothing")
    second = others[3]
    (answers / f"{second}.md").write_text("```python\ndef f():\n")
    snapshot = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}

    out = _run_main(main, ["import", str(run_dir), str(bad)])
    assert out["code"] == 1
    lines = [line for line in out["stdout"].splitlines() if line.startswith("error:")]
    assert [line.split(": ", 2)[1] for line in lines] == [f"{bad}:{n}" for n in (1, 2, 3, 4, 6)], lines
    assert "unknown request id" in lines[0] and "overloaded" in lines[1] and "HTTP 500" in lines[2]
    assert "truncated" in lines[3] and "truncated line" in lines[4]
    assert "1 already there" in out["stdout"]  # line 5: the same answer again changes nothing
    out = _run_main(main, ["import", str(run_dir)])
    lines = sorted(line for line in out["stdout"].splitlines() if line.startswith("error:"))
    assert out["code"] == 1 and len(lines) == 3, lines
    assert f"{answers / (cid + '.md')}:1: empty answer" in out["stdout"]
    assert f"{answers / (second + '.md')}:1: truncated answer" in out["stdout"]
    assert f"{answers / 'req_111111111111111111111111.md'}:1: unknown request id" in out["stdout"]
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p in snapshot} == snapshot

    dup = tmp_path / "dup.jsonl"
    other = json.loads(json.dumps(good))
    other["response"]["body"]["choices"][0]["message"]["content"] = "something else"
    dup.write_text(json.dumps(good) + "\n" + json.dumps(other) + "\n")
    out = _run_main(main, ["import", str(run_dir), str(dup)])
    assert out["code"] == 1 and f"error: {dup}:2: duplicate answer to {cid} (first at line 1)" in out["stdout"]
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps(other) + "\n")
    out = _run_main(main, ["import", str(run_dir), str(changed)])
    assert out["code"] == 1 and "already has a different answer" in out["stdout"] and "never replaced" in out["stdout"]
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p in snapshot} == snapshot
    assert _run_main(main, ["import", str(run_dir), str(tmp_path / "nope.jsonl")])["code"] == 2


def _run_main(main, argv):
    import contextlib
    import io

    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(argv)
    return {"code": code, "stdout": buf.getvalue(), "stderr": err.getvalue()}


def test_live_mode_flows_a_whole_conversation_in_one_run(results, cache):
    """A SCRIPTED answerer thread writes answers/<id>.md as requests appear; the run finishes in one go."""
    direct = cycle.run(cycle.compose(cycle.demo_overrides(results, cache, "reconmem", "live_direct")))
    cfg = cycle.compose(cycle.demo_overrides(results, cache, "reconmem", "live", EXCHANGE, "+backbone.exchange.live=true",
                                             "+backbone.exchange.poll_seconds=0.02",
                                             "+backbone.exchange.timeout_seconds=60"))
    run_dir = cycle.compose_run_dir(cfg)
    stop = threading.Event()
    answered: list[str] = []

    def answerer() -> None:
        while not stop.is_set():
            for request in pending_requests(run_dir):
                target = exchange_dir(run_dir) / "answers" / f"{request['custom_id']}.md"
                if not target.exists():
                    target.parent.mkdir(exist_ok=True)
                    tmp = target.with_suffix(".tmp")
                    tmp.write_text(cycle.markdown_answer(request))
                    tmp.rename(target)
                    answered.append(request["custom_id"])
            time.sleep(0.02)

    thread = threading.Thread(target=answerer, daemon=True)
    thread.start()
    try:
        summary = cycle.run(cfg)
    finally:
        stop.set()
        thread.join(5)
    assert summary["status_counts"] == {"ok": 1} and summary["n_pending"] == 0 and len(answered) >= 10
    assert compare_runs(Path(direct["run_dir"]), Path(summary["run_dir"]))["differences"] == []


def test_live_mode_times_out_into_a_pending_sample(results, cache, capsys):
    cfg = cycle.compose(cycle.demo_overrides(results, cache, "full", "live_timeout", EXCHANGE,
                                             "+backbone.exchange.live=true", "+backbone.exchange.poll_seconds=0.02",
                                             "+backbone.exchange.timeout_seconds=0.2"))
    summary = cycle.run(cfg)
    result = RunDir(summary["run_dir"]).sample_dirs()[0].result()
    assert result["status"] == "pending" and "no answer at" in result["error"] and "live mode" in result["error"]
    assert "exchange: waiting up to 0.2 s for" in capsys.readouterr().err


def test_brackets_through_the_exchange_finish_in_one_cycle(tmp_path, cache, capsys):
    """``scripts.brackets backbone=exchange``: every task of every demo sample is asked in the first run (one
    call per task), answered at once, and the second run finishes both brackets with the direct run's records."""
    from scripts.brackets import main
    from scripts.exchange import main as exchange_main

    common = ["benchmark=demo", "backbone.model=scripted/scripted_exchange:reply",
              "benchmark.evaluator=demo_replies.fake_evaluate", f"run.results_dir={tmp_path}",
              f"cache.dir={cache}", "benchmark.progress=false"]
    assert main([*common, "backbone=local"]) == 0
    exchange = ["backbone=exchange", "backbone.context_window=32768"]  # the direct run's window (conf/backbone/local.yaml)
    capsys.readouterr()
    assert main([*common, *exchange]) == 0
    assert "(0 errored sample(s); 3 pending, counted as failed until answered" in capsys.readouterr().out
    asked = {}
    for method in ("no_memory", "oracle_context"):
        run_dir = tmp_path / "demo" / "exchange" / method / "brackets"
        waiting = pending_requests(run_dir)
        asked[method] = len(waiting)
        assert {r["purpose"] for r in waiting} == {"task_generation"}
        out = run_dir / "exchange" / "answers" / "batch_output.jsonl"
        out.parent.mkdir()
        out.write_text("".join(json.dumps(cycle.batch_output_line(r, i)) + "\n" for i, r in enumerate(waiting)))
    assert asked == {"no_memory": 6, "oracle_context": 6}  # the demo's 6 tasks, all in one cycle
    out = _run_main(exchange_main, ["import", str(tmp_path / "demo" / "exchange")])  # both runs' answers/
    assert out["code"] == 0 and out["stdout"].count("6 answer(s) imported") == 2
    assert main([*common, *exchange]) == 0
    for method in ("no_memory", "oracle_context"):
        direct = tmp_path / "demo" / "local" / method / "brackets"
        through = tmp_path / "demo" / "exchange" / method / "brackets"
        assert [s.result()["status"] for s in RunDir(through).sample_dirs()] == ["ok"] * 3
        assert pending_requests(through) == []
        assert compare_runs(direct, through)["differences"] == []
