"""The CAB Maintainer Agent on the real Strands Agents host (``strands-agents==1.45.0``, paper §3.4).

The paper builds its CAB Maintainer Agent on Strands Agents and compares ReConMem, Full History
and Mem0 "within the same Maintainer Agent framework" against *Native Strands*: that agent with its
own native context handling and no external memory. This module provides that host:

* :class:`ClientModel` — a Strands model provider written over our one LLM client
  (:class:`reconmem.platform.llm.LLMClient`), so every call the Strands event loop makes is cached,
  tagged with a purpose (``turn_generation`` for the first call of a maintainer response,
  ``maintainer_tool_step`` after tool results) and recorded in the usage ledger. Backbones without
  function calling use the same strict JSON tool protocol as :class:`benchmarks.cab.maintainer.MaintainerAgent`.
  Our client already retries, so Strands' own model retry strategy is switched off (no call is paid
  twice). A context-length error becomes Strands' ``ContextWindowOverflowException``, which is what
  lets its conversation manager reduce the history (the native context handling).
* :func:`repo_tools` — our read-only repository tools (:class:`benchmarks.cab.tools.RepoTools`)
  registered as Strands tools with the same schemas, executed through the dispatch of
  :func:`benchmarks.cab.maintainer.response_dispatch` (clipping, calls per step, repeated calls) and one
  at a time (``SequentialToolExecutor``: the order of results is the order of the calls).
* The rules the built-in maintainer follows hold here too, for every method (the module docstring
  of :mod:`benchmarks.cab.maintainer`): each request is fitted to the window before it is sent, the same
  tool-step and calls-per-step caps, repeated calls answered from the cache, a tool call given as
  the answer re-asked once.
* :class:`StrandsMaintainer` — the maintainer with the interface of ``MaintainerAgent``. With a
  method that keeps no memory of its own (``host_managed_history = True``, i.e. Native Strands) one
  Strands ``Agent`` lives for the whole issue with its default conversation manager
  (``SlidingWindowConversationManager``). With an external-memory method (ReConMem, Full, Mem0, ...)
  each response starts a fresh Agent from the messages the method built (``NullConversationManager``:
  the method, not the host, decides the context), and the Strands event loop runs the tool calls.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterable
from typing import TYPE_CHECKING, Any

from benchmarks.cab.maintainer import MaintainerTurn, fit_maintainer_request, response_dispatch
from benchmarks.cab.prompts import render_prompt
from benchmarks.cab.tools import TOOL_NAMES, TOOL_SCHEMAS, RepoTools, ToolResult
from reconmem.platform.context import Context, ContextManager, Turn, build_messages
from reconmem.platform.tools import (ToolCall, ToolDispatch, json_protocol_error, json_tool_result, looks_like_tool_call,
                                     parse_json_tool_call, reask_messages, reply_tool_calls, tool_call_message,
                                     tool_result_message)

if TYPE_CHECKING:
    from reconmem.platform.llm import LLMClient

STRANDS_VERSION = "1.45.0"
PROTOCOL_ERROR_TOOL = "protocol_error"  # JSON-protocol backbones: a malformed tool call is answered by this tool


def _require_strands() -> None:
    try:
        import strands  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            f"the Strands host needs strands-agents=={STRANDS_VERSION}: pip install -e '.[strands]'") from exc


# --------------------------------------------------------------------------- message conversion


def _tool_result_text(result: dict[str, Any]) -> str:
    parts = []
    for item in result.get("content", []) or []:
        if "text" in item:
            parts.append(str(item["text"]))
        elif "json" in item:
            parts.append(json.dumps(item["json"], ensure_ascii=False))
    return "\n".join(parts)


def to_chat_messages(messages: list[dict[str, Any]], system_prompt: str | None, *,
                     function_calling: bool) -> list[dict[str, Any]]:
    """Strands messages (content blocks) -> the OpenAI-style chat messages our client sends.

    Function-calling backbones get ``tool_calls`` / ``role: tool`` messages; JSON-protocol backbones
    get the assistant's JSON text and a ``TOOL RESULT (<name>):`` user message, exactly as the
    built-in maintainer writes them.
    """
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    names: dict[str, str] = {}
    for msg in messages:
        role = msg["role"]
        texts = [b["text"] for b in msg["content"] if "text" in b]
        uses = [b["toolUse"] for b in msg["content"] if "toolUse" in b]
        results = [b["toolResult"] for b in msg["content"] if "toolResult" in b]
        if role == "assistant":
            for u in uses:
                names[u["toolUseId"]] = u["name"]
            if function_calling and uses:
                out.append(tool_call_message("\n".join(texts) or None,
                                             [ToolCall(u["toolUseId"], u["name"], u.get("input") or {}) for u in uses]))
            else:
                out.append({"role": "assistant", "content": "\n".join(texts)})
            continue
        if function_calling:
            for r in results:
                out.append(tool_result_message(r["toolUseId"], names.get(r["toolUseId"], ""), _tool_result_text(r)))
            if texts:
                out.append({"role": "user", "content": "\n".join(texts)})
            continue
        pieces = []
        for r in results:
            name = names.get(r["toolUseId"], "")
            body = _tool_result_text(r)
            pieces.append(body if name == PROTOCOL_ERROR_TOOL else json_tool_result(name, body))
        pieces.extend(texts)
        out.append({"role": "user", "content": "\n\n".join(pieces)})
    return out


def from_chat_messages(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]], str]:
    """A method's context (system, history ..., final user query) -> (system, Strands history, query)."""
    system = ""
    rest = list(messages)
    if rest and rest[0]["role"] == "system":
        system = str(rest.pop(0)["content"])
    if not rest or rest[-1]["role"] != "user":
        raise ValueError("a maintainer context must end with the user's query")
    query = str(rest.pop()["content"])
    history: list[dict[str, Any]] = []
    for m in rest:
        role = "assistant" if m["role"] == "assistant" else "user"
        text = str(m.get("content") or "")
        if m["role"] == "system":  # extra system blocks (retrieved context) travel as user text
            role = "user"
        if history and history[-1]["role"] == role:  # Strands wants alternating roles
            history[-1]["content"].append({"text": text})
        else:
            history.append({"role": role, "content": [{"text": text}]})
    if history and history[-1]["role"] == "user":
        query = "\n\n".join(b["text"] for b in history.pop()["content"]) + "\n\n" + query
    return system, history, query


