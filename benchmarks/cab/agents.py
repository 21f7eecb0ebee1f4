"""The three CAB agents: user (mock_user), maintainer (backbone + context manager + tools), judge.

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
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from benchmarks.cab.loader import CabIssue, issue_text
from benchmarks.cab.tools import TOOL_NAMES, TOOL_SCHEMAS, RepoTools, ToolResult, tools_prompt_description
from reconmem.platform.context import Context, ContextManager, Turn, build_messages
from reconmem.platform.fit import count_margin, fit_messages, window_budget
from reconmem.platform.templates import TemplateDir
from reconmem.platform.tools import (ToolCall, ToolDispatch, json_protocol_error, json_tool_result, looks_like_tool_call,
                                     parse_json_tool_call, reask_messages, reply_tool_calls, tool_call_message,
                                     tool_result_message)

if TYPE_CHECKING:
    from reconmem.platform.llm import LLMClient

FULLY_SATISFIED, PARTIALLY_SATISFIED, NOT_SATISFIED = "FULLY_SATISFIED", "PARTIALLY_SATISFIED", "NOT_SATISFIED"
CORRECT, PARTIALLY_CORRECT, INCORRECT = "CORRECT", "PARTIALLY CORRECT", "INCORRECT"
CONCISE, APPROPRIATE, VERBOSE = "CONCISE", "APPROPRIATE", "VERBOSE"


# --------------------------------------------------------------------------- prompts


_PROMPTS = TemplateDir("benchmarks.cab.prompts")
render_prompt = _PROMPTS.render  # render_prompt("<name>.txt", **values); a missing placeholder is a KeyError naming it


def maintainer_system_prompt(issue: CabIssue, *, function_calling: bool, max_tool_steps: int, docker: bool = False) -> str:
    """The response-generation prompt shared by every method (tool protocol appended when JSON)."""
    text = render_prompt("maintainer_system.txt", repo=issue.repo, commit=issue.commit_id or "(unknown)")
    if docker:
        text += "\n\n" + render_prompt("maintainer_docker.txt")
    if not function_calling:
        text += "\n\n" + render_prompt("maintainer_json_tools.txt", tools=tools_prompt_description(),
                                       max_steps=max_tool_steps)
    return text


def _numbered(items: list[str]) -> str:
    return "\n".join(f"{i}. {c}" for i, c in enumerate(items, start=1))


# --------------------------------------------------------------------------- user agent

_STATUS_RE = re.compile(
    r"SATISFACTION[\s_]*STATUS\**\s*[:=\-]?\s*\**\s*\[?\s*(FULLY[\s_]+SATISFIED|PARTIALLY[\s_]+SATISFIED|NOT[\s_]+SATISFIED)?",
    re.IGNORECASE)
_BARE_STATUS_RE = re.compile(r"\b(FULLY_SATISFIED|PARTIALLY_SATISFIED|NOT_SATISFIED)\b")


@dataclass
class UserReply:
    """The user agent's message: ``text`` goes to the maintainer; status/reason never do."""

    text: str
    status: str
    reason: str
    raw: str
    status_found: bool = True
    finish_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _canon_status(s: str) -> str:
    return re.sub(r"[\s_]+", "_", s.strip().upper())


