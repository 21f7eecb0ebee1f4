"""SCRIPTED backbone replies and evaluator for the export tests (not a model's result).

``backbone.model=scripted/scripted_demo:reply`` on the demo samples: ReConMem's memory calls get
well-formed JSON, the preparation turns a short acknowledgement, and the task replies pass the
first task of each sample (``demo_replies.fake_evaluate``: a reply containing ``return a + b`` passes).
"""

from __future__ import annotations

from typing import Any

from demo_replies import answer

PASSING = "```python\ndef f(a, b):\n    return a + b\n```"
FAILING = "```python\ndef f():\n    return None\n```"


def _task(text: str) -> str:
    """Passes the first task of each demo sample."""
    return PASSING if any(name in text for name in ("`clamp`", "`is_uuid`", "`total_seconds`")) else FAILING


def reply(messages: list[dict[str, Any]], purpose: str) -> str:
    return answer(messages, purpose, task=_task)


def run_demo(results: str, methods: tuple[str, ...] = ("full", "reconmem")) -> list[dict[str, Any]]:
    """The demo (``experiment=demo``) with these scripted replies: one run per method under ``results``."""
    from hydra import compose, initialize_config_dir

    import benchmarks
    from benchmarks.runloop import run
    from pathlib import Path

    conf = str(Path(benchmarks.__file__).resolve().parents[1] / "conf")
    summaries = []
    for method in methods:
        with initialize_config_dir(config_dir=conf, version_base="1.3"):
            cfg = compose("config", overrides=[
                "experiment=demo", f"method={method}", "backbone.model=scripted/scripted_demo:reply",
                "benchmark.evaluator=demo_replies.fake_evaluate", f"run.results_dir={results}",
                "cache.llm=false", "benchmark.progress=false", "run.run_id=demo"])
        summaries.append(run(cfg))
    return summaries