# --------------------------------------------------------------------------- model provider


def _make_model_class() -> type:
    _require_strands()
    from strands.models.model import Model
    from strands.types.exceptions import ContextWindowOverflowException

    class _ClientModel(Model):
        """Strands model provider over :class:`reconmem.platform.llm.LLMClient` (see module doc)."""

        def __init__(self, llm: "LLMClient", *, max_tokens: int | None = None, function_calling: bool | None = None,
                     max_tool_steps: int = 8, tools: ToolDispatch[ToolResult] | None = None) -> None:
            self.llm = llm
            self.config: dict[str, Any] = {
                "model_id": llm.spec.model, "max_tokens": max_tokens,
                "context_window_limit": int(llm.spec.context_window)}
            self.function_calling = bool(llm.spec.supports_function_calling if function_calling is None
                                         else function_calling)
            self.max_tool_steps = int(max_tool_steps)
            self.tools = tools
            self.protocol_errors = 0
            self.positions: dict[str, int] = {}  # toolUseId -> its place in its round (calls-per-step cap)
            self.new_turn()

        def new_turn(self, query: str | None = None) -> None:
            """Reset the per-response state (purpose tags, the tool-step cap, trims, re-asks)."""
            self.query = query
            self.calls_this_turn = 0
            self.tool_rounds = 0
            self.forced_final = False
            self.reasked = False
            self.final_is_tool_call = False
            self.fits: list[dict[str, Any]] = []
            self.positions.clear()

        def update_config(self, **model_config: Any) -> None:
            self.config.update(model_config)

        def get_config(self) -> dict[str, Any]:
            return self.config

        async def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None,
                                    **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
            raise NotImplementedError("the CAB maintainer does not use structured output")
            yield {}  # pragma: no cover

        def _start(self, messages: list[dict[str, Any]], system_prompt: str | None) -> int | None:
            """Index (in the chat messages) of the user message this response answers."""
            for i in range(len(messages) - 1, -1, -1):
                m = messages[i]
                if (m["role"] == "user" and not any("toolResult" in b for b in m["content"])
                        and any(b.get("text") == self.query for b in m["content"])):
                    return len(to_chat_messages(messages[:i], system_prompt, function_calling=self.function_calling))
            return None

        def _chat(self, chat: list[dict[str, Any]], start: int | None, **kw: Any) -> Any:
            """One request through the window guard (the guard of every method on both hosts)."""
            fitted, meta = fit_maintainer_request(self.llm, chat, start=start, max_tokens=self.config.get("max_tokens"))
            if meta["tokens_after"] != meta["tokens_before"]:
                self.fits.append({"call": self.calls_this_turn, **meta})
            resp = self.llm.chat(fitted, max_tokens=self.config.get("max_tokens"), **kw)
            self.calls_this_turn += 1
            return resp

        async def stream(self, messages: Any, tool_specs: list[dict[str, Any]] | None = None,
                         system_prompt: str | None = None, **kwargs: Any) -> AsyncIterable[dict[str, Any]]:
            from reconmem.platform.llm import ContextLengthExceeded

            purpose = "turn_generation" if self.calls_this_turn == 0 else "maintainer_tool_step"
            with_tools = bool(tool_specs) and self.tool_rounds < self.max_tool_steps
            if tool_specs and not with_tools:
                self.forced_final = True
            history = list(messages)
            chat = to_chat_messages(history, system_prompt, function_calling=self.function_calling)
            start = self._start(history, system_prompt)
            if self.forced_final:
                chat.append({"role": "user", "content": "The tool budget of this response is used up. "
                                                        "Answer the question now, in plain text, without tools."})
            kw: dict[str, Any] = {"purpose": purpose}
            if with_tools and self.function_calling:
                kw["tools"] = TOOL_SCHEMAS
            try:
                resp = self._chat(chat, start, **kw)
                uses = self._uses(resp, with_tools)
                text = resp.text or ""
                if not uses and looks_like_tool_call(text, TOOL_NAMES):  # the answer is a tool call: re-ask once, no tools
                    self.reasked = True
                    retry = reask_messages(chat, text, render_prompt("maintainer_final_retry.txt"))
                    resp = self._chat(retry, start, purpose="maintainer_tool_step")
                    text = resp.text or ""
                    self.final_is_tool_call = looks_like_tool_call(text, TOOL_NAMES)
            except ContextLengthExceeded as exc:
                raise ContextWindowOverflowException(str(exc)) from exc
            if uses:
                self.tool_rounds += 1
            yield {"messageStart": {"role": "assistant"}}
            if text:  # the answer, or (JSON protocol) the call's text, kept for the next request
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": text}}}
                yield {"contentBlockStop": {}}
            for use_id, name, args in uses:
                yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": use_id, "name": name}}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use" if uses else "end_turn"}}
            usage = resp.usage
            yield {"metadata": {"usage": {"inputTokens": int(usage.input_tokens), "outputTokens": int(usage.output_tokens),
                                          "totalTokens": int(usage.input_tokens) + int(usage.output_tokens)},
                                "metrics": {"latencyMs": 0}}}

        def _uses(self, resp: Any, with_tools: bool) -> list[tuple[str, str, dict[str, Any]]]:
            """The reply's tool calls as (toolUseId, name, input); their places in the round are noted."""
            uses: list[tuple[str, str, dict[str, Any]]] = []
            if with_tools and self.function_calling:
                for c in reply_tool_calls(resp):
                    uses.append((str(c.id), str(c.name), c.arguments if isinstance(c.arguments, dict) else {}))
            elif with_tools:
                parsed = parse_json_tool_call(resp.text or "", TOOL_NAMES)
                if isinstance(parsed, tuple):
                    uses.append((f"json_{uuid.uuid4().hex[:8]}", parsed[0], parsed[1]))
                elif isinstance(parsed, str):
                    self.protocol_errors += 1
                    uses.append((f"json_{uuid.uuid4().hex[:8]}", PROTOCOL_ERROR_TOOL, {"message": parsed}))
            for n, (use_id, _, _) in enumerate(uses):
                self.positions[use_id] = n
            return uses

    return _ClientModel


