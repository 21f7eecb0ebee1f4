"""Memory Tool: an agent-managed memory baseline, inspired by SWE-MeM's memory tool (not a reproduction).

SWE-MeM (../shared/papers/swe-mem-paper.txt, §2.1) lets a trained agent decide *when* to compress,
*which span* of its trajectory, and *how* to summarise it, with the remaining context budget shown
to it. This method keeps that interface and drops everything trained: the backbone is prompted, not
fine-tuned; there is no synthesis workflow, curriculum or Memory-aware GRPO; the tool is reduced to
``compress_history(span, summary)`` (no ``analysis`` or ``remaining_work`` arguments: a conversation
with a user has no task plan to carry over); and a step is a conversation turn, not an agent action.

What the agent sees: the benchmark's system prompt, the tool instructions, the unified repository
adaptation, the history (every turn labelled ``[turn N]``, every compressed span as the summary the
agent wrote, in place, as in SWE-MeM's Eq. 2.1), and the user's message followed by a budget line
(tokens of this request / context window, and the prompt budget where the window guard starts
dropping the oldest turns).

``respond`` runs at most ``max_steps`` backbone calls, all with the caller's purpose
(``turn_generation`` / ``task_generation``, as MemGPT's steps): a reply that calls
``compress_history`` is applied (the span's turns are replaced by the summary) and answered with a
tool result holding the new budget line; a reply without a call is the answer. The last step offers
no tool. A call is refused (the agent sees why) when the span is malformed, covers no turn, splits an
earlier summary, or the summary is empty or not shorter than what it replaces. Function calling
(``tools=``) when the backbone supports it, else a fenced ``compress_history`` JSON block.

Read-only requests (LoCoEval tasks) may compress within their own steps; the memory is restored
afterwards. Every request goes through the shared window guard (:mod:`reconmem.platform.fit`:
oldest history first, then code, as Full History). On CAB the host runs its own tool loop and
calls ``context_for``, so no compression is offered there and the method behaves as Full History.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import asdict, dataclass
from typing import Any

from baselines import prompts
from baselines.common import supports_function_calling
from baselines.repo_context import adaptation_k, render_code_block, repo_items
from reconmem.platform.context import MEMORY, RECENT, Context, ContextItem, ContextManager, Reply, Session, Turn
from reconmem.platform.fit import fit_prompt, prompt_budget
from reconmem.platform.tools import ToolCall, function_tool, reply_tool_calls, tool_call_message, tool_result_message

TOOL_NAME = "compress_history"
TOOL_SCHEMA = function_tool(
    TOOL_NAME, "Replace a span of earlier turns by a summary you write; the turns then leave the context.",
    {"type": "object",
     "properties": {"span": {"type": "string", "description": "first-last turn numbers, inclusive, e.g. \"3-7\""},
                    "summary": {"type": "string", "description": "what of these turns you still need later"}},
     "required": ["span", "summary"]})
_BLOCK = re.compile(r"```\s*compress_history\s*\n(.*?)```", re.DOTALL)
_SPAN = re.compile(r"^\s*(\d+)\s*(?:-|–|\.\.|to)\s*(\d+)\s*$")


@dataclass
class Entry:
    """One unit of history: a turn as it happened, or a span the agent compressed into a summary."""

    start: int  # first turn index covered
    end: int  # last turn index covered (== start for a turn)
    user: str = ""
    assistant: str = ""
    summary: str | None = None  # set for a compressed span

    @property
    def compressed(self) -> bool:
        return self.summary is not None

    def label(self) -> str:
        return f"{self.start}" if self.start == self.end else f"{self.start}-{self.end}"

    def messages(self) -> list[dict[str, str]]:
        """The entry as a (user, assistant) pair of chat messages."""
        if self.summary is not None:
            return [{"role": "user", "content": prompts.render("memory_tool_summary_marker", span=self.label())},
                    {"role": "assistant", "content": self.summary}]
        return [{"role": "user", "content": f"[turn {self.start}] {self.user}"},
                {"role": "assistant", "content": self.assistant}]


def parse_span(value: Any) -> tuple[int, int]:
    """``"3-7"``, ``"3..7"``, ``[3, 7]``, ``{"start": 3, "end": 7}`` or ``5`` -> (first, last)."""
    if isinstance(value, bool):
        raise ValueError(f"span must be turn numbers, got {value!r}")
    if isinstance(value, int):
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        first, last = int(value[0]), int(value[1])
    elif isinstance(value, dict) and {"start", "end"} <= set(value):
        first, last = int(value["start"]), int(value["end"])
    elif isinstance(value, str) and value.strip().isdigit():
        first = last = int(value.strip())
    elif isinstance(value, str) and _SPAN.match(value):
        m = _SPAN.match(value)
        first, last = int(m.group(1)), int(m.group(2))  # type: ignore[union-attr]
    else:
        raise ValueError(f"span must look like \"3-7\" (first-last turn numbers), got {value!r}")
    if first > last:
        raise ValueError(f"span {first}-{last}: the first turn comes after the last")
    return first, last


class MemoryTool(ContextManager):
    """Full history that the agent itself folds into summaries with ``compress_history``."""

    name = "memory_tool"

    def __init__(self, max_steps: int = 3, answer_reserve: int | None = None, repo_context_k: int | None = None) -> None:
        super().__init__()
        if max_steps < 1:
            raise ValueError(f"method.manager.max_steps must be >= 1, got {max_steps}")
        self.max_steps = int(max_steps)
        self.answer_reserve = answer_reserve
        self.repo_context_k = repo_context_k
        self.entries: list[Entry] = []
        self.compressions: list[dict[str, Any]] = []
        self.refused: list[dict[str, Any]] = []

    def start(self, session: Session) -> None:
        super().start(session)
        self.entries, self.compressions, self.refused = [], [], []

    # ---- prompt --------------------------------------------------------------------------------
    def _use_tools(self) -> bool:
        return supports_function_calling(self._session())

    def _blocks(self, code: list[ContextItem], *, tool: bool) -> list[str]:
        blocks = [prompts.render("memory_tool_instructions")]
        if tool and not self._use_tools():
            blocks.append(prompts.render("memory_tool_protocol", tool=TOOL_NAME))
        if not tool:
            blocks.append(prompts.render("memory_tool_final_step"))
        return blocks + [render_code_block(code)]

    def budget_line(self, used: int) -> str:
        """The visible budget: tokens of this request / window, and where the guard starts trimming."""
        session = self._session()
        window = int(session.context_window)
        return prompts.render("memory_tool_budget", used=f"{used:,}", window=f"{window:,}",
                              percent=f"{100.0 * used / max(1, window):.0f}",
                              budget=f"{prompt_budget(session, self.answer_reserve):,}",
                              turns=sum(e.end - e.start + 1 for e in self.entries),
                              spans=sum(1 for e in self.entries if e.compressed))

    def _fit(self, query: str, tail: list[dict[str, Any]], code: list[ContextItem], *, tool: bool) -> tuple[Any, int]:
        """The request for one step with its budget line -> (fitted request, tokens before trimming)."""
        session = self._session()

        def fitted(line: str) -> Any:
            last = [{"role": "user", "content": f"{query}\n\n{line}"}, *tail]
            return fit_prompt(session, sections=lambda kept: self._blocks(kept, tool=tool), items=code, query=None,
                              history=[*(e.messages() for e in self.entries), last],
                              answer_reserve=self.answer_reserve, history_first=True, keep_last_groups=1)

        probe = fitted(self.budget_line(int(session.context_window)))  # the widest numbers the line can hold
        used = int(probe.meta["tokens_before"])
        return fitted(self.budget_line(used)), used

    def _items(self, kept_from: int) -> list[ContextItem]:
        items = []
        for e in self.entries[kept_from:]:
            if e.compressed:
                items.append(ContextItem(kind="summary", id=f"turns:{e.label()}", text=str(e.summary), source=MEMORY,
                                         meta={"span": [e.start, e.end]}))
            else:
                items.append(ContextItem(kind="history_turn", id=str(e.start), source=RECENT, meta={"turn": e.start},
                                         text=f"User: {e.user}\nAssistant: {e.assistant}"))
        return items

    def _context(self, query: str, fitted: Any, used: int) -> Context:
        dropped = fitted.meta["trimmed_history"]
        meta = {"budget_used": used, "entries": len(self.entries), "kept_entries": len(self.entries) - dropped,
                "compressed_spans": sum(1 for e in self.entries if e.compressed), **fitted.meta}
        return Context(query=query, messages=fitted.messages, items=self._items(dropped) + fitted.items, meta=meta)

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        """The first step's request for ``query`` (no memory change)."""
        session = self._session()
        code = repo_items(session, query, adaptation_k(session, self.repo_context_k))
        fitted, used = self._fit(query, [], code, tool=self.max_steps > 1)
        return self._context(query, fitted, used)

    # ---- agent loop -----------------------------------------------------------------------------
    def respond(self, query: str, *, purpose: str = "turn_generation", read_only: bool = False) -> Reply:
        session = self._session()
        snapshot = copy.deepcopy((self.entries, self.compressions, self.refused)) if read_only else None
        code = repo_items(session, query, adaptation_k(session, self.repo_context_k))
        tail: list[dict[str, Any]] = []
        steps: list[dict[str, Any]] = []
        applied: list[dict[str, Any]] = []
        text = ""
        context: Context | None = None
        try:
            for step in range(1, self.max_steps + 1):
                tool = step < self.max_steps
                fitted, used = self._fit(query, tail, code, tool=tool)
                if context is None:  # what the first step saw (before any compression)
                    context = self._context(query, fitted, used)
                if self._use_tools():
                    resp = session.llm.chat(fitted.messages, purpose=purpose, tools=[TOOL_SCHEMA] if tool else None)
                    calls = reply_tool_calls(resp, names=[TOOL_NAME]) if tool else []
                    reply_text = resp.text or ""
                else:
                    resp = session.llm.chat(fitted.messages, purpose=purpose)
                    reply_text = resp.text or ""
                    calls = self._text_calls(reply_text) if tool else []
                    if not tool:
                        reply_text = _BLOCK.sub("", reply_text).strip()
                record = {"step": step, "purpose": purpose, "input_tokens": resp.usage.input_tokens,
                          "output_tokens": resp.usage.output_tokens, "budget_used": used, "calls": len(calls),
                          "fit": {k: fitted.meta.get(k) for k in ("tokens_before", "tokens_after", "trimmed_items",
                                                                  "trimmed_history")}}
                steps.append(record)
                if not calls:
                    text = reply_text
                    break
                results = [self._apply(call, used) for call in calls]
                applied += [r for r in results if r["ok"]]
                record["refused"] = [r["message"] for r in results if not r["ok"]]
                tail += self._exchange(reply_text, calls, results)
        finally:
            if snapshot is not None:
                self.entries, self.compressions, self.refused = snapshot
        assert context is not None
        context.meta["steps"] = steps
        context.meta["compressions"] = applied
        return Reply(text=text, context=context, meta={"steps": steps, "compressions": len(applied)})

    def _text_calls(self, text: str) -> list[ToolCall]:
        """Fenced ``compress_history`` blocks of a text-protocol reply as tool calls."""
        from reconmem.platform.jsonio import parse_json_lenient

        calls = []
        for i, body in enumerate(_BLOCK.findall(text)):
            try:
                args = parse_json_lenient(body)
            except ValueError:
                args = {"_unparsed": body.strip()[:200]}
            calls.append(ToolCall(f"text_{i}", TOOL_NAME, args if isinstance(args, dict) else {}))
        return calls

    def _exchange(self, reply_text: str, calls: list[ToolCall], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The call and its results as messages that follow the user's message in the next step."""
        if self._use_tools():
            out = [tool_call_message(reply_text, [ToolCall(c.id, TOOL_NAME, c.arguments or {}) for c in calls],
                                     ensure_ascii=False)]
            out += [tool_result_message(c.id, TOOL_NAME, r["message"]) for c, r in zip(calls, results)]
            return out
        return [{"role": "assistant", "content": reply_text},
                {"role": "user", "content": "\n".join(f"[{TOOL_NAME} result] {r['message']}" for r in results)}]

    def _apply(self, call: ToolCall, used: int) -> dict[str, Any]:
        """Apply one ``compress_history`` call -> ``{"ok", "message", ...}`` (the agent sees ``message``)."""
        args = call.arguments or {}
        try:
            first, last = parse_span(args.get("span"))
            summary = str(args.get("summary") or "").strip()
            if not summary:
                raise ValueError("the summary is empty")
            inside = [i for i, e in enumerate(self.entries) if first <= e.start and e.end <= last]
            split = [e.label() for e in self.entries if e.start < first <= e.end or e.start <= last < e.end]
            if split:
                raise ValueError(f"span {first}-{last} cuts the compressed span {split[0]}; include all of it or none")
            if not inside:
                raise ValueError(f"span {first}-{last} covers no turn of the history")
            count = self._session().llm.count_tokens
            old = [m for i in inside for m in self.entries[i].messages()]
            new = Entry(self.entries[inside[0]].start, self.entries[inside[-1]].end, summary=summary)
            before, after = count(old), count(new.messages())
            if after >= before:
                raise ValueError(f"the summary ({after} tokens) is not shorter than the turns it replaces ({before})")
        except (TypeError, ValueError) as exc:
            self.refused.append({"after_turns": self._last_turn(), "arguments": _jsonable(args), "reason": str(exc)})
            return {"ok": False, "message": f"not applied: {exc}"}
        self.entries[inside[0]:inside[-1] + 1] = [new]
        event = {"after_turn": self._last_turn(), "span": [new.start, new.end], "entries": len(inside),
                 "tokens_before": before, "tokens_after": after, "budget_used_before": used, "summary": summary}
        self.compressions.append(event)
        message = (f"turns {new.label()} are now your summary ({before:,} -> {after:,} tokens). "
                   + self.budget_line(max(0, used - before + after)))
        return {"ok": True, "message": message, **event}

    def _last_turn(self) -> int | None:
        return self.entries[-1].end if self.entries else None

    def observe(self, turn: Turn) -> None:
        self.entries.append(Entry(turn.index, turn.index, user=turn.user, assistant=turn.assistant))

    def state(self) -> dict[str, Any]:
        return {"method": self.name, "max_steps": self.max_steps, "entries": [asdict(e) for e in self.entries],
                "compressions": list(self.compressions), "refused": list(self.refused)}


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)[:200]
