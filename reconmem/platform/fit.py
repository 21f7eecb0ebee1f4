"""The context-window guard every method's generation request goes through (issue 12.4).

A method assembles its prompt from parts: the system prompt, context sections rendered from
retrieved :class:`~reconmem.platform.context.ContextItem` s, chat history (oldest first, in groups
that must stay together, e.g. an assistant tool call and its tool results) and the query.
:func:`fit_prompt` renders them with :func:`~reconmem.platform.context.build_messages`, counts the
request with the backbone's own counter (``session.llm.count_tokens``) and, while it exceeds the
prompt budget, trims in this order:

1. retrieved items, lowest-ranked first (the method gives the ranking: ``items`` best first, or a
   ``drop_order``);
2. history groups, oldest first;
3. last resort (the fixed parts alone are too long): the system message is cut from its end, then
   the query is cut in its middle - the request still goes out, with a marker in the text.

The smallest trim that fits is found by bisection (token counts fall monotonically as more is
dropped). What happened is returned as ``meta`` for the Context record: ``tokens_before``,
``tokens_after``, ``prompt_budget``, ``trimmed_items`` (ids), ``trimmed_history`` (groups), and
``truncated`` (which fixed parts were cut), so ``contexts.jsonl`` shows every trim.

The budget is ``session.context_window`` minus the room kept for the answer: the backbone's
``max_output_tokens`` (or the method's override), but never more than half the window, so a tiny
window still leaves a usable prompt; that room is then divided by ``1 + count_margin``, the client's
reserve for the error of its token counter against the provider's tokenizer (0 for the backbone's
own tokenizer; measured per backbone family, :mod:`reconmem.platform.llm.margins`).

:func:`fit_messages` is the same guard for a request that is already a list of chat messages (an
agent step: the method's context, then tool calls and their results; or a request the provider
refused as too long). It keeps the leading system message and the message the request answers, and
trims in this order: earlier tool results of the current exchange (their text replaced by a note),
history before the exchange (oldest groups first), then the longest remaining messages cut in
their middle (the system message from its end).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from reconmem.platform.context import ContextItem, build_messages

if TYPE_CHECKING:
    from reconmem.platform.context import Session

TRUNCATION_MARK = "\n[... cut to fit the context window ...]\n"
Messages = list[dict[str, Any]]
SectionRenderer = Callable[[list[ContextItem]], list[str]]


def window_budget(window: int, answer_reserve: int, count_margin: float = 0.0) -> int:
    """Largest prompt (in the client's token counts) for ``window``: the window minus the answer reserve
    (at most half the window), divided by ``1 + count_margin`` (the counter's measured error)."""
    window = int(window)
    room = window - min(max(0, int(answer_reserve)), window // 2)
    return int(room / (1.0 + max(0.0, float(count_margin or 0.0))))


def count_margin(llm: Any) -> float:
    """The token-count reserve of ``llm`` (a client or a proxy over one); 0 when it has none."""
    try:
        return max(0.0, float(getattr(llm, "count_margin", 0.0) or 0.0))
    except (TypeError, ValueError):
        return 0.0


def prompt_budget(session: "Session", answer_reserve: int | None = None) -> int:
    """Largest prompt (tokens) for ``session``: the window minus the answer reserve (<= half the
    window), less the client's token-count reserve (see :func:`window_budget`)."""
    if answer_reserve is None:
        spec = getattr(session.llm, "spec", None)
        answer_reserve = int(getattr(spec, "max_output_tokens", 0) or 0)
    return window_budget(int(session.context_window), int(answer_reserve), count_margin(session.llm))


@dataclass
class Fitted:
    """A request that fits: its messages, the items and history groups kept, and the trim record."""

    messages: Messages
    items: list[ContextItem]
    history: list[Messages]
    meta: dict[str, Any] = field(default_factory=dict)


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


def fit_prompt(session: "Session", *, sections: SectionRenderer, items: Sequence[ContextItem], query: str | None,
               history: Sequence[Messages] = (), system_prompt: str | None = None,
               drop_order: Sequence[ContextItem] | None = None, answer_reserve: int | None = None,
               budget: int | None = None, count: Callable[[Messages], int] | None = None,
               history_first: bool = False, keep_last_groups: int = 0) -> Fitted:
    """Render and, when needed, trim a request until it fits (see the module docstring).

    ``sections(kept_items) -> [block, ...]`` renders the context blocks of the system message from
    the kept items (in their original order). ``items`` are best-ranked first unless ``drop_order``
    (lowest-ranked first) is given; ``history`` groups are oldest first. ``history_first`` drops
    history before items (Full History, whose definition is "truncate the oldest turns").
    ``keep_last_groups`` history groups at the end are dropped only when nothing else helps (an agent
    step keeps the message it is answering).
    """
    system = session.system_prompt if system_prompt is None else system_prompt
    count = count or session.llm.count_tokens
    limit = prompt_budget(session, answer_reserve) if budget is None else int(budget)
    items = list(items)
    groups = [list(g) for g in history]
    order = list(drop_order) if drop_order is not None else list(reversed(items))
    order_ids = [id(i) for i in order] + [id(i) for i in reversed(items) if id(i) not in {id(o) for o in order}]

    def render(n_items: int, n_groups: int, sys_text: str = system, q: str = query) -> tuple[Messages, list[ContextItem]]:
        dropped = set(order_ids[:n_items])
        kept = [i for i in items if id(i) not in dropped]
        flat = [m for g in groups[n_groups:] for m in g]
        return build_messages(sys_text, sections(kept), flat, q), kept

    messages, kept = render(0, 0)
    before = count(messages)
    meta: dict[str, Any] = {"tokens_before": before, "tokens_after": before, "prompt_budget": limit,
                            "trimmed_items": [], "trimmed_history": 0, "truncated": []}
    if before <= limit:
        return Fitted(messages, kept, groups, meta)

    droppable = max(0, len(groups) - max(0, keep_last_groups))
    if history_first:
        n_items = 0
        n_groups = _smallest(lambda g: count(render(0, g)[0]) <= limit, droppable)
        if n_groups is None:
            n_groups = droppable
            n_items = _smallest(lambda n: count(render(n, n_groups)[0]) <= limit, len(order_ids))
            n_items = len(order_ids) if n_items is None else n_items
    else:
        n_groups = 0
        n_items = _smallest(lambda n: count(render(n, 0)[0]) <= limit, len(order_ids))
        if n_items is None:
            n_items = len(order_ids)
            n_groups = _smallest(lambda g: count(render(n_items, g)[0]) <= limit, droppable)
            n_groups = droppable if n_groups is None else n_groups
    messages, kept = render(n_items, n_groups)
    if count(messages) > limit and n_groups < len(groups):  # the kept last groups go too
        n_groups = _smallest(lambda g: count(render(n_items, g)[0]) <= limit, len(groups))
        n_groups = len(groups) if n_groups is None else n_groups
        messages, kept = render(n_items, n_groups)
    if count(messages) > limit:  # the fixed parts alone are too long
        blocks = sections(kept)
        full_system = build_messages(system, blocks, [], "")[0]["content"]
        sys_text = _cut(full_system, lambda t: count(build_messages(t, [], [], query)) <= limit, keep="head")
        meta["truncated"].append("system")
        messages = build_messages(sys_text, [], [], query)
        if count(messages) > limit and query:
            q_text = _cut(query, lambda t: count(build_messages(sys_text, [], [], t)) <= limit, keep="middle")
            meta["truncated"].append("query")
            messages = build_messages(sys_text, [], [], q_text)
        kept = [i for i in kept if i.text in sys_text]  # an item cut off the system message counts as trimmed
    dropped_ids = {id(i) for i in items} - {id(i) for i in kept}
    meta["trimmed_items"] = [i.id for i in items if id(i) in dropped_ids]
    meta["trimmed_history"] = n_groups
    meta["tokens_after"] = count(messages)
    return Fitted(messages, kept, groups[n_groups:], meta)


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


def fit_text(text: str, max_tokens: int, count: Callable[[str], int], *, keep: str = "tail") -> str:
    """``text`` cut (marker inserted) to at most ``max_tokens`` by ``count``; ``keep``: head | tail | middle.

    For memory-management prompts whose variable part (a turn transcript, a session) may not fit.
    """
    if max_tokens <= 0:
        return ""
    if count(text) <= max_tokens:
        return text
    return _cut(text, lambda t: count(t) <= max_tokens, keep=keep)


def fit_input(session: "Session", render: Callable[[str], Messages], text: str, *, keep: str = "tail",
              answer_reserve: int | None = None) -> tuple[Messages, bool]:
    """``render(text)`` with ``text`` cut (``keep``: head | tail | middle) until the request fits the
    prompt budget -> (messages, whether ``text`` was cut). For memory-management calls whose
    variable part (a turn transcript, a session) can outgrow a small window."""
    count = session.llm.count_tokens
    limit = prompt_budget(session, answer_reserve)
    messages = render(text)
    if count(messages) <= limit:
        return messages, False
    cut = _cut(text, lambda t: count(render(t)) <= limit, keep=keep)
    return render(cut), True


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
