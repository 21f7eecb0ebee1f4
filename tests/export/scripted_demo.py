"""SCRIPTED backbone replies and evaluator for the export tests (not a model's result).

``backbone.model=scripted/scripted_demo:reply`` on the demo samples: ReConMem's memory calls get
well-formed JSON, the preparation turns a short acknowledgement, and the task replies pass the
first task of each sample (``fake_evaluate``: a reply containing ``return a + b`` passes).
"""

from __future__ import annotations

import json
from typing import Any

PASSING = "```python\ndef f(a, b):\n    return a + b\n```"
FAILING = "```python\ndef f():\n    return None\n```"


def _last_user(messages: list[dict[str, Any]]) -> str:
    return next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")


def reply(messages: list[dict[str, Any]], purpose: str) -> str:
    text = _last_user(messages)
    snippet = " ".join(text.split())[:160]
    if purpose == "memory_sketching":
        return json.dumps({"memories": [{"text": snippet or "nothing", "anchors": []}]})
    if purpose == "memory_update":
        return json.dumps({"action": "INSERT", "target": None, "text": None, "keep_new": True, "relations": []})
    if purpose == "task_generation":
        first = any(name in text for name in ("`clamp`", "`is_uuid`", "`total_seconds`"))
        return PASSING if first else FAILING
    return "Noted: " + snippet[:40]


def fake_evaluate(namespace: str, reply_text: str, **_: Any) -> dict[str, Any]:
    passed = "return a + b" in reply_text
    return {"outcome": "pass" if passed else "fail", "passed": passed, "seconds": 0.0,
            "log": "scripted evaluator: " + ("1 passed" if passed else "AssertionError: 1 failed"),
            "completion": reply_text}


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
                "benchmark.evaluator=scripted_demo.fake_evaluate", f"run.results_dir={results}",
                "cache.llm=false", "benchmark.progress=false", "run.run_id=demo"])
        summaries.append(run(cfg))
    return summaries