def parse_user_reply(raw: str) -> UserReply:
    """Split a user-agent reply into the message and its satisfaction status (stripped).

    The status section starts at the last ``SATISFACTION_STATUS`` header (markdown emphasis and
    a preceding ``---`` rule are tolerated) and runs to the end. Without a header, a bare status
    token on the last non-empty line is accepted. Anything else is ``NOT_SATISFIED`` with
    ``status_found=False`` (the upstream default), and the whole text goes to the maintainer.
    """
    headers = list(_STATUS_RE.finditer(raw))
    if headers:
        h = headers[-1]
        status = _canon_status(h.group(1)) if h.group(1) else NOT_SATISFIED
        section = raw[h.start():]
        reason_m = re.search(r"REASON\**\s*[:=\-]\s*\**\s*(.+)", section, re.IGNORECASE)
        reason = reason_m.group(1).strip() if reason_m else ""
        head = raw[: h.start()].rstrip(" \t\r\n*#_")
        while re.search(r"(^|\n)[ \t]*(-{3,}|\*{3,}|_{3,}|={3,})$", head):  # trailing horizontal rules
            head = re.sub(r"(^|\n)[ \t]*(-{3,}|\*{3,}|_{3,}|={3,})$", "", head).rstrip(" \t\r\n*#_")
        return UserReply(text=head.strip(), status=status, reason=reason, raw=raw, status_found=bool(h.group(1)))
    lines = [ln for ln in raw.strip().splitlines() if ln.strip()]
    if lines:
        m = _BARE_STATUS_RE.search(lines[-1].upper())
        if m:
            return UserReply(text="\n".join(lines[:-1]).strip(), status=m.group(1), reason="", raw=raw)
    return UserReply(text=raw.strip(), status=NOT_SATISFIED, reason="no satisfaction status given", raw=raw,
                     status_found=False)


def format_conversation(conversation: list[dict[str, str]]) -> str:
    """``User: ...`` / ``Maintainer: ...`` blocks, as the user agent sees the exchange."""
    out = []
    for m in conversation:
        who = "User" if m["role"] == "user" else "Maintainer"
        out.append(f"{who}: {m['content']}")
    return "\n\n".join(out)


class UserAgent:
    """Simulated issue author (purpose ``mock_user``). Sees the issue, its conditions and the chat."""

    def __init__(self, llm: "LLMClient", issue: CabIssue, *, max_tokens: int | None = None):
        self.llm = llm
        self.issue = issue
        self.max_tokens = max_tokens
        self.system_prompt = render_prompt("user_system.txt", repo=issue.repo, title=issue.title.strip(),
                                           conditions=_numbered(issue.satisfaction_conditions))

    def opening_message(self) -> str:
        """The first user message: the issue as filed (no model call)."""
        return issue_text(self.issue)

    def reply(self, conversation: list[dict[str, str]], *, temperature: float | None = None) -> UserReply:
        """The user's next message (``temperature`` for a retry: a temperature-0 retry replays the cache)."""
        prompt = render_prompt("user_turn.txt", question=self.issue.body.strip() or self.issue.title.strip(),
                               conversation=format_conversation(conversation))
        messages = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": prompt}]
        kw: dict[str, Any] = {} if temperature is None else {"temperature": temperature}
        resp = self.llm.chat(messages, purpose="mock_user", max_tokens=self.max_tokens, **kw)
        reply = parse_user_reply(resp.text)
        reply.finish_reason = resp.finish_reason
        return reply


# --------------------------------------------------------------------------- maintainer


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


# --------------------------------------------------------------------------- judge

_LABEL_RE = re.compile(r"PARTIALLY[\s_\-]+CORRECT|INCORRECT|NOT[\s_]+CORRECT|CORRECT", re.IGNORECASE)
_VERBOSITY_RE = re.compile(r"CONCISE|APPROPRIATE|VERBOSE|TERSE", re.IGNORECASE)
_FIELD_NAMES = ("TECHNICAL CORRECTNESS", "ALIGNMENT SCORE", "VERBOSITY ASSESSMENT", "VERDICT", "KEY ISSUES", "REASONING")


class JudgeParseError(ValueError):
    """The judge's output lacks a field or gives an ambiguous value."""


class JudgeError(RuntimeError):
    """The judgment stayed malformed after one retry; carries the raw outputs."""

    def __init__(self, message: str, raw_outputs: list[str]):
        super().__init__(message)
        self.raw_outputs = raw_outputs


@dataclass
class Judgment:
    verdict: str
    technical_correctness: str
    alignment_met: int
    alignment_total: int
    conditions: list[dict[str, Any]]
    verbosity: str  # CONCISE (the paper's "Terse") | APPROPRIATE | VERBOSE
    key_issues: str = ""
    reasoning: str = ""
    raw: str = ""
    attempts: int = 1
    warnings: list[str] = field(default_factory=list)
    docker: dict[str, Any] | None = None
    verdict_before_docker: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _clean_judge_text(text: str) -> str:
    text = text.replace("**", "").replace("__", "").replace("`", "")
    return re.sub(r"^[ \t]*(?:#+|[-*>]|\d+\.)[ \t]*", "", text, flags=re.MULTILINE)