_MODEL_CLASS: type | None = None


def ClientModel(llm: "LLMClient", **kw: Any) -> Any:  # noqa: N802 - a class factory (Strands imported lazily)
    """A Strands ``Model`` over our LLM client (see :mod:`benchmarks.cab.strands_host`)."""
    global _MODEL_CLASS
    if _MODEL_CLASS is None:
        _MODEL_CLASS = _make_model_class()
    return _MODEL_CLASS(llm, **kw)


# --------------------------------------------------------------------------- tools


def repo_tools(tools: ToolDispatch[ToolResult], positions: dict[str, int] | None = None) -> list[Any]:
    """Our read-only repository tools as Strands tools, executed through ``tools`` (the dispatch of
    :func:`benchmarks.cab.maintainer.response_dispatch`); ``positions`` maps a toolUseId to its place in its round."""
    _require_strands()
    from strands.tools.tools import PythonAgentTool

    positions = positions if positions is not None else {}

    def make(name: str, spec: dict[str, Any]) -> Any:
        def run(tool_use: dict[str, Any], **_: Any) -> dict[str, Any]:
            before = len(tools.results)
            text, ran = tools.execute(name, tool_use.get("input") or {}, position=positions.get(tool_use["toolUseId"], 0))
            ok = tools.results[before].ok if ran and len(tools.results) > before else not text.startswith("ERROR:")
            return {"toolUseId": tool_use["toolUseId"], "status": "success" if ok else "error",
                    "content": [{"text": text}]}

        run.__name__ = name
        strands_spec = {"name": name, "description": spec["description"], "inputSchema": {"json": spec["parameters"]}}
        return PythonAgentTool(name, strands_spec, run)

    def protocol_error(tool_use: dict[str, Any], **_: Any) -> dict[str, Any]:
        message = (tool_use.get("input") or {}).get("message", "malformed tool call")
        return {"toolUseId": tool_use["toolUseId"], "status": "error", "content": [{"text": json_protocol_error(message)}]}

    protocol_error.__name__ = PROTOCOL_ERROR_TOOL
    out = [make(s["function"]["name"], s["function"]) for s in TOOL_SCHEMAS]
    out.append(PythonAgentTool(PROTOCOL_ERROR_TOOL, {
        "name": PROTOCOL_ERROR_TOOL, "description": "Internal: explains a malformed JSON tool call.",
        "inputSchema": {"json": {"type": "object", "properties": {"message": {"type": "string"}}}}}, protocol_error))
    return out


