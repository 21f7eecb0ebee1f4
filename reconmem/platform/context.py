"""The central interface every method implements, and the value types that cross it.

A benchmark runner drives a :class:`ContextManager` through one conversation:

    cm.start(session)                       # new conversation
    reply = cm.respond(query)               # = context_for -> backbone call (default)
    cm.observe(Turn(...))                   # after the assistant answered (not for read-only tasks)

``Context`` records *what went in* (memory texts, code entities with their compression level,
retrieved history turns, and the provenance of each) so that coverage and t-SNE analyses can be
computed from run records later without re-running anything.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported for type hints only; keeps this module import-light
    from reconmem.platform.code.index import RepositoryIndex
    from reconmem.platform.embed import Embedder
    from reconmem.platform.llm import LLMClient, LLMResponse

# Provenance labels of context items (what retrieved an item).
ORIGINAL_QUERY = "original_query"  # semantic/structural retrieval driven by the user's query
DUAL_QUERY = "dual_query"  # structural retrieval driven by the grounded (code-draft) query
EXPANSION = "expansion"  # reached by graph-adjacency expansion
REPO_WIDE = "repo_wide"  # repository-wide code search (not the memory graph)
RECENT = "recent"  # recency window / full history
MEMORY = "memory"  # any other method-internal memory (core memory, summaries, persona ...)


@dataclass
class Turn:
    """One completed (user, assistant) exchange."""

    index: int
    user: str
    assistant: str
    meta: dict[str, Any] = field(default_factory=dict)  # e.g. {"session": 2, "topic_boundary": True}

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class ContextItem:
    """One piece of content a method put into the prompt."""

    kind: str  # "memory" | "code" | "history_turn" | "summary" | "persona" | "core_memory" | ...
    id: str  # stable id within the conversation (memory id, code path, turn index ...)
    text: str  # exactly the text that went into the prompt
    source: str = MEMORY  # one of the provenance labels above
    meta: dict[str, Any] = field(default_factory=dict)  # {"path":..., "compression": "full"|"summary", "score":...}

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Context:
    """What a method sends to the backbone for one query, and where each part came from."""

    query: str
    messages: list[dict[str, Any]]  # OpenAI-style chat messages, ready for the backbone
    items: list[ContextItem] = field(default_factory=list)
    dual_query: str | None = None  # the grounded query, when one was used
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "dual_query": self.dual_query,
            "messages": self.messages,
            "items": [i.to_dict() for i in self.items],
            "meta": self.meta,
        }


@dataclass
class Reply:
    """The assistant's answer to one query, with the context that produced it."""

    text: str
    context: Context
    meta: dict[str, Any] = field(default_factory=dict)  # e.g. MemGPT steps, tool calls


@dataclass
class Session:
    """Everything a method needs for one conversation.

    ``system_prompt`` is the benchmark's response-generation prompt; every method uses the same one
    within a benchmark. ``repo_context_k`` is a fallback only: the baselines' unified repository
    adaptation is a method setting (``method.manager.repo_context_k``, baselines/repo_context.py);
    a method built in Python without that option uses this value (tests, scripts/bench_methods.py).
    """

    sample_id: str
    llm: "LLMClient"
    embedder: "Embedder"
    repo: "RepositoryIndex | None" = None
    system_prompt: str = "You are a helpful coding assistant working on the user's repository."
    context_window: int = 32768
    repo_context_k: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    # The repository's name as its user knows it (LoCoEval: the snapshot, "boltons-23.1.1"; CAB:
    # "owner/name"). Never derived from where the harness keeps its copy: that path differs per
    # machine and cache directory, and a prompt naming it made results depend on it.
    repo_name: str | None = None
    # How repository code is ranked for this conversation: a RetrieverSpec or its name ("dense" |
    # "bm25" | "hybrid"; reconmem.platform.code.retrieval), the run's `retriever` config group.
    retriever: Any = "dense"


class ContextManager(abc.ABC):
    """A context-management method (ReConMem, a baseline, or a user's own)."""

    name: str = "base"

    def __init__(self) -> None:
        self.session: Session | None = None

    def start(self, session: Session) -> None:
        """Begin a new conversation. Subclasses call ``super().start(session)`` first."""
        self.session = session

    @abc.abstractmethod
    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        """Build the prompt context for ``query``. ``read_only`` forbids any memory mutation."""

    @abc.abstractmethod
    def observe(self, turn: Turn) -> None:
        """Update memory after the assistant answered ``turn``."""

    def respond(self, query: str, *, purpose: str = "turn_generation", read_only: bool = False) -> Reply:
        """Answer ``query``: context_for, then one backbone call. Agentic methods override this."""
        ctx = self.context_for(query, read_only=read_only)
        resp: "LLMResponse" = self._session().llm.chat(ctx.messages, purpose=purpose)
        return Reply(text=resp.text, context=ctx)

    def state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot of the method's memory (written as memory.json)."""
        return {}

    def params(self) -> dict[str, Any]:
        """Parameters the method resolved itself beyond its config (recorded in the run manifest's
        ``method_params``; ReConMem: its budgets)."""
        return {}

    def _session(self) -> Session:
        if self.session is None:
            raise RuntimeError(f"{type(self).__name__}: start(session) was not called")
        return self.session


def build_messages(system_prompt: str, context_blocks: list[str], history: list[dict[str, Any]],
                   query: str | None) -> list[dict[str, Any]]:
    """Standard prompt layout shared by all methods: system prompt + context sections, history, query.

    ``query=None`` ends the request with the history (an agent step continuing its own chain).
    Requests that may outgrow the window go through :func:`reconmem.platform.fit.fit_prompt`.
    """
    system = system_prompt
    blocks = [b for b in context_blocks if b.strip()]
    if blocks:
        system = system + "\n\n" + "\n\n".join(blocks)
    tail = [] if query is None else [{"role": "user", "content": query}]
    return [{"role": "system", "content": system}, *history, *tail]
