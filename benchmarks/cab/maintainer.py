"""The CAB maintainer agent: backbone + context manager + read-only repository tools.

Maintainer protocol per turn (paper §3.5):

* turn 0: no memory recall; the prompt is the system prompt and the issue only
  (``build_messages(system_prompt, [], [], issue)``) and ``context_for`` is not called;
* later turns: ``manager.context_for(user_message)`` builds the messages;
* then a bounded tool loop: litellm function calling when the backbone supports it, otherwise the
  strict JSON protocol (a reply that is exactly one JSON object ``{"tool": ..., "arguments": {...}}``
  is a tool call; any other reply is the answer); after ``max_tool_steps`` tool rounds the next
  request carries no tools and has the exploration notes folded into the question;
* ``manager.observe(Turn(...))`` after every answer (the caller does it via :meth:`MaintainerAgent.observe`).

Rules both hosts share (this module and :mod:`benchmarks.cab.strands_host`), for every method:

* **window guard**: every maintainer request is fitted to the backbone's window before it is sent
  (:func:`fit_maintainer_request`, i.e. :func:`reconmem.platform.fit.fit_messages`: earlier tool
  results of the response replaced by a note, then older history, then the longest messages cut);
  what was trimmed goes to ``contexts.jsonl`` (``meta.window_guard``);
* **tool caps**: ``max_tool_steps`` tool rounds per response and ``max_calls_per_step`` calls per
  round (later calls of a round are answered with an error, not executed);
* **repeated calls**: an identical tool call (same name and arguments) made again in the same
  response is not executed again; it gets the earlier result plus
  :data:`reconmem.platform.tools.REPEATED_CALL_NOTE`;
* **a final answer that is a tool call** (a tool-call JSON where the answer should be) is re-asked
  once without tools; if the second reply is one too it is recorded as the answer, flagged
  ``final_is_tool_call`` and counted.

The protocol itself (call extraction, the chat messages of calls and results, the JSON protocol,
the dispatch under the caps, the re-ask) is :mod:`reconmem.platform.tools`; :func:`response_dispatch`
binds its dispatch to the repository tools.

Ledger purposes: the first backbone call of a maintainer turn is ``turn_generation``, the calls
that follow tool results are ``maintainer_tool_step``. Role tags are set by the runner.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchmarks.cab.loader import CabIssue
from benchmarks.cab.prompts import render_prompt
from benchmarks.cab.tools import TOOL_NAMES, TOOL_SCHEMAS, RepoTools, ToolResult, tools_prompt_description
from reconmem.platform.context import Context, ContextManager, Turn, build_messages
from reconmem.platform.fit import count_margin, fit_messages, window_budget
from reconmem.platform.tools import (ToolCall, ToolDispatch, json_protocol_error, json_tool_result, looks_like_tool_call,
                                     parse_json_tool_call, reask_messages, reply_tool_calls, tool_call_message,
                                     tool_result_message)

if TYPE_CHECKING:
    from reconmem.platform.llm import LLMClient


def maintainer_system_prompt(issue: CabIssue, *, function_calling: bool, max_tool_steps: int, docker: bool = False) -> str:
    """The response-generation prompt shared by every method (tool protocol appended when JSON)."""
    text = render_prompt("maintainer_system.txt", repo=issue.repo, commit=issue.commit_id or "(unknown)")
    if docker:
        text += "\n\n" + render_prompt("maintainer_docker.txt")
    if not function_calling:
        text += "\n\n" + render_prompt("maintainer_json_tools.txt", tools=tools_prompt_description(),
                                       max_steps=max_tool_steps)
    return text


@dataclass
class MaintainerTurn:
    """One maintainer answer with everything that produced it."""

    text: str
    context: Context
    tool_results: list[ToolResult] = field(default_factory=list)
    llm_calls: int = 0
    tool_steps: int = 0
    forced_final: bool = False  # the step cap was reached and the answer was requested without tools
    protocol_errors: int = 0  # JSON-protocol tool calls that could not be parsed
    recalled: bool = True
    repeated_calls: int = 0  # identical tool calls answered from this response's earlier result
    over_cap_calls: int = 0  # calls beyond max_calls_per_step in one round (not executed)
    window_trims: int = 0  # requests the window guard had to trim
    final_is_tool_call: bool = False  # the answer was a tool call even after the re-ask
    reasked: bool = False  # the answer was a tool call and was asked for again without tools


def fit_maintainer_request(llm: "LLMClient", messages: list[dict[str, Any]], *, start: int | None,
                           max_tokens: int | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The window guard of every maintainer request (both hosts, every method): ``messages`` fitted to
    the backbone's window minus the answer's room (``max_tokens`` plus any reasoning allowance) and the
    client's token-count reserve. ``start``: index of the user message the response answers."""
    spec = getattr(llm, "spec", None)
    reserve = int(max_tokens or getattr(spec, "max_output_tokens", 0) or 0)
    reserve += int(getattr(spec, "reasoning_max_tokens", 0) or 0)
    budget = window_budget(int(llm.context_window), reserve, count_margin(llm))
    return fit_messages(messages, limit=budget, count=llm.count_tokens, start=start)