# --------------------------------------------------------------------------- maintainer


class StrandsMaintainer:
    """The CAB maintainer on a Strands ``Agent`` (same interface as ``MaintainerAgent``)."""

    def __init__(self, llm: "LLMClient", manager: ContextManager, tools: RepoTools, *, max_tool_steps: int = 8,
                 max_tokens: int | None = None, function_calling: bool | None = None, max_calls_per_step: int = 4,
                 max_tool_result_chars: int = 12_000, window_size: int = 40) -> None:
        _require_strands()
        self.llm = llm
        self.manager = manager
        self.tools = tools
        self.native = bool(getattr(manager, "host_managed_history", False))
        self.response_tools = response_dispatch(tools, max_calls_per_step=max_calls_per_step,
                                                 max_result_chars=max_tool_result_chars)
        self.model = ClientModel(llm, max_tokens=max_tokens, function_calling=function_calling,
                                 max_tool_steps=max_tool_steps, tools=self.response_tools)
        self.function_calling = self.model.function_calling
        self.window_size = int(window_size)
        self.max_tool_result_chars = int(max_tool_result_chars)
        self._agent: Any = None

    def _new_agent(self, system_prompt: str, history: list[dict[str, Any]], *, native: bool) -> Any:
        from strands import Agent
        from strands.agent.conversation_manager import NullConversationManager, SlidingWindowConversationManager
        from strands.tools.executors import SequentialToolExecutor

        manager = SlidingWindowConversationManager(window_size=self.window_size) if native else NullConversationManager()
        return Agent(model=self.model, messages=history, tools=repo_tools(self.response_tools, self.model.positions),
                     system_prompt=system_prompt, callback_handler=None, conversation_manager=manager,
                     retry_strategy=None, record_direct_tool_call=False, tool_executor=SequentialToolExecutor())

    # ---- public (the interface of MaintainerAgent)

    def respond(self, query: str, *, first_turn: bool) -> MaintainerTurn:
        """Answer ``query``; the first turn has no memory recall; Native Strands never recalls."""
        if first_turn or self.native:
            return self.respond_without_recall(query)
        return self.respond_with_context(query, self.manager.context_for(query))

    def respond_without_recall(self, query: str) -> MaintainerTurn:
        """First response (or any Native Strands response): the host's own history only."""
        system = self.manager._session().system_prompt
        if self._agent is None or not self.native:
            self._agent = self._new_agent(system, [], native=self.native)
        history_before = len(self._agent.messages)
        messages = build_messages(system, [], [], query)
        ctx = Context(query=query, messages=messages, items=[],
                      meta={"no_recall": True, "host": "strands", "native_history_messages": history_before})
        turn = self._invoke(self._agent, query, ctx)
        turn.recalled = False
        return turn

    def respond_with_context(self, query: str, ctx: Context) -> MaintainerTurn:
        """A response on the context the method built (a fresh Agent; the method owns the context)."""
        system, history, final_query = from_chat_messages([dict(m) for m in ctx.messages])
        ctx.meta.setdefault("host", "strands")
        return self._invoke(self._new_agent(system, history, native=False), final_query, ctx)

    def observe(self, index: int, query: str, turn: MaintainerTurn) -> None:
        """Let the context manager update its memory with the completed exchange (tool calls in meta)."""
        calls = [{"tool": r.name, "args": r.args, "ok": r.ok} for r in turn.tool_results]
        self.manager.observe(Turn(index=index, user=query, assistant=turn.text, meta={"tool_calls": calls}))

    # ---- loop

    def _invoke(self, agent: Any, query: str, ctx: Context) -> MaintainerTurn:
        from strands.types.exceptions import ContextWindowOverflowException

        from reconmem.platform.llm import ContextLengthExceeded

        self.model.new_turn(query)
        errors_before = self.model.protocol_errors
        self.response_tools.new_response()
        try:
            result = agent(query)
        except ContextWindowOverflowException as exc:
            raise ContextLengthExceeded(f"strands host: {exc}") from exc
        turn = MaintainerTurn(text=str(result).strip(), context=ctx)
        turn.tool_results = list(self.response_tools.results)
        turn.llm_calls = self.model.calls_this_turn
        turn.tool_steps = self.model.tool_rounds
        turn.forced_final = self.model.forced_final
        turn.protocol_errors = self.model.protocol_errors - errors_before
        turn.repeated_calls = self.response_tools.repeated
        turn.over_cap_calls = self.response_tools.over_cap
        turn.reasked = self.model.reasked
        turn.final_is_tool_call = self.model.final_is_tool_call
        turn.window_trims = len(self.model.fits)
        if self.model.fits:
            ctx.meta["window_guard"] = list(self.model.fits)
        if turn.forced_final:
            ctx.meta["forced_final"] = "steps"
        if self.native:
            ctx.meta["native_history_messages"] = len(agent.messages)
        return turn


