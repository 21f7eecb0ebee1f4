"""MemGPT baseline (Packer et al. 2023; paper §3.4): virtual context management with memory tiers.

Main context = the benchmark's system prompt + MemGPT instructions + memory metadata + core memory
(``persona`` and ``human`` blocks, each at most ``core_block_chars`` characters) + the FIFO message
buffer. Outside it: recall memory (the full message log, text search) and archival memory
(embedding search, pages of ``archival_page_size``).

``respond`` runs the agent loop: each step is one backbone call whose reply is a function call
(send_message, core_memory_append, core_memory_replace, conversation_search, archival_memory_insert,
archival_memory_search). A step continues the chain when the call asked for a heartbeat
(``request_heartbeat``) or failed (MemGPT forces a heartbeat after a failed call); any other step ends
the chain, as in MemGPT - also a memory edit without a heartbeat, whose answer to the user is then
empty. At most ``heartbeat_cap`` steps run per user message (the last one is offered send_message
only). A reply with plain text and no function call is taken as the message (MemGPT would show
nothing; small backbones often answer so).
Function calls use litellm function calling (``tools=``) when the backbone config says
``supports_function_calling``, else a strict JSON protocol through ``chat_json``.

Token accounting (every token of every step counts): every agent step is tagged with the caller's
purpose (``turn_generation`` / ``task_generation``), because MemGPT edits its memory inside the same
calls that produce the answer; overflow summaries are tagged ``memory_summarisation``.

Memory pressure: before each step (and after each observed turn) the main context is counted with
``session.llm.count_tokens``. Above ``pressure_fraction`` of ``session.context_window`` a system
alert is added to the buffer once (until the next summarisation). Above the window minus the answer
reserve, the oldest ~75% of the buffer (by tokens) is summarised into one message, always keeping
the last ``keep_last_messages`` messages. Every request then goes through the shared window guard
(:mod:`reconmem.platform.fit`: repository code first, then the oldest buffer messages; the per-step
trims are in ``reply.meta["steps"][i]["fit"]`` and ``context.meta["step_trims"]``).
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import numpy as np

from baselines import prompts
from baselines.common import memory_call, supports_function_calling
from baselines.repo_context import adaptation_k, render_code_block, repo_items
from reconmem.platform.context import MEMORY, RECENT, Context, ContextItem, ContextManager, Reply, Session, Turn, build_messages
from reconmem.platform.fit import fit_input, fit_prompt, group_history, prompt_budget
from reconmem.platform.tools import ToolCall, function_tool, reply_tool_calls, tool_call_message, tool_result_message

_CALL_IDS = itertools.count(1)  # process-wide ids tagging JSON-protocol steps in the ledger
_HEARTBEAT = {"type": "boolean", "description": "true to get control back after this function returns (to call another function)"}

FUNCTIONS: dict[str, dict[str, Any]] = {
    "send_message": {
        "description": "Send a message to the user. This is the only way the user sees anything you say.",
        "parameters": {"type": "object", "properties": {"message": {"type": "string", "description": "the message text"}},
                       "required": ["message"]},
    },
    "core_memory_append": {
        "description": "Append text to a core memory block ('persona' or 'human').",
        "parameters": {"type": "object", "properties": {
            "label": {"type": "string", "enum": ["persona", "human"]}, "content": {"type": "string"},
            "request_heartbeat": _HEARTBEAT}, "required": ["label", "content"]},
    },
    "core_memory_replace": {
        "description": "Replace exact text in a core memory block ('persona' or 'human'); new_content '' deletes it.",
        "parameters": {"type": "object", "properties": {
            "label": {"type": "string", "enum": ["persona", "human"]}, "old_content": {"type": "string"},
            "new_content": {"type": "string"}, "request_heartbeat": _HEARTBEAT},
            "required": ["label", "old_content", "new_content"]},
    },
    "conversation_search": {
        "description": "Search the full log of past messages (recall memory) for a text; results come in pages.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "page": {"type": "integer", "description": "page number, from 0"},
            "request_heartbeat": _HEARTBEAT}, "required": ["query"]},
    },
    "archival_memory_insert": {
        "description": "Store a passage in archival memory (long-term storage outside the context).",
        "parameters": {"type": "object", "properties": {"content": {"type": "string"}, "request_heartbeat": _HEARTBEAT},
                       "required": ["content"]},
    },
    "archival_memory_search": {
        "description": "Search archival memory by meaning; results come in pages.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "page": {"type": "integer", "description": "page number, from 0"},
            "request_heartbeat": _HEARTBEAT}, "required": ["query"]},
    },
}


def tool_schemas(names: list[str] | None = None) -> list[dict[str, Any]]:
    """OpenAI/litellm ``tools=`` entries for the named functions (all by default)."""
    return [function_tool(n, FUNCTIONS[n]["description"], FUNCTIONS[n]["parameters"]) for n in (names or list(FUNCTIONS))]


def _protocol_text(names: list[str]) -> str:
    lines = []
    for n in names:
        props = FUNCTIONS[n]["parameters"]["properties"]
        args = ", ".join(f"{a}: {p.get('type', 'string')}" for a, p in props.items())
        lines.append(f"- {n}({args}): {FUNCTIONS[n]['description']}")
    return prompts.render("memgpt_json_protocol", functions="\n".join(lines))


def _json_call_shape(obj: Any) -> dict[str, Any]:
    """Validate one JSON-protocol reply -> ``{"name", "arguments", "thoughts"}``."""
    if not isinstance(obj, dict):
        raise ValueError("expected one JSON object")
    call = obj.get("function_call") if isinstance(obj.get("function_call"), dict) else obj
    name = call.get("function") if isinstance(call.get("function"), str) else call.get("name")
    if not isinstance(name, str) or name not in FUNCTIONS:
        raise ValueError(f"unknown function {name!r}")
    args = call.get("arguments", {})
    if isinstance(args, str):
        args = json.loads(args)
    if not isinstance(args, dict):
        raise ValueError("arguments must be an object")
    args = dict(args)
    if "request_heartbeat" in obj and "request_heartbeat" not in args:
        args["request_heartbeat"] = obj["request_heartbeat"]
    thoughts = obj.get("inner_thoughts") or obj.get("thoughts") or ""
    return {"name": name, "arguments": args, "thoughts": str(thoughts)}


class MemGPT(ContextManager):
    """An agent that manages its own context with core, recall and archival memory."""

    name = "memgpt"

    def __init__(self, heartbeat_cap: int = 6, core_block_chars: int = 2000, pressure_fraction: float = 0.75,
                 keep_last_messages: int = 3, archival_page_size: int = 5, summary_fraction: float = 0.75,
                 answer_reserve: int | None = None, repo_context_k: int | None = None) -> None:
        super().__init__()
        if heartbeat_cap < 1 or core_block_chars < 1 or archival_page_size < 1 or keep_last_messages < 0:
            raise ValueError("method.manager: heartbeat_cap, core_block_chars, archival_page_size must be >= 1 and "
                             "keep_last_messages >= 0")
        if not 0 < pressure_fraction < 1 or not 0 < summary_fraction < 1:
            raise ValueError("method.manager: pressure_fraction and summary_fraction must be in (0, 1)")
        self.heartbeat_cap = int(heartbeat_cap)
        self.core_block_chars = int(core_block_chars)
        self.pressure_fraction = float(pressure_fraction)
        self.keep_last_messages = int(keep_last_messages)
        self.archival_page_size = int(archival_page_size)
        self.summary_fraction = float(summary_fraction)
        self.answer_reserve = answer_reserve
        self.repo_context_k = repo_context_k
        self._reset()

    def _reset(self) -> None:
        self.core: dict[str, str] = {"persona": prompts.render("memgpt_persona"), "human": ""}
        self.buffer: list[dict[str, Any]] = []  # the FIFO queue of chat messages in the main context
        self.log: list[dict[str, Any]] = []  # recall memory: every message ever, {"id", "role", "content"}
        self.archival: list[dict[str, Any]] = []  # {"id", "text"}
        self._archival_vectors: list[np.ndarray] = []
        self.summaries: list[dict[str, Any]] = []
        self.pressure_warnings = 0
        self.skipped_calls: list[dict[str, Any]] = []  # memory calls whose prompt could not fit the window
        self._warned = False
        self._pending_query: str | None = None
        self._repo_items: list[ContextItem] = []  # the repository functions of the message being answered
        self._last_fit: dict[str, Any] = {}

    def start(self, session: Session) -> None:
        super().start(session)
        self._reset()

    # ---- main context -------------------------------------------------------------------------
    def _use_tools(self) -> bool:
        return supports_function_calling(self._session())

    def _blocks(self, functions: list[str] | None = None, code: list[ContextItem] | None = None) -> list[str]:
        memory = prompts.render("memgpt_memory", n_messages=len(self.log), n_archival=len(self.archival),
                                persona=self.core["persona"], human=self.core["human"],
                                persona_chars=len(self.core["persona"]), human_chars=len(self.core["human"]),
                                limit=self.core_block_chars)
        blocks = [prompts.render("memgpt_instructions", block_chars=self.core_block_chars)]
        if not self._use_tools():
            blocks.append(_protocol_text(functions or list(FUNCTIONS)))
        return blocks + [memory, render_code_block(self._repo_items if code is None else code)]

    def _step_messages(self, functions: list[str] | None = None) -> list[dict[str, Any]]:
        """The main context as MemGPT holds it (before the window guard)."""
        return build_messages(self._session().system_prompt, self._blocks(functions), list(self.buffer), None)

    def _fit(self, functions: list[str] | None, code: list[ContextItem], query: str | None) -> Any:
        """The window guard over one request: repository code first, then the oldest buffer messages
        (never the last one); MemGPT's own summarisation runs before and normally makes this a no-op."""
        return fit_prompt(self._session(), sections=lambda kept: self._blocks(functions, kept), items=code,
                          query=query, history=group_history(self._clean(self.buffer)),
                          answer_reserve=self.answer_reserve, keep_last_groups=0 if query is not None else 1)

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        """The main context the first agent step for ``query`` would see (no memory change)."""
        session = self._session()
        code = repo_items(session, query, adaptation_k(session, self.repo_context_k))
        fitted = self._fit(None, code, query)
        return Context(query=query, messages=fitted.messages, items=self._items() + fitted.items,
                       meta={"buffer_messages": len(self.buffer), "recall_messages": len(self.log), **fitted.meta})

    def _items(self) -> list[ContextItem]:
        items = [ContextItem(kind="core_memory", id=label, text=text, source=MEMORY) for label, text in self.core.items() if text]
        for i, m in enumerate(self.buffer):
            kind = "summary" if m.get("_summary") else "message"
            items.append(ContextItem(kind=kind, id=f"buffer:{i}", text=str(m.get("content") or ""),
                                     source=MEMORY if kind == "summary" else RECENT, meta={"role": m["role"]}))
        return items

    # ---- buffer, recall log, pressure ----------------------------------------------------------
    def _push(self, message: dict[str, Any], *, log_role: str | None = None, log_text: str | None = None) -> None:
        self.buffer.append(message)
        if log_role is not None:
            self.log.append({"id": len(self.log), "role": log_role, "content": log_text if log_text is not None else message["content"]})

    def _clean(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in m.items() if not k.startswith("_")} for m in messages]

    def manage_pressure(self) -> None:
        """Summarise on overflow, else add the memory-pressure alert once above the threshold."""
        session = self._session()
        count = session.llm.count_tokens
        budget = prompt_budget(session, self.answer_reserve)  # the shared guard's budget
        used = count(self._clean(self._step_messages()))
        while used > budget and len(self.buffer) > self.keep_last_messages:
            before = len(self.buffer)
            self.summarise()
            used = count(self._clean(self._step_messages()))
            if len(self.buffer) >= before:
                break
        if used > self.pressure_fraction * session.context_window and not self._warned:
            alert = prompts.render("memgpt_pressure", used=used, window=session.context_window)
            self._push({"role": "user", "content": alert, "_alert": True})
            self._warned = True
            self.pressure_warnings += 1

    def summarise(self) -> None:
        """Replace the oldest ~``summary_fraction`` of the buffer (by tokens) by one summary message."""
        session = self._session()
        n = len(self.buffer)
        limit = n - self.keep_last_messages
        if limit < 1:
            return
        sizes = [session.llm.count_tokens(self._clean([m])) for m in self.buffer]
        target, acc, cutoff = self.summary_fraction * sum(sizes), 0, n
        for i, size in enumerate(sizes):
            acc += size
            if acc >= target:
                cutoff = i + 1
                break
        cutoff = min(cutoff, limit)
        while cutoff < limit and self.buffer[cutoff]["role"] == "tool":  # never orphan a tool result
            cutoff += 1
        while cutoff > 0 and self.buffer[cutoff]["role"] == "tool":
            cutoff -= 1
        if cutoff < 1:
            return
        old, kept = self.buffer[:cutoff], self.buffer[cutoff:]
        text = "\n".join(f"{m['role']}: {m.get('content') or json.dumps(m.get('tool_calls'), ensure_ascii=False)}" for m in old)
        messages, _ = fit_input(session, lambda t: [{"role": "user", "content": prompts.render("memgpt_summary", messages=t)}],
                                text, keep="middle")
        resp = memory_call(lambda: session.llm.chat(messages, purpose="memory_summarisation"), self.skipped_calls, None)
        summary = resp.text.strip() if resp is not None else ""
        hidden = sum(1 for m in old if not m.get("_summary")) + sum(m.get("_hidden", 0) for m in old)
        message = {"role": "user", "content": prompts.render("memgpt_summary_message", n_hidden=hidden, summary=summary),
                   "_summary": True, "_hidden": hidden}
        self.buffer = [message, *kept]
        self.summaries.append({"summarised_messages": cutoff, "kept_messages": len(kept), "summary": summary})
        self._warned = False

    # ---- agent loop ---------------------------------------------------------------------------
    def respond(self, query: str, *, purpose: str = "turn_generation", read_only: bool = False) -> Reply:
        session = self._session()
        snapshot = self._snapshot() if read_only else None
        context = self.context_for(query, read_only=read_only)
        self._repo_items = [i for i in context.items if i.kind == "code"]
        sent: list[str] = []
        steps: list[dict[str, Any]] = []
        last_text = ""
        try:
            self._push({"role": "user", "content": query}, log_role="user")
            for step in range(1, self.heartbeat_cap + 1):
                self.manage_pressure()
                final_step = step == self.heartbeat_cap
                offered = ["send_message"] if final_step else list(FUNCTIONS)
                calls, thoughts, usage = self._call(offered, purpose)
                last_text = thoughts or last_text
                fit = {k: self._last_fit.get(k) for k in ("tokens_before", "tokens_after", "trimmed_items", "trimmed_history")}
                steps.append({"step": step, "calls": [c["name"] for c in calls], "purpose": purpose, **usage, "fit": fit})
                if not calls:
                    if thoughts:  # plain text instead of a function call: treat it as the message
                        sent.append(thoughts)
                        self.log.append({"id": len(self.log), "role": "assistant", "content": thoughts})
                        break
                    self._push({"role": "user", "content": "[System] No function was called. Call send_message to answer the user."})
                    continue
                heartbeat = False
                for call in calls:
                    ok, result, wants_heartbeat = self._execute(call, sent)
                    heartbeat = heartbeat or wants_heartbeat or not ok
                    self._push_result(call, result)
                if not heartbeat:
                    break  # as in MemGPT: the chain continues only on a heartbeat request (or a failed call)
            text = "\n\n".join(sent) if sent else last_text
            trimmed = [s["fit"] for s in steps if s["fit"].get("trimmed_items") or s["fit"].get("trimmed_history")]
            context.meta["step_trims"] = trimmed  # every agent step went through the window guard
            self._pending_query = None if read_only else query
        finally:
            self._repo_items = []
            if snapshot is not None:
                self._restore(snapshot)
        return Reply(text=text, context=context, meta={"steps": steps, "sent_messages": len(sent),
                                                       "summaries": len(self.summaries)})

    def _call(self, offered: list[str], purpose: str) -> tuple[list[dict[str, Any]], str, dict[str, int]]:
        """One agent step -> (function calls, assistant text / inner thoughts, usage)."""
        llm = self._session().llm
        fitted = self._fit(offered, self._repo_items, None)
        messages = fitted.messages
        self._last_fit = fitted.meta
        if self._use_tools():
            resp = llm.chat(messages, purpose=purpose, tools=tool_schemas(offered))
            calls = [{"id": c.id, "name": c.name, "arguments": c.arguments or {}}
                     for c in reply_tool_calls(resp, id_prefix=f"call_{len(self.log)}_")]
            if calls:
                self.buffer.append(tool_call_message(resp.text or "", [ToolCall(c["id"], c["name"], c["arguments"])
                                                                       for c in calls], ensure_ascii=False))
            elif resp.text:
                self.buffer.append({"role": "assistant", "content": resp.text})
            return calls, resp.text.strip(), {"input_tokens": resp.usage.input_tokens, "output_tokens": resp.usage.output_tokens}
        key = f"{self._session().sample_id}:{next(_CALL_IDS)}"
        with llm.ledger.tags(memgpt_call=key):
            parsed = llm.chat_json(messages, purpose=purpose, validate=_json_call_shape)
        events = [e for e in llm.ledger.events if e.get("memgpt_call") == key]
        usage = {"input_tokens": sum(e["input_tokens"] for e in events), "output_tokens": sum(e["output_tokens"] for e in events)}
        if parsed is None:
            self._push({"role": "user", "content": "[System] Your reply was not a valid function call. Answer with one "
                                                   "JSON object as described in the system prompt."})
            return [], "", usage
        self.buffer.append({"role": "assistant", "content": json.dumps(
            {"inner_thoughts": parsed["thoughts"], "function": parsed["name"], "arguments": parsed["arguments"]}, ensure_ascii=False)})
        if parsed["name"] not in offered:
            return [{"id": "json", "name": parsed["name"], "arguments": parsed["arguments"], "_not_offered": True}], parsed["thoughts"], usage
        return [{"id": "json", "name": parsed["name"], "arguments": parsed["arguments"]}], parsed["thoughts"], usage

    def _push_result(self, call: dict[str, Any], result: dict[str, Any]) -> None:
        content = json.dumps(result, ensure_ascii=False)
        if self._use_tools():
            self.buffer.append(tool_result_message(call["id"], call["name"], content))
        else:
            self.buffer.append({"role": "user", "content": f"[Function return] {call['name']}: {content}"})

    def _execute(self, call: dict[str, Any], sent: list[str]) -> tuple[bool, dict[str, Any], bool]:
        """Run one function -> (ok, result, request_heartbeat)."""
        name, args = call["name"], dict(call.get("arguments") or {})
        heartbeat = bool(args.pop("request_heartbeat", False))
        if call.get("_not_offered"):
            return False, {"status": "error", "message": f"{name} is not available now; call send_message"}, True
        try:
            if name == "send_message":
                message = str(args["message"])
                sent.append(message)
                self.log.append({"id": len(self.log), "role": "assistant", "content": message})
                return True, {"status": "OK", "message": None}, heartbeat
            if name == "core_memory_append":
                label = str(args["label"])
                return True, self._core_edit(label, self.core.get(label, "") + "\n" + str(args["content"])), heartbeat
            if name == "core_memory_replace":
                label, old = str(args["label"]), str(args["old_content"])
                if old not in self.core.get(label, ""):
                    raise ValueError(f"old_content not found in core memory block '{label}'")
                return True, self._core_edit(label, self.core[label].replace(old, str(args["new_content"]))), heartbeat
            if name == "conversation_search":
                return True, {"status": "OK", "message": self.conversation_search(str(args["query"]), int(args.get("page") or 0))}, heartbeat
            if name == "archival_memory_insert":
                self.archival_insert(str(args["content"]))
                return True, {"status": "OK", "message": None}, heartbeat
            if name == "archival_memory_search":
                return True, {"status": "OK", "message": self.archival_search(str(args["query"]), int(args.get("page") or 0))}, heartbeat
            raise ValueError(f"unknown function {name!r}")
        except (KeyError, ValueError, TypeError) as exc:
            missing = f"missing argument {exc}" if isinstance(exc, KeyError) else str(exc)
            return False, {"status": "error", "message": f"{name} failed: {missing}"}, True

    def _core_edit(self, label: str, new_text: str) -> dict[str, Any]:
        if label not in self.core:
            raise ValueError(f"no core memory block '{label}' (use 'persona' or 'human')")
        new_text = new_text.strip("\n")
        if len(new_text) > self.core_block_chars:
            raise ValueError(f"edit exceeds the {self.core_block_chars}-character limit of block '{label}' "
                             f"({len(new_text)} characters); shorten it or use archival memory")
        self.core[label] = new_text
        return {"status": "OK", "message": None}

    # ---- recall and archival memory -----------------------------------------------------------
    def conversation_search(self, query: str, page: int = 0) -> dict[str, Any]:
        """Case-insensitive text search over the message log (substring, else all words); one page."""
        q = query.lower().strip()
        words = q.split()
        hits = [m for m in self.log if q and q in str(m["content"]).lower()]
        if not hits and words:
            hits = [m for m in self.log if all(w in str(m["content"]).lower() for w in words)]
        return self._page(hits, page)

    def archival_insert(self, text: str) -> None:
        self.archival.append({"id": len(self.archival), "text": text})
        self._archival_vectors.append(np.asarray(self._session().embedder.encode_one(text), dtype=np.float32))

    def archival_search(self, query: str, page: int = 0) -> dict[str, Any]:
        """Archival passages ranked by embedding similarity to ``query``; one page."""
        if not self.archival:
            return self._page([], page)
        from reconmem.platform.embed import cosine_top_k

        hits = cosine_top_k(self._session().embedder.encode_one(query), np.vstack(self._archival_vectors), len(self.archival))
        return self._page([{**self.archival[i], "score": round(s, 4)} for i, s in hits], page)

    def _page(self, hits: list[dict[str, Any]], page: int) -> dict[str, Any]:
        size = self.archival_page_size
        page = max(0, page)
        total_pages = max(1, -(-len(hits) // size))
        return {"results": hits[page * size:(page + 1) * size], "page": page, "total_pages": total_pages, "total": len(hits)}

    # ---- observed turns, snapshots, state -------------------------------------------------------
    def observe(self, turn: Turn) -> None:
        if self._pending_query is not None and self._pending_query == turn.user:
            self._pending_query = None  # the agent loop already put this exchange into the buffer
            return
        self._pending_query = None
        self._push({"role": "user", "content": turn.user}, log_role="user")
        self._push({"role": "assistant", "content": turn.assistant}, log_role="assistant")
        self.manage_pressure()

    def _snapshot(self) -> dict[str, Any]:
        return copy.deepcopy({k: getattr(self, k) for k in self._state_fields})

    def _restore(self, snapshot: dict[str, Any]) -> None:
        for k, v in snapshot.items():
            setattr(self, k, v)

    _state_fields = ("core", "buffer", "log", "archival", "_archival_vectors", "summaries", "pressure_warnings",
                     "_warned", "_pending_query")

    def state(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "core_memory": dict(self.core),
            "buffer": self._clean(self.buffer),
            "recall_log": list(self.log),
            "archival": list(self.archival),
            "summaries": list(self.summaries),
            "pressure_warnings": self.pressure_warnings,
        }
