"""The message-level half of the context-window guard: trimming a request that is already a list of
chat messages, with no knowledge of methods or context items (so the LLM client can use it too).

:func:`fit_messages` keeps the leading system message and the message the request answers, and
trims in this order: earlier tool results of the current exchange (their text replaced by a note),
history before the exchange (oldest groups first), then the longest remaining messages cut in their
middle (the system message from its end). :func:`window_budget` is the prompt budget of a window.
:mod:`reconmem.platform.fit` builds on these (and re-exports them).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

TRUNCATION_MARK = "\n[... cut to fit the context window ...]\n"
Messages = list[dict[str, Any]]


def window_budget(window: int, answer_reserve: int, count_margin: float = 0.0) -> int:
    """Largest prompt (in the client's token counts) for ``window``: the window minus the answer reserve
    (at most half the window), divided by ``1 + count_margin`` (the counter's measured error)."""
    window = int(window)
    room = window - min(max(0, int(answer_reserve)), window // 2)
    return int(room / (1.0 + max(0.0, float(count_margin or 0.0))))


def group_history(messages: Sequence[dict[str, Any]]) -> list[Messages]:
    """Chat messages -> droppable groups: each message alone, except that an assistant message with
    ``tool_calls`` keeps the ``tool`` results that follow it (dropping half would orphan them)."""
    groups: list[Messages] = []
    for m in messages:
        if m.get("role") == "tool" and groups:
            groups[-1].append(m)
        else:
            groups.append([m])
    return groups


def _smallest(ok: Callable[[int], bool], upper: int) -> int | None:
    """Smallest n in [0, upper] with ok(n) (ok is monotone); None when even ok(upper) is false."""
    if not ok(upper):
        return None
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _cut(text: str, fits: Callable[[str], bool], *, keep: str) -> str:
    """The longest cut of ``text`` (head kept, or head and tail kept around the middle) that fits."""

    def shorten(n: int) -> str:
        if n >= len(text):
            return text
        if keep == "head":
            return text[:n] + TRUNCATION_MARK
        if keep == "tail":
            return TRUNCATION_MARK + text[len(text) - n:]
        half = n // 2
        return text[:half] + TRUNCATION_MARK + text[len(text) - (n - half):]

    if fits(text):
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(shorten(mid)):
            lo = mid
        else:
            hi = mid - 1
    return shorten(lo)


# --------------------------------------------------------------------------- built requests

TOOL_RESULT_PREFIX = "TOOL RESULT ("  # JSON-protocol tool results travel as user messages with this prefix
ELIDED_TOOL_OUTPUT = "[earlier tool output dropped to fit the context window; call the tool again if you need it]"


def is_tool_message(message: dict[str, Any]) -> bool:
    """A tool result (``role: tool``, or a JSON-protocol ``TOOL RESULT (...)`` / ``ERROR:`` user message)."""
    if message.get("role") == "tool":
        return True
    content = message.get("content")
    return (message.get("role") == "user" and isinstance(content, str)
            and (content.startswith(TOOL_RESULT_PREFIX) or content.startswith("ERROR: ")))


def exchange_start(messages: Sequence[dict[str, Any]]) -> int:
    """Index of the message a request answers: the last user message that is not a tool result."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and not is_tool_message(messages[i]):
            return i
    return max(0, len(messages) - 1)


def _elide(message: dict[str, Any]) -> dict[str, Any]:
    content = str(message.get("content") or "")
    head = content.split("\n", 1)[0] + "\n" if content.startswith(TOOL_RESULT_PREFIX) else ""
    return {**message, "content": head + ELIDED_TOOL_OUTPUT}


def fit_messages(messages: Sequence[dict[str, Any]], *, limit: int, count: Callable[[Messages], int],
                 start: int | None = None) -> tuple[Messages, dict[str, Any]]:
    """A built chat request trimmed until ``count(messages) <= limit`` -> (messages, trim record).

    ``start`` is the index of the message the request answers (default :func:`exchange_start`);
    what precedes it (after a leading system message) is history, what follows it is the current
    exchange (assistant tool calls and their results). Order: tool results of the exchange before
    its newest assistant message are replaced by a note, oldest first; history groups go, oldest
    first (an assistant tool call keeps its results); then the longest messages are cut in their
    middle (the system message keeps its head), longest first. The record has ``tokens_before``,
    ``tokens_after``, ``prompt_budget``, ``elided_tool_results``, ``trimmed_history`` (groups) and
    ``truncated`` (``role@index`` of each cut message).
    """
    msgs = [dict(m) for m in messages]
    limit = int(limit)
    before = count(msgs)
    meta: dict[str, Any] = {"tokens_before": before, "tokens_after": before, "prompt_budget": limit,
                            "elided_tool_results": 0, "trimmed_history": 0, "truncated": []}
    if before <= limit or not msgs:
        return msgs, meta
    head = 1 if msgs[0].get("role") == "system" and len(msgs) > 1 else 0
    start = exchange_start(msgs) if start is None else int(start)
    start = max(head, min(start, len(msgs) - 1))
    newest = max((i for i in range(start + 1, len(msgs)) if msgs[i].get("role") == "assistant"), default=len(msgs))
    elidable = [i for i in range(start + 1, newest) if is_tool_message(msgs[i])]
    history = group_history(msgs[head:start])

    def render(n_elided: int, n_groups: int) -> Messages:
        out = list(msgs)
        for i in elidable[:n_elided]:
            out[i] = _elide(out[i])
        return out[:head] + [m for g in history[n_groups:] for m in g] + out[start:]

    n_groups = 0
    n_elided = _smallest(lambda n: count(render(n, 0)) <= limit, len(elidable))
    if n_elided is None:
        n_elided = len(elidable)
        n_groups = _smallest(lambda g: count(render(n_elided, g)) <= limit, len(history))
        n_groups = len(history) if n_groups is None else n_groups
    out = render(n_elided, n_groups)
    if count(out) > limit:
        out, meta["truncated"] = _cut_longest(out, limit, count)
    meta.update(elided_tool_results=n_elided, trimmed_history=n_groups, tokens_after=count(out))
    return out, meta


def _cut_longest(messages: Messages, limit: int, count: Callable[[Messages], int]) -> tuple[Messages, list[str]]:
    """Cut the longest text messages (middle kept out; the system message keeps its head) until the
    request fits or every text message has been cut once."""
    out = list(messages)
    cut: list[str] = []
    done: set[int] = set()
    while count(out) > limit:
        sizes = [(len(m["content"]), i) for i, m in enumerate(out)
                 if i not in done and isinstance(m.get("content"), str) and m["content"]]
        if not sizes:
            break
        i = max(sizes)[1]
        done.add(i)

        def fits(text: str, i: int = i) -> bool:
            return count(out[:i] + [{**out[i], "content": text}] + out[i + 1:]) <= limit

        out[i] = {**out[i], "content": _cut(out[i]["content"], fits,
                                            keep="head" if out[i].get("role") == "system" else "middle")}
        cut.append(f"{out[i].get('role')}@{i}")
    return out, cut