def make_maintainer(host: str, llm: "LLMClient", manager: ContextManager, tools: RepoTools, **kw: Any) -> Any:
    """The maintainer for ``benchmark.maintainer_host``: ``builtin`` (MaintainerAgent) or ``strands``.

    A method that keeps no history of its own (Native Strands) needs the Strands host.
    """
    from benchmarks.cab.maintainer import MaintainerAgent

    if host == "strands" or getattr(manager, "host_managed_history", False):
        return StrandsMaintainer(llm, manager, tools, **kw)
    if host != "builtin":
        raise ValueError(f"benchmark.maintainer_host={host!r}: expected 'builtin' or 'strands'")
    kw.pop("window_size", None)
    return MaintainerAgent(llm, manager, tools, **kw)


class NativeStrands(ContextManager):
    """Native Strands (paper Table 2): no external memory; the Strands host keeps the history.

    It never builds a context of its own: :class:`StrandsMaintainer` sees ``host_managed_history``
    and keeps one Strands ``Agent`` per issue whose default conversation manager
    (``SlidingWindowConversationManager``) decides what of the history is sent. It makes no LLM
    calls, so its memory tokens are 0. Only meaningful on CAB's Strands host.
    """

    name = "native_strands"
    host_managed_history = True

    def __init__(self) -> None:
        super().__init__()
        self.turns = 0

    def start(self, session: Any) -> None:
        super().start(session)
        self.turns = 0

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        raise RuntimeError("native_strands keeps no context of its own; it runs only on the Strands host "
                           "(benchmark=cab, benchmark.maintainer_host=strands)")

    def observe(self, turn: Turn) -> None:
        self.turns += 1

    def state(self) -> dict[str, Any]:
        return {"host": "strands", "strands_version": STRANDS_VERSION, "turns": self.turns}
