"""SCRIPTED backbone replies for the Memory Tool tests and its demo run (not a model's).

``reply(messages, purpose)`` plays an agent that reads what a real backbone would read: the "[turn N]"
labels of its history, its earlier summaries and the budget line at the end of the user's message.
When compress_history is offered and the request holds at least ``KEEP + MIN_SPAN`` uncompressed
turns, or the budget line says ``PRESSURE`` percent or more, it folds every turn but the last
``KEEP`` (with the summaries before them) into one summary of the user's words; otherwise it answers.
Function-calling backbones get a tool call, others the fenced JSON block. Any other method gets the
plain answer. ``fake_evaluate`` is a stand-in for Pass@1 (every task fails): the demo compares tokens.
"""

from __future__ import annotations

import json
import re
from typing import Any

KEEP = 2  # most recent turns left as they are
MIN_SPAN = 4  # fewest uncompressed turns worth a compression
PRESSURE = 60  # percent of the window that triggers a compression regardless

_TURN = re.compile(r"^\[turn (\d+)\] ", re.S)
_SPAN = re.compile(r"^\[turns (\d+)-(\d+), compressed")
_BUDGET = re.compile(r"\[context budget: [\d,]+ of [\d,]+ tokens \((\d+)%\)")
ANSWER_CODE = "```python\ndef f(*args, **kwargs):\n    return None\n```"


def _answer(purpose: str) -> str:
    return ANSWER_CODE if purpose == "task_generation" else "Noted."


def plan(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The compression this agent chooses for the request, or None."""
    system = str(messages[0].get("content") or "") if messages else ""
    if "compress_history" not in system or "compress_history is not available" in system:
        return None
    if any(m.get("role") == "tool" or "[compress_history result]" in str(m.get("content") or "") for m in messages):
        return None  # once per request
    units: list[tuple[int, int, str]] = []  # (first, last, text) of each history entry, oldest first
    history = messages[1:-1]
    for i, m in enumerate(history):
        if m.get("role") != "user":
            continue
        content = str(m.get("content") or "")
        nxt = str(history[i + 1].get("content") or "") if i + 1 < len(history) else ""
        if (t := _TURN.match(content)) is not None:
            units.append((int(t.group(1)), int(t.group(1)), " ".join(content[t.end():].split())[:90]))
        elif (s := _SPAN.match(content)) is not None:
            units.append((int(s.group(1)), int(s.group(2)), nxt))
    raw = [u for u in units[:-KEEP] if u[0] == u[1]] if len(units) > KEEP else []
    budget = _BUDGET.search(str(messages[-1].get("content") or ""))
    pressed = budget is not None and int(budget.group(1)) >= PRESSURE
    if len(raw) < MIN_SPAN and not (pressed and raw):
        return None
    fold = units[:-KEEP]
    summary = " | ".join(f"turn {a}: {text}" if a == b else text for a, b, text in fold)
    return {"span": f"{fold[0][0]}-{fold[-1][1]}", "summary": summary[: 40 * len(fold)]}


def reply(messages: list[dict[str, Any]], purpose: str) -> Any:
    call = plan(messages) if purpose in ("turn_generation", "task_generation") else None
    if call is None:
        return _answer(purpose)
    return {"text": "", "tool_calls": [{"id": "c1", "name": "compress_history", "arguments": call}]}


def reply_text_protocol(messages: list[dict[str, Any]], purpose: str) -> str:
    """The same agent for a backbone without function calling (the fenced block)."""
    call = plan(messages) if purpose in ("turn_generation", "task_generation") else None
    if call is None:
        return _answer(purpose)
    return "```compress_history\n" + json.dumps(call) + "\n```"


def fake_evaluate(namespace: str, reply_text: str, **_: Any) -> dict[str, Any]:
    return {"outcome": "fail", "passed": False, "seconds": 0.0, "log": "scripted evaluator: not run",
            "completion": reply_text}
