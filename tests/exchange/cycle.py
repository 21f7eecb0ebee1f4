"""Drive an exchange run to its end the way a person would, with the SCRIPTED replies of
``scripted_exchange.reply`` as the answerer: run, ``scripts.exchange status``, answer every waiting
request (an OpenAI Batch output JSONL, or ``answers/<id>.md``), ``scripts.exchange import``, re-run."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import scripted_exchange

from benchmarks.runloop import run
from reconmem.platform.llm.exchange import exchange_dir, pending_requests
from reconmem.platform.testing import _completion_from_reply

CONF = str(Path(__file__).resolve().parents[2] / "conf")
SCRIPT = "scripted/scripted_exchange:reply"


def fresh_llm_cache(tmp: Path) -> Path:
    """A cache directory with an empty LLM cache over this machine's index, embedding and download caches
    (links), so the scripted runs build nothing twice and replay nothing from an earlier test session."""
    shared = Path(os.environ.get("RECONMEM_CACHE") or Path.home() / ".cache" / "reconmem")
    shared.mkdir(parents=True, exist_ok=True)
    cache = tmp / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    for name in ("embeddings", "index", "sdists", "sources", "locoeval", "models", "deveval"):
        (shared / name).mkdir(exist_ok=True)
        if not (cache / name).exists():
            (cache / name).symlink_to(shared / name, target_is_directory=True)
    return cache


def compose(overrides: Sequence[str]) -> Any:
    from hydra import compose as hydra_compose, initialize_config_dir

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides))


def demo_overrides(results: Path, cache: Path, method: str, run_id: str, *extra: str) -> list[str]:
    """The one-task demo with the scripted replies and evaluator (method ``method``)."""
    return ["experiment=demo", "benchmark=demo_one_task", f"method={method}", f"backbone.model={SCRIPT}",
            "benchmark.evaluator=demo_replies.fake_evaluate", f"run.results_dir={results}",
            f"cache.dir={cache}", "benchmark.progress=false", f"run.run_id={run_id}", *extra]


def compose_run_dir(cfg: Any) -> Path:
    """The run directory ``cfg`` writes."""
    from benchmarks.harness import run_path

    return run_path(cfg)


def batch_output_line(request: dict[str, Any], n: int) -> dict[str, Any]:
    """The OpenAI Batch output line answering one pending request with the scripted reply."""
    body = request["line"]["body"]
    completion = _completion_from_reply(scripted_exchange.reply(body["messages"], request["purpose"]), body["model"])
    message: dict[str, Any] = {"role": "assistant", "content": completion.text}
    if completion.tool_calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                                 for c in completion.tool_calls]
    return {"id": f"batch_req_{n}", "custom_id": request["custom_id"], "error": None,
            "response": {"status_code": 200, "request_id": f"r{n}",
                         "body": {"id": f"chatcmpl-{n}", "object": "chat.completion", "model": body["model"],
                                  "choices": [{"index": 0, "message": message,
                                               "finish_reason": completion.finish_reason}]}}}


def markdown_answer(request: dict[str, Any]) -> str:
    """The ``answers/<id>.md`` text answering one pending request with the scripted reply."""
    body = request["line"]["body"]
    completion = _completion_from_reply(scripted_exchange.reply(body["messages"], request["purpose"]), body["model"])
    text = completion.text
    if completion.tool_calls:
        calls = [{"id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in completion.tool_calls]
        text += "\n```tool_calls\n" + json.dumps(calls) + "\n```\n"
    return text


def run_cycles(cfg: Any, *, answer: str = "batch", max_cycles: int = 200,
               run_command: Callable[[Any], dict[str, Any]] = run) -> dict[str, Any]:
    """Run ``cfg`` and answer / import / re-run until no sample is pending; the last summary with
    ``cycles`` (runs made) and ``answered`` (requests answered)."""
    from scripts.exchange import main as exchange_main

    answered = 0
    for cycle in range(1, max_cycles + 1):
        summary = run_command(cfg)
        run_dir = Path(summary["run_dir"])
        waiting = pending_requests(run_dir)
        if not summary.get("n_pending"):
            assert not waiting, f"no pending sample but {len(waiting)} waiting request(s)"
            return {**summary, "cycles": cycle, "answered": answered}
        assert waiting, f"cycle {cycle}: {summary['n_pending']} pending sample(s) but no waiting request"
        assert exchange_main(["status", str(run_dir)]) == 0
        folder = exchange_dir(run_dir)
        if answer == "batch":
            out = folder / f"batch_output_{cycle}.jsonl"
            out.write_text("".join(json.dumps(batch_output_line(r, i)) + "\n" for i, r in enumerate(waiting)))
            assert exchange_main(["import", str(run_dir), str(out)]) == 0
        else:
            (folder / "answers").mkdir(exist_ok=True)
            for r in waiting:
                (folder / "answers" / f"{r['custom_id']}.md").write_text(markdown_answer(r))
            assert exchange_main(["import", str(run_dir)]) == 0
        answered += len(waiting)
    raise AssertionError(f"still pending after {max_cycles} cycles")
