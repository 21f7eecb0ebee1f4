"""LD-Agent baseline (Li et al., NAACL 2025; paper §3.4): event memory + persona + topic retrieval.

- Short-term memory: the turns of the current session, at most ``short_term_turns`` (30).
- Sessions close (the original uses a 1-hour gap between utterances, which these benchmarks lack):
  * before a turn whose ``meta`` marks a boundary: ``session_boundary`` or ``topic_boundary`` true,
    or a value of one of ``boundary_keys`` (default ``session`` and ``topic``) different from the
    previous turn's (e.g. ``boundary_keys=[session, topic, req_id]`` makes every LoCoEval
    requirement a topic);
  * when the current session reaches ``short_term_turns`` turns (otherwise its oldest turns would
    fall out of the window without ever being summarised).
  A closed session is summarised by the LLM (purpose ``memory_summarisation``); its topics are the
  noun lemmas of the summary (:mod:`baselines.nouns`); the summary is stored with its embedding.
- Long-term retrieval: score = topic overlap (0.5·|Q∩R|/|Q| + 0.5·|Q∩R|/|R|, Q = noun lemmas of the
  query, R = the event's topics) × time decay exp(-decay_rate · age), age in turns since the event's
  session closed. The top ``retrieve_k`` events with a positive score are used; ties are broken by
  embedding similarity (``semantic_weight`` > 0 adds ``semantic_weight · cosine`` to the overlap).
- Persona: per turn one JSON-mode call (purpose ``persona``) extracts user and agent traits.
- Generator prompt: retrieved event summaries + traits (+ repository functions) in the system
  prompt, the short-term turns as history, then the query. The original 20/30-word caps on
  summaries and answers are dropped for code answers.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from baselines import prompts
from baselines.common import string_list, transcript, turn_item, turn_messages
from baselines.nouns import noun_lemmas
from baselines.repo_context import render_code_block, repo_items
from reconmem.platform.context import MEMORY, RECENT, Context, ContextItem, ContextManager, Session, Turn, build_messages


@dataclass
class Event:
    """The summary of one closed session."""

    id: str
    summary: str
    topics: list[str]
    first_turn: int
    last_turn: int
    embedding: list[float] = field(default_factory=list, repr=False)


def topic_overlap(query_topics: set[str], event_topics: set[str]) -> float:
    """0.5·|Q∩R|/|Q| + 0.5·|Q∩R|/|R| (0 when either set is empty)."""
    if not query_topics or not event_topics:
        return 0.0
    shared = len(query_topics & event_topics)
    return 0.5 * shared / len(query_topics) + 0.5 * shared / len(event_topics)


def _traits_shape(obj: Any) -> dict[str, list[str]]:
    if not isinstance(obj, dict):
        raise ValueError('expected {"user_traits": [...], "agent_traits": [...]}')
    return {"user_traits": string_list(obj.get("user_traits")), "agent_traits": string_list(obj.get("agent_traits"))}


class LDAgent(ContextManager):
    """Event summaries with noun-lemma topics, persona traits and a short-term window."""

    name = "ld_agent"

    def __init__(self, short_term_turns: int = 30, retrieve_k: int = 3, decay_rate: float = 0.01,
                 max_traits: int = 20, semantic_weight: float = 0.0,
                 boundary_keys: tuple[str, ...] | list[str] = ("session", "topic")) -> None:
        super().__init__()
        if short_term_turns < 1 or retrieve_k < 1 or decay_rate < 0:
            raise ValueError("method.manager: short_term_turns and retrieve_k must be >= 1 and decay_rate >= 0, got "
                             f"{short_term_turns}, {retrieve_k}, {decay_rate}")
        self.short_term_turns = int(short_term_turns)
        self.retrieve_k = int(retrieve_k)
        self.decay_rate = float(decay_rate)
        self.max_traits = int(max_traits)
        self.semantic_weight = float(semantic_weight)
        self.boundary_keys = tuple(str(k) for k in boundary_keys)
        self._reset()

    def _reset(self) -> None:
        self.current: list[Turn] = []
        self.events: list[Event] = []
        self.user_traits: list[str] = []
        self.agent_traits: list[str] = []
        self._last_meta: dict[str, Any] = {}
        self._clock = 0  # index after the last observed turn

    def start(self, session: Session) -> None:
        super().start(session)
        self._reset()

    # ---- sessions -----------------------------------------------------------------------------
    def is_boundary(self, turn: Turn) -> bool:
        """Whether ``turn`` starts a new session (see the module docstring)."""
        meta = turn.meta or {}
        if meta.get("session_boundary") or meta.get("topic_boundary"):
            return True
        return any(key in meta and key in self._last_meta and meta[key] != self._last_meta[key] for key in self.boundary_keys)

    def close_session(self) -> Event | None:
        """Summarise the current session into an event (no-op when it is empty)."""
        if not self.current:
            return None
        session = self._session()
        text = "\n\n".join(transcript(t) for t in self.current)
        prompt = prompts.render("ld_event_summary", session=text)
        summary = session.llm.chat([{"role": "user", "content": prompt}], purpose="memory_summarisation").text.strip()
        if not summary:  # keep the session findable even when the model returned nothing
            summary = " ".join(t.user for t in self.current)
        event = Event(id=f"e{len(self.events)}", summary=summary, topics=noun_lemmas(summary),
                      first_turn=self.current[0].index, last_turn=self.current[-1].index,
                      embedding=[float(x) for x in session.embedder.encode_one(summary)])
        self.events.append(event)
        self.current = []
        return event

    def observe(self, turn: Turn) -> None:
        if self.is_boundary(turn):
            self.close_session()
        self.current.append(turn)
        self._last_meta = dict(turn.meta or {})
        self._clock = turn.index + 1
        self.extract_persona(turn)
        if len(self.current) >= self.short_term_turns:
            self.close_session()

    def extract_persona(self, turn: Turn) -> None:
        """One JSON-mode call (purpose ``persona``): new user / agent traits, deduplicated, capped."""
        prompt = prompts.render("ld_persona", turn=transcript(turn))
        traits = self._session().llm.chat_json([{"role": "user", "content": prompt}], purpose="persona",
                                               validate=_traits_shape)
        if not traits:
            return
        for key, store in (("user_traits", self.user_traits), ("agent_traits", self.agent_traits)):
            for trait in traits[key]:
                if trait.lower() not in (t.lower() for t in store):
                    store.append(trait)
            del store[: max(0, len(store) - self.max_traits)]

    # ---- retrieval ----------------------------------------------------------------------------
    def retrieve(self, query: str) -> list[tuple[Event, float]]:
        """Top ``retrieve_k`` events by topic overlap × time decay (positive scores only)."""
        if not self.events:
            return []
        q_topics = set(noun_lemmas(query))
        q_vec = self._session().embedder.encode_one(query)
        scored = []
        for event in self.events:
            overlap = topic_overlap(q_topics, set(event.topics))
            cosine = float(np.dot(q_vec, np.asarray(event.embedding, dtype=np.float32))) if event.embedding else 0.0
            decay = math.exp(-self.decay_rate * max(0, self._clock - 1 - event.last_turn))
            score = (overlap + self.semantic_weight * cosine) * decay
            if score > 0:
                scored.append((score, cosine, event))
        scored.sort(key=lambda s: (-s[0], -s[1], s[2].id))
        return [(e, s) for s, _, e in scored[: self.retrieve_k]]

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        session = self._session()
        recent = self.current[-self.short_term_turns:]
        events = self.retrieve(query)
        code = repo_items(session, query)
        items: list[ContextItem] = [ContextItem(kind="summary", id=e.id, text=e.summary, source=MEMORY,
                                                meta={"score": round(s, 6), "topics": e.topics,
                                                      "turns": [e.first_turn, e.last_turn]}) for e, s in events]
        items += [ContextItem(kind="persona", id=f"user:{i}", text=t, source=MEMORY) for i, t in enumerate(self.user_traits)]
        items += [ContextItem(kind="persona", id=f"agent:{i}", text=t, source=MEMORY) for i, t in enumerate(self.agent_traits)]
        blocks = [
            prompts.render("ld_events", events="\n".join(f"- {e.summary}" for e, _ in events)) if events else "",
            self._traits_block(),
            render_code_block(code),
        ]
        history = [m for t in recent for m in turn_messages(t)]
        messages = build_messages(session.system_prompt, blocks, history, query)
        items += [turn_item(t, source=RECENT) for t in recent] + code
        return Context(query=query, messages=messages, items=items,
                       meta={"events": [e.id for e, _ in events], "query_topics": noun_lemmas(query)})

    def _traits_block(self) -> str:
        if not self.user_traits and not self.agent_traits:
            return ""
        return prompts.render("ld_traits",
                              user_traits="\n".join(f"- {t}" for t in self.user_traits) or "- (nothing yet)",
                              agent_traits="\n".join(f"- {t}" for t in self.agent_traits) or "- (nothing yet)")

    def state(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "current_session": [t.to_dict() for t in self.current],
            "events": [{k: v for k, v in asdict(e).items() if k != "embedding"} for e in self.events],
            "user_traits": list(self.user_traits),
            "agent_traits": list(self.agent_traits),
        }
