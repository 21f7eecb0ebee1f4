"""Scripted backbone replies for the LoCoEval runner tests (``backbone.model=scripted/scripted_backbone:<fn>``).

These are SCRIPTED replies, not a model's: they exercise the pipeline only.
"""

from __future__ import annotations

import os
import time

from reconmem.platform.llm import current_tags

GOOD_ADD = "Here it is:\n```python\ndef add(a, b):\n    return a + b\n```"


def _log_call(purpose: str) -> None:
    path = os.environ.get("LOCOEVAL_TEST_CALL_LOG")
    if path:
        tags = current_tags()
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{tags.get('sample')}\t{tags.get('turn')}\t{purpose}\n")


def slow_reply(messages, purpose):
    """Sleeps a little per call so that a SIGKILL can land mid-run."""
    _log_call(purpose)
    time.sleep(float(os.environ.get("LOCOEVAL_TEST_DELAY", "0.25")))
    return GOOD_ADD if purpose == "task_generation" else "Noted."


def fast_reply(messages, purpose):
    _log_call(purpose)
    return GOOD_ADD if purpose == "task_generation" else "Noted."


def fake_evaluate(namespace, reply_text, *, repo_spec, executor, manifest=None):
    """Stands in for the DevEval Pass@1 layer: passes when the reply adds; fails once per marker file."""
    marker = os.environ.get("LOCOEVAL_TEST_FAIL_ONCE")
    if marker and os.path.exists(marker):
        os.unlink(marker)
        raise RuntimeError("injected evaluator failure")
    passed = "return a + b" in reply_text
    return {"outcome": "pass" if passed else "fail", "passed": passed, "log": "scripted evaluator",
            "seconds": 0.0, "completion": "return a + b" if passed else ""}


_DEMO_REFS: dict[str, str] = {}


def demo_reference_reply(messages, purpose):
    """Dry run of the demo pipeline: task replies are the REAL reference functions (must pass)."""
    _log_call(purpose)
    if purpose != "task_generation":
        return "Noted."
    import re

    from benchmarks.deveval.evaluate import reference_for
    from benchmarks.locoeval.loader import load_samples

    if not _DEMO_REFS:
        for s in load_samples("package:benchmarks.locoeval/demo/samples.jsonl"):
            for r in s.requirements:
                _DEMO_REFS[r.function_name] = reference_for(r.namespace, s.repo_spec)["function"]
    name = re.search(r"Implement the function `(\w+)`", messages[-1]["content"]).group(1)
    return "```python\n" + _DEMO_REFS[name] + "\n```"


def builder_reply(messages, purpose):
    """SCRIPTED builder replies for the CLI test: one item quoting the body's first code line; a mutation."""
    import json

    prompt = messages[-1]["content"]
    if "Body:\n" in prompt:
        lines = [ln.strip() for ln in prompt.split("Body:\n", 1)[1].splitlines() if ln.strip() and not ln.strip().startswith("#")]
        first = lines[0]
        return json.dumps({"items": [{"text": f"The implementation starts with `{first}`.", "evidence": [first]}]})
    return json.dumps({"text": "The implementation should do something completely different."})
