"""``reconmem.platform.fit.fit_messages``: the window guard of already-built requests (agent steps,
re-fits after a provider's context-length error), with a deterministic counter (4 characters = 1 token)."""

from __future__ import annotations

import math

from reconmem.platform.fit import ELIDED_TOOL_OUTPUT, TRUNCATION_MARK, fit_messages, window_budget


def count(messages):
    return sum(math.ceil(len(str(m.get("content") or "")) / 4) + 4 for m in messages) + 3


def _step(i, size):
    return [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                                                                    "function": {"name": "read_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "name": "read_file", "content": f"file {i}\n" + "x" * size}]


def _request(history=4, steps=3, size=2000):
    msgs = [{"role": "system", "content": "SYSTEM " * 20}]
    for i in range(history):
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"history {i} " + "h" * 400})
    msgs.append({"role": "user", "content": "THE QUESTION"})
    start = len(msgs) - 1
    for i in range(steps):
        msgs += _step(i, size)
    return msgs, start


def test_a_request_that_fits_is_unchanged():
    msgs, start = _request(steps=0)
    out, meta = fit_messages(msgs, limit=10_000, count=count, start=start)
    assert out == msgs and meta["tokens_before"] == meta["tokens_after"] and meta["truncated"] == []


def test_older_tool_results_go_first_then_history():
    msgs, start = _request()
    limit = count(msgs) - 900  # dropping two of the three tool outputs is enough
    out, meta = fit_messages(msgs, limit=limit, count=count, start=start)
    tools = [m for m in out if m["role"] == "tool"]
    assert [t["content"] == ELIDED_TOOL_OUTPUT for t in tools] == [True, True, False]
    assert meta["elided_tool_results"] == 2 and meta["trimmed_history"] == 0 and meta["tokens_after"] <= limit
    assert [m["role"] for m in out] == [m["role"] for m in msgs]  # every call keeps its result

    tight = count(msgs) - 1800  # the history goes too, oldest first; system and question stay
    out, meta = fit_messages(msgs, limit=tight, count=count, start=start)
    assert meta["elided_tool_results"] == 2 and meta["trimmed_history"] >= 1 and meta["tokens_after"] <= tight
    assert out[0]["content"].startswith("SYSTEM") and {"role": "user", "content": "THE QUESTION"} in out
    assert not any(m.get("content", "").startswith("history 0") for m in out if isinstance(m.get("content"), str))


def test_an_oversized_newest_tool_result_is_cut_in_its_middle():
    msgs, start = _request(history=0, steps=1, size=40_000)
    out, meta = fit_messages(msgs, limit=1000, count=count, start=start)
    tool = out[-1]["content"]
    assert TRUNCATION_MARK in tool and tool.startswith("file 0") and meta["truncated"] == ["tool@3"]
    assert meta["tokens_after"] <= 1000 and out[-2]["tool_calls"]  # the call stays paired with its result


def test_json_protocol_results_keep_their_header():
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"},
            {"role": "assistant", "content": '{"tool": "read_file", "arguments": {}}'},
            {"role": "user", "content": "TOOL RESULT (read_file):\n" + "y" * 4000},
            {"role": "assistant", "content": '{"tool": "list_dir", "arguments": {}}'},
            {"role": "user", "content": "TOOL RESULT (list_dir):\nsmall"}]
    out, meta = fit_messages(msgs, limit=count(msgs) - 500, count=count)  # start found: the last non-tool user message
    assert out[3]["content"] == "TOOL RESULT (read_file):\n" + ELIDED_TOOL_OUTPUT and meta["elided_tool_results"] == 1


def test_window_budget():
    assert window_budget(1000, 100) == 900 and window_budget(1000, 900) == 500  # at most half the window
    assert window_budget(262144, 8192, 0.16) == int(253952 / 1.16)