def _field_value(text: str, name: str) -> str | None:
    """Value after ``NAME:`` (same line, or the next non-empty line when the line is empty)."""
    pattern = r"^[ \t]*(?:FINAL[ \t]+)?" + r"[ \t]+".join(map(re.escape, name.split())) + r"[ \t]*(?:\([^)\n]*\))?[ \t]*[:\-][ \t]*(.*)$"
    m = re.search(pattern, text, re.IGNORECASE | re.MULTILINE)
    if not m:
        return None
    value = m.group(1).strip()
    if not value:
        rest = text[m.end():].lstrip("\n")
        value = rest.splitlines()[0].strip() if rest.strip() else ""
    return value


def _one_label(value: str | None, regex: re.Pattern, field_name: str) -> str:
    if value is None:
        raise JudgeParseError(f"missing {field_name}")
    v = value.strip().strip("[]()*'\"").strip()
    m = regex.match(v)
    if not m:
        raise JudgeParseError(f"{field_name} has no recognised value ({value[:60]!r})")
    rest = v[m.end():]
    if re.match(r"\s*[/|]\s*\w", rest) or re.match(r"\s+OR\s+", rest, re.IGNORECASE):
        raise JudgeParseError(f"{field_name} lists several values ({value[:60]!r})")
    label = re.sub(r"[\s_\-]+", " ", m.group(0).upper())
    return {"NOT CORRECT": INCORRECT, "TERSE": CONCISE}.get(label, label)


def _section(text: str, name: str, following: tuple[str, ...]) -> str:
    m = re.search(r"^[ \t]*" + re.escape(name) + r"[ \t]*:[ \t]*", text, re.IGNORECASE | re.MULTILINE)
    if not m:
        return ""
    rest = text[m.end():]
    ends = [mm.start() for f in following for mm in [re.search(r"^[ \t]*" + re.escape(f) + r"[ \t]*:", rest, re.IGNORECASE | re.MULTILINE)] if mm]
    return rest[: min(ends)].strip() if ends else rest.strip()


def parse_judgment(text: str, n_conditions: int) -> Judgment:
    """Parse the judge's reply (CAB format); raises :class:`JudgeParseError` when malformed.

    Required: TECHNICAL CORRECTNESS, VERDICT, VERBOSITY ASSESSMENT (one value each) and the
    alignment (``X/Y`` on the ALIGNMENT SCORE line, or derivable from exactly one TRUE/FALSE
    CONDITION line per satisfaction condition). Nothing is ever defaulted.
    """
    clean = _clean_judge_text(text)
    problems: list[str] = []
    warnings: list[str] = []
    values: dict[str, str] = {}
    for key, regex, name in (("technical", _LABEL_RE, "TECHNICAL CORRECTNESS"), ("verdict", _LABEL_RE, "VERDICT"),
                             ("verbosity", _VERBOSITY_RE, "VERBOSITY ASSESSMENT")):
        try:
            values[key] = _one_label(_field_value(clean, name) if name != "VERBOSITY ASSESSMENT"
                                     else (_field_value(clean, name) or _field_value(clean, "VERBOSITY")), regex, name)
        except JudgeParseError as exc:
            problems.append(str(exc))

    conditions: list[dict[str, Any]] = []
    seen: set[int] = set()
    for m in re.finditer(r"^[ \t]*CONDITION[ \t]*(\d+)[ \t]*[:\-.][ \t]*\[?[ \t]*(TRUE|FALSE)[ \t]*\]?[ \t:\-]*(.*)$", clean,
                         re.IGNORECASE | re.MULTILINE):
        num = int(m.group(1))
        if num in seen:
            continue
        seen.add(num)
        conditions.append({"number": num, "satisfied": m.group(2).upper() == "TRUE", "description": m.group(3).strip()})

    met = total = None
    align = _field_value(clean, "ALIGNMENT SCORE") or _field_value(clean, "ALIGNMENT")
    am = re.search(r"(\d+)\s*/\s*(\d+)", align or "") or re.search(r"(\d+)\s*/\s*(\d+)\s+CONDITIONS?\s+MET", clean, re.IGNORECASE)
    if am:
        met, total = int(am.group(1)), int(am.group(2))
        if total <= 0 or met > total:
            problems.append(f"alignment {met}/{total} is impossible")
    elif conditions and sorted(seen) == list(range(1, n_conditions + 1)):
        met, total = sum(c["satisfied"] for c in conditions), n_conditions
        warnings.append("alignment derived from the CONDITION lines")
    else:
        problems.append("missing ALIGNMENT SCORE (X/Y)")
    if total is not None and total != n_conditions:
        warnings.append(f"alignment total {total} != {n_conditions} satisfaction conditions")
    if conditions and met is not None and sum(c["satisfied"] for c in conditions) != met:
        warnings.append("alignment count differs from the TRUE condition lines")
    if problems:
        raise JudgeParseError("; ".join(problems))
    return Judgment(
        verdict=values["verdict"], technical_correctness=values["technical"], alignment_met=int(met),
        alignment_total=int(total), conditions=conditions, verbosity=values["verbosity"],
        key_issues=_section(clean, "KEY ISSUES", ("REASONING", "VERDICT")),
        reasoning=_section(clean, "REASONING", ("KEY ISSUES",)), raw=text, warnings=warnings)


