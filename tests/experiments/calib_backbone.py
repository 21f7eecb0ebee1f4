"""SCRIPTED backbone replies for the CR-calibration test (``backbone.model=scripted/calib_backbone:reply``).

Not a model's replies: they only make ReConMem build a real dual memory on the demo samples
(one memory per turn anchored to the files and functions the user names) so that its budgets
change how much context the real recall puts into each prompt.
"""

from __future__ import annotations

import json
import re


def reply(messages, purpose):
    text = str(messages[-1]["content"])
    if purpose == "memory_sketching":
        user = text.split("### User\n", 1)[-1].split("### Assistant", 1)[0].strip()
        files = re.findall(r"boltons/\w+\.py", user)
        functions = [f for f in re.findall(r"\b([a-z_][a-z0-9_]*)\(", user) if f not in ("version",)]
        anchors = files + [f"{files[0]}/{f}" if files else f for f in functions]
        memory = user.split(" Please answer")[0].strip()
        return json.dumps({"memories": [{"text": memory, "anchors": anchors[:3]}] if memory else []})
    if purpose == "memory_update":
        return json.dumps({"action": "INSERT", "target": None, "text": None, "relations": []})
    if purpose == "task_generation":
        return "```python\ndef placeholder():\n    return None\n```"
    return "Noted."


def fake_evaluate(namespace, reply_text, *, repo_spec, executor, manifest=None, **_):
    """Stands in for the DevEval Pass@1 layer (CR does not depend on it): every task fails."""
    return {"outcome": "fail", "passed": False, "log": "scripted evaluator", "seconds": 0.0, "completion": ""}
