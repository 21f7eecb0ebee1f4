"""Scripted replies (not a model's) for the window-guard tests: the maintainer reads an oversized file,
then the config file, then answers; memory calls get the JSON each method expects (tests/trust's
``scripted_methods.reply``); the user asks one follow-up, then is satisfied; the judge says CORRECT.

``backbone.model=scripted/overflow_kit:maintainer`` (tests/cab and tests/trust on sys.path).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trust"))

from cab_testkit import GOOD_JUDGMENT, USER_FULL, USER_PARTIAL  # noqa: E402
from scripted_methods import reply as memory_reply  # noqa: E402

BIG_FILE = "docs/server_log.txt"  # text, not code: the repository index (ReConMem) does not embed it
ANSWER = "Pass Client(timeout=30) or set TINYKV_TIMEOUT=30; the default is DEFAULT_TIMEOUT in tinykv/config.py."


def big_source(lines: int = 3000) -> str:
    """An oversized log file (about 200 KB): far beyond any tool-output clip and the test window."""
    return "".join(f"2025-05-01 10:{i // 60 % 60:02d}:{i % 60:02d} client.get key={i} waited {i * 7 % 101} ms, "
                   f"retry {i % 3} of 3, socket timeout 5.0 s\n" for i in range(lines))


def _exchange_calls(messages: list[dict[str, Any]]) -> int:
    """Tool rounds since the message this response answers (tool results are tool / TOOL RESULT messages)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        content = str(m.get("content") or "")
        if m.get("role") == "user" and not content.startswith(("TOOL RESULT (", "ERROR: ")):
            return sum(1 for x in messages[i + 1:] if x.get("role") == "assistant")
    return 0


def maintainer(messages: list[dict[str, Any]], purpose: str) -> Any:
    """Scripted maintainer: read the big file, then the config, then answer; memory calls as the methods expect."""
    if purpose not in ("turn_generation", "maintainer_tool_step"):
        return memory_reply(messages, purpose)
    rounds = _exchange_calls(messages)
    if rounds == 0:
        return {"tool_calls": [{"id": "big1", "name": "read_file", "arguments": {"path": BIG_FILE}}]}
    if rounds == 1:
        return {"tool_calls": [{"id": "cfg1", "name": "read_file", "arguments": {"path": "tinykv/config.py"}}]}
    return ANSWER


def user(messages: list[dict[str, Any]], purpose: str) -> str:
    """Scripted user: one follow-up question, then satisfied."""
    prompt = str(messages[-1].get("content") or "")
    return USER_PARTIAL if prompt.count("Maintainer:") < 2 else USER_FULL


def judge(messages: list[dict[str, Any]], purpose: str) -> str:
    return GOOD_JUDGMENT
