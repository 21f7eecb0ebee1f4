"""SCRIPTED backbone replies for the LoCoEval executor-agreement test (not a model's replies).

``reply``: for task turns, the real reference function of every other task (those pass) and a
wrong body for the rest (those fail), so local and Docker verdicts are compared on both outcomes.
"""

from __future__ import annotations

import hashlib
import re

_REFS: dict[str, str] = {}


def wrong_on_purpose(name: str) -> bool:
    return hashlib.sha256(name.encode()).digest()[0] % 2 == 1


def reply(messages, purpose):
    if purpose != "task_generation":
        return "Noted."
    from benchmarks.deveval.evaluate import reference_for
    from benchmarks.locoeval.loader import load_samples

    if not _REFS:
        from pathlib import Path

        import benchmarks.locoeval

        data = Path(benchmarks.locoeval.__file__).parent / "demo" / "deveval_tasks.jsonl"
        for s in load_samples("package:benchmarks.locoeval/demo/samples.jsonl"):
            for r in s.requirements:
                _REFS[r.function_name] = reference_for(r.namespace, s.repo_spec, data_path=data)["function"]
    name = re.search(r"Implement the function `(\w+)`", messages[-1]["content"]).group(1)
    function = _REFS[name]
    if wrong_on_purpose(name):
        header = function.split(":\n", 1)[0] if ":\n" in function else function.splitlines()[0]
        function = header + ":\n    raise ValueError('scripted wrong answer')\n"
    return "```python\n" + function + "\n```"


KILL_PARENT = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(5)\nreturn None\n"


def kill_parent_reply(messages, purpose):
    """Every task reply is a HOSTILE body: it SIGKILLs its parent process (the evaluator, unconfined)."""
    if purpose != "task_generation":
        return "Noted."
    name = re.search(r"Implement the function `(\w+)`", messages[-1]["content"]).group(1)
    text = reply(messages, purpose)                     # the reference, to copy its signature
    function = text.split("```python\n", 1)[1].rsplit("\n```", 1)[0]
    header = function.split(":\n", 1)[0]
    body = "".join("    " + ln + "\n" for ln in KILL_PARENT.splitlines())
    assert header.lstrip().startswith(("def " + name, "@")), header
    return "```python\n" + header + ":\n" + body + "```"