def note_fit(turn: MaintainerTurn, meta: dict[str, Any], call: int) -> None:
    """Record a window-guard trim on the turn and in its context's meta (contexts.jsonl)."""
    if meta["tokens_after"] == meta["tokens_before"]:
        return
    turn.window_trims += 1
    turn.context.meta.setdefault("window_guard", []).append({"call": call, **meta})


def response_dispatch(tools: RepoTools, *, max_calls_per_step: int = 4,
                      max_result_chars: int = 12_000) -> ToolDispatch[ToolResult]:
    """The dispatch of one maintainer response's calls to the repository tools, under the caps and
    the repeated-call rule both hosts share (:class:`reconmem.platform.tools.ToolDispatch`)."""
    return ToolDispatch(lambda name, args: tools.execute(name, args if isinstance(args, (dict, str)) else None),
                        max_calls_per_step=max_calls_per_step, max_result_chars=max_result_chars)


class MaintainerAgent:
    """The evaluated system: backbone + context manager + read-only repository tools."""

    def __init__(self, llm: "LLMClient", manager: ContextManager, tools: RepoTools, *, max_tool_steps: int = 8,
                 max_tokens: int | None = None, function_calling: bool | None = None, max_calls_per_step: int = 4,
                 max_tool_result_chars: int = 12_000, max_notes_chars: int = 24_000):
        self.llm = llm
        self.manager = manager
        self.tools = tools
        self.max_tool_steps = int(max_tool_steps)
        self.max_tokens = max_tokens
        self.function_calling = bool(llm.spec.supports_function_calling if function_calling is None else function_calling)
        self.max_calls_per_step = int(max_calls_per_step)
        self.max_tool_result_chars = int(max_tool_result_chars)
        self.max_notes_chars = int(max_notes_chars)
        self.response_tools = response_dispatch(tools, max_calls_per_step=max_calls_per_step,
                                                 max_result_chars=max_tool_result_chars)

    # ---- public

    def respond(self, query: str, *, first_turn: bool) -> MaintainerTurn:
        """Answer ``query``; the first turn has no memory recall (``context_for`` is not called)."""
        if first_turn:
            return self.respond_without_recall(query)
        return self.respond_with_context(query, self.manager.context_for(query))

    def respond_without_recall(self, query: str) -> MaintainerTurn:
        """The first response: system prompt + the issue, nothing from the context manager."""
        messages = build_messages(self.manager._session().system_prompt, [], [], query)
        turn = self._tool_loop(query, Context(query=query, messages=messages, items=[], meta={"no_recall": True}))
        turn.recalled = False
        return turn

    def respond_with_context(self, query: str, ctx: Context) -> MaintainerTurn:
        """A later response on the context the manager built for ``query``."""
        return self._tool_loop(query, ctx)

    def observe(self, index: int, query: str, turn: MaintainerTurn) -> None:
        """Let the context manager update its memory with the completed exchange."""
        calls = [{"tool": r.name, "args": r.args, "ok": r.ok} for r in turn.tool_results]
        self.manager.observe(Turn(index=index, user=query, assistant=turn.text, meta={"tool_calls": calls}))

    # ---- loop

    def _chat(self, messages: list[dict[str, Any]], purpose: str, tools: bool, turn: MaintainerTurn,
              start: int) -> Any:
        """One maintainer request through the window guard."""
        fitted, meta = fit_maintainer_request(self.llm, messages, start=start, max_tokens=self.max_tokens)
        note_fit(turn, meta, turn.llm_calls)
        kw: dict[str, Any] = {"purpose": purpose, "max_tokens": self.max_tokens}
        if tools:
            kw["tools"] = TOOL_SCHEMAS
        return self.llm.chat(fitted, **kw)

    def _tool_loop(self, query: str, ctx: Context) -> MaintainerTurn:
        from reconmem.platform.llm import ContextLengthExceeded

        messages = [dict(m) for m in ctx.messages]
        start = len(messages) - 1
        turn = MaintainerTurn(text="", context=ctx)
        self.response_tools.new_response()
        turn.tool_results = self.response_tools.results
        steps = 0
        try:
            while True:
                if steps >= self.max_tool_steps:  # the cap: the next request carries no tools (as on Strands)
                    return self._final_without_tools(query, ctx, turn, reason="steps")
                purpose = "turn_generation" if turn.llm_calls == 0 else "maintainer_tool_step"
                try:
                    resp = self._chat(messages, purpose, self.function_calling, turn, start)
                except ContextLengthExceeded:
                    if not turn.tool_results:
                        raise
                    return self._final_without_tools(query, ctx, turn, reason="context")
                turn.llm_calls += 1
                calls = self._extract_calls(resp, turn)
                if calls is None:  # an answer
                    return self._answer(resp.text, messages, turn, start)
                steps += 1
                turn.tool_steps = steps
                messages.extend(self._run_calls(resp, calls, turn))
        finally:
            turn.repeated_calls = self.response_tools.repeated
            turn.over_cap_calls = self.response_tools.over_cap

    def _answer(self, text: str, messages: list[dict[str, Any]], turn: MaintainerTurn, start: int) -> MaintainerTurn:
        """The answer; a tool-call JSON in its place is re-asked once without tools, then recorded as is."""
        if looks_like_tool_call(text, TOOL_NAMES):
            turn.reasked = True
            retry = reask_messages(messages, text, render_prompt("maintainer_final_retry.txt"))
            resp = self._chat(retry, "maintainer_tool_step", False, turn, start)
            turn.llm_calls += 1
            text = resp.text
            turn.final_is_tool_call = looks_like_tool_call(text, TOOL_NAMES)
        turn.text = text.strip()
        return turn

    def _extract_calls(self, resp: Any, turn: MaintainerTurn) -> list[ToolCall] | None:
        """The reply's tool calls, or None when the reply is the answer; errors become calls too."""
        if self.function_calling:
            if not resp.tool_calls:
                return None
            return [ToolCall(c.id, str(c.name), c.arguments) for c in reply_tool_calls(resp)]
        parsed = parse_json_tool_call(resp.text, TOOL_NAMES)
        if parsed is None:
            return None
        if isinstance(parsed, str):
            turn.protocol_errors += 1
            return [ToolCall(None, "_protocol_error", parsed)]
        return [ToolCall(None, parsed[0], parsed[1])]

    def _run_calls(self, resp: Any, calls: list[ToolCall], turn: MaintainerTurn) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.function_calling:
            out.append(tool_call_message(resp.text or None, [
                ToolCall(c.id, c.name, c.arguments if isinstance(c.arguments, dict) else {}) for c in calls]))
            for n, c in enumerate(calls):
                text, _ = self.response_tools.execute(c.name, c.arguments, position=n)
                out.append(tool_result_message(c.id, c.name, text))
            return out
        call = calls[0]
        out.append({"role": "assistant", "content": resp.text})
        if call.name == "_protocol_error":
            out.append({"role": "user", "content": json_protocol_error(call.arguments)})
            return out
        text, _ = self.response_tools.execute(call.name, call.arguments)
        out.append({"role": "user", "content": json_tool_result(call.name, text)})
        return out

    def _final_without_tools(self, query: str, ctx: Context, turn: MaintainerTurn, *, reason: str) -> MaintainerTurn:
        """Ask for the answer with the exploration notes folded into the question (no tools)."""
        from reconmem.platform.llm import ContextLengthExceeded

        turn.forced_final = True
        budget = self.max_notes_chars
        for _ in range(3):
            notes = self._notes(turn.tool_results, budget)
            content = render_prompt("maintainer_final.txt", query=query, notes=notes or "(none)")
            messages = [dict(m) for m in ctx.messages[:-1]] + [{"role": "user", "content": content}]
            try:
                resp = self._chat(messages, "maintainer_tool_step", False, turn, len(messages) - 1)
            except ContextLengthExceeded:
                budget //= 4
                continue
            turn.llm_calls += 1
            turn.context.meta["forced_final"] = reason
            return self._answer(resp.text, messages, turn, len(messages) - 1)
        raise ContextLengthExceeded("maintainer: the question with its context does not fit even without tool notes")

    @staticmethod
    def _notes(results: list[ToolResult], budget: int) -> str:
        """The most recent tool results (newest kept first) within ``budget`` characters."""
        parts: list[str] = []
        used = 0
        for r in reversed(results):
            block = f"[{r.name} {json.dumps(r.args, ensure_ascii=False)}]\n{r.text}"
            if used + len(block) > budget:
                block = block[: max(0, budget - used)]
            if not block:
                break
            parts.append(block)
            used += len(block)
        return "\n\n".join(reversed(parts))