def format_reference(issue: CabIssue) -> str:
    if not issue.comments:
        return "(no comments)"
    return "\n\n".join(f"[{c.user}]:\n{c.body}" for c in issue.comments)


class JudgeAgent:
    """Judges the final maintainer answer (purpose ``judge``); one retry on a malformed reply."""

    def __init__(self, llm: "LLMClient", *, max_tokens: int | None = None):
        self.llm = llm
        self.max_tokens = max_tokens

    def messages(self, issue: CabIssue, answer: str, docker: dict[str, Any] | None = None) -> list[dict[str, str]]:
        docker_rules = docker_verdict = docker_block = ""
        if docker is not None:
            docker_rules = ("\nThis issue has a Docker environment. An answer can only be CORRECT if it is technically sound AND the "
                            "Docker build and test succeeded; if the Docker validation shows Success: False, it is INCORRECT.\n")
            docker_verdict = ", or the Docker validation failed"
            docker_block = (f"\nMAINTAINER ANSWER VALIDATION RESULTS VIA DOCKER\nSuccess: {bool(docker.get('success'))}\n"
                            f"Logs:\n{str(docker.get('logs', ''))[-4000:]}\n")
        system = render_prompt("judge_system.txt", docker_rules=docker_rules, docker_verdict=docker_verdict)
        user = render_prompt("judge_user.txt", title=issue.title.strip(), body=issue.body.strip() or "(empty)",
                             reference=format_reference(issue), conditions=_numbered(issue.satisfaction_conditions),
                             answer=answer.strip() or "(empty answer)", docker=docker_block)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def judge(self, issue: CabIssue, answer: str, docker: dict[str, Any] | None = None) -> Judgment:
        messages = self.messages(issue, answer, docker)
        raws: list[str] = []
        problem = ""
        for attempt in (1, 2):
            resp = self.llm.chat(messages, purpose="judge", max_tokens=self.max_tokens)
            raws.append(resp.text)
            try:
                judgment = parse_judgment(resp.text, len(issue.satisfaction_conditions))
            except JudgeParseError as exc:
                problem = str(exc)
                messages = messages + [{"role": "assistant", "content": resp.text},
                                       {"role": "user", "content": render_prompt("judge_retry.txt", problem=problem)}]
                continue
            judgment.attempts = attempt
            if docker is not None:
                judgment.docker = {"success": bool(docker.get("success"))}
                if not docker.get("success") and judgment.verdict != INCORRECT:
                    judgment.verdict_before_docker = judgment.verdict
                    judgment.verdict = INCORRECT  # a failed build makes the verdict INCORRECT (CAB rule)
            return judgment
        raise JudgeError(f"malformed judgment after retry: {problem}", raws)
