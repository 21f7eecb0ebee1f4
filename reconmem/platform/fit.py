"""The context-window guard every method's generation request goes through.

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

:func:`fit_messages` (:mod:`reconmem.platform.trim`, re-exported here) is the same guard for a
request that is already a list of chat messages (an
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
from reconmem.platform.trim import (  # noqa: F401 - re-exported: the guard's message-level half
    ELIDED_TOOL_OUTPUT, TOOL_RESULT_PREFIX, TRUNCATION_MARK, Messages, _cut, _smallest, exchange_start,
    fit_messages, group_history, is_tool_message, window_budget)

if TYPE_CHECKING:
    from reconmem.platform.context import Session

SectionRenderer = Callable[[list[ContextItem]], list[str]]


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
