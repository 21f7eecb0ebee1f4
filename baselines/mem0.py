"""Mem0 baseline (paper §3.4): the classic ADD / UPDATE / DELETE / NONE pipeline of mem0 v1.0.

Per observed turn:
  1. one JSON-mode call (purpose ``memory_extraction``) extracts facts from the turn, with a prompt
     that keeps technical facts, requirements and decisions (mem0's default prompt keeps only
     personal facts); the number of facts per turn is recorded in ``state()["facts_per_turn"]``;
  2. each fact is embedded and the ``similar_k`` most similar stored memories are fetched;
  3. the union of those memories is shown with masked ids "0", "1", ... so the model cannot invent ids;
  4. one JSON-mode call (purpose ``memory_update``) decides ADD / UPDATE (keep id) / DELETE / NONE,
     made whenever the turn gave facts;
  5. the decisions are applied, each one logged in ``history``.
The decision call is made whenever there are new facts, also while the store is still empty (an
empty old-memory list; upstream mem0 does the same, and the model may ADD, merge or drop facts).
Recall: embed the query and put the ``recall_k`` most similar memories into the system prompt.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from baselines import prompts
from baselines.common import memory_call, transcript
from baselines.repo_context import adaptation_k, render_code_block, repo_items
from reconmem.platform.context import MEMORY, Context, ContextItem, ContextManager, Session, Turn
from reconmem.platform.fit import fit_input, fit_prompt

EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")


@dataclass
class Memory:
    """One stored memory (``paths`` is used by Mem0^R only)."""

    id: str
    text: str
    created_turn: int
    updated_turn: int
    paths: list[str] = field(default_factory=list)


@dataclass
class Fact:
    """One extracted fact with its candidate artifact paths (raw, before resolution)."""

    text: str
    paths: list[str] = field(default_factory=list)


def _listed(obj: Any, key: str) -> list[Any]:
    """The list of a ``{key: [...]}`` reply (a bare list is taken as that list); ValueError otherwise."""
    if isinstance(obj, list):
        return obj
    if not isinstance(obj, dict) or not isinstance(obj.get(key), list):
        raise ValueError(f'expected {{"{key}": [...]}}')
    return obj[key]


def _facts_shape(obj: Any) -> list[Fact]:
    """Validate extraction output: ``{"facts": [str | {"text", "paths"}]}`` -> facts."""
    facts = []
    for f in _listed(obj, "facts"):
        if isinstance(f, str) and f.strip():
            facts.append(Fact(f.strip()))
        elif isinstance(f, dict) and isinstance(f.get("text"), str) and f["text"].strip():
            paths = f.get("paths") or []
            paths = [paths] if isinstance(paths, str) else paths
            facts.append(Fact(f["text"].strip(), [p.strip() for p in paths if isinstance(p, str) and p.strip()]))
    return facts


def _decisions_shape(obj: Any) -> list[dict[str, Any]]:
    """Validate update output: ``{"memory": [{"id", "text", "event", ["paths"]}]}`` -> decision dicts."""
    out = []
    for d in _listed(obj, "memory"):
        if not isinstance(d, dict):
            continue
        event = str(d.get("event", "")).strip().upper()
        if event not in EVENTS:
            continue
        paths = d.get("paths") or []
        paths = [paths] if isinstance(paths, str) else paths
        out.append({
            "id": str(d.get("id", "")).strip(),
            "text": d.get("text").strip() if isinstance(d.get("text"), str) else "",
            "event": event,
            "paths": [p.strip() for p in paths if isinstance(p, str) and p.strip()],
        })
    return out


class Mem0(ContextManager):
    """Extracted-fact memory with LLM-decided updates; recall = top-k memories by similarity."""

    name = "mem0"
    extraction_prompt = "mem0_extraction"
    update_prompt = "mem0_update"
    uses_repo_adaptation = True  # the unified repository adaptation (Mem0^R has its own access)

    def __init__(self, recall_k: int = 10, similar_k: int = 5, repo_context_k: int | None = None) -> None:
        super().__init__()
        self.repo_context_k = repo_context_k
        if recall_k < 1 or similar_k < 1:
            raise ValueError(f"method.manager.recall_k and similar_k must be >= 1, got {recall_k}, {similar_k}")
        self.recall_k = int(recall_k)
        self.similar_k = int(similar_k)
        self._reset()

    def _reset(self) -> None:
        self.memories: dict[str, Memory] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self.history: list[dict[str, Any]] = []
        self.facts_per_turn: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []
        self._next_id = 0

    def start(self, session: Session) -> None:
        super().start(session)
        self._reset()

    # ---- recall -------------------------------------------------------------------------------
    def search(self, query: str, k: int) -> list[tuple[Memory, float]]:
        """The ``k`` stored memories most similar to ``query`` (best first)."""
        if not self.memories:
            return []
        from reconmem.platform.embed import cosine_top_k

        ids = list(self.memories)
        matrix = np.vstack([self._vectors[i] for i in ids])
        hits = cosine_top_k(self._session().embedder.encode_one(query), matrix, k)
        return [(self.memories[ids[i]], s) for i, s in hits]

    def memory_items(self, recalled: list[tuple[Memory, float]]) -> list[ContextItem]:
        return [ContextItem(kind="memory", id=m.id, text=m.text, source=MEMORY,
                            meta={"score": round(s, 6), "paths": list(m.paths)}) for m, s in recalled]

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        session = self._session()
        recalled = self.search(query, self.recall_k)
        mem_items = self.memory_items(recalled)
        code = repo_items(session, query, adaptation_k(session, self.repo_context_k)) if self.uses_repo_adaptation else []
        fitted = fit_prompt(session, sections=self._sections, items=mem_items + code, query=query)
        return Context(query=query, messages=fitted.messages, items=fitted.items,
                       meta={"recalled": [m.id for m, _ in recalled], **fitted.meta})

    def _sections(self, items: list[ContextItem]) -> list[str]:
        """The prompt blocks for kept items: recalled memories, then code."""
        return [self._memory_block([i for i in items if i.kind == "memory"]), render_code_block(items)]

    @staticmethod
    def _memory_block(items: list[ContextItem]) -> str:
        if not items:
            return ""
        return prompts.render("mem0_recall", memories="\n".join(f"- {i.text}" for i in items))

    # ---- construction -------------------------------------------------------------------------
    def extract(self, turn: Turn) -> list[Fact]:
        """Step 1: facts of one turn (JSON mode, purpose ``memory_extraction``); [] on failure."""
        session = self._session()
        system = prompts.render(self.extraction_prompt)
        messages, cut = fit_input(session, lambda text: [
            {"role": "system", "content": system},
            {"role": "user", "content": prompts.render("mem0_extraction_input", turn=text)},
        ], transcript(turn), keep="middle")
        if cut:
            self.rejected.append({"turn": turn.index, "reason": "turn cut to fit the context window for extraction"})
        facts = memory_call(lambda: session.llm.chat_json(messages, purpose="memory_extraction", validate=_facts_shape),
                            self.rejected, turn.index)
        return list(facts or [])

    def observe(self, turn: Turn) -> None:
        facts = self.extract(turn)
        facts = self.prepare_facts(facts)
        self.facts_per_turn.append({"turn": turn.index, "facts": len(facts), "texts": [f.text for f in facts]})
        if facts:
            self.integrate(facts, turn.index)

    def prepare_facts(self, facts: list[Fact]) -> list[Fact]:
        """Hook for subclasses (Mem0^R resolves paths here); drops duplicate fact texts."""
        seen: set[str] = set()
        out = []
        for f in facts:
            if f.text not in seen:
                seen.add(f.text)
                out.append(f)
        return out

    def integrate(self, facts: list[Fact], turn_index: int) -> None:
        """Steps 2-5: similar memories, masked ids, one decision call, apply with history."""
        session = self._session()
        fact_vecs = session.embedder.encode([f.text for f in facts])
        candidates: list[str] = []  # union of the per-fact top similar_k memories, first-seen order
        if self.memories:
            from reconmem.platform.embed import cosine_top_k

            ids = list(self.memories)
            matrix = np.vstack([self._vectors[i] for i in ids])
            for vec in fact_vecs:
                for i, _ in cosine_top_k(vec, matrix, self.similar_k):
                    if ids[i] not in candidates:
                        candidates.append(ids[i])
        mask = {str(n): real for n, real in enumerate(candidates)}
        decisions = self.decide(mask, facts)
        if decisions is None:  # unusable output (counted by the client): nothing is applied, as in mem0
            self.rejected.append({"turn": turn_index, "reason": "update output was not valid JSON"})
            return
        for d in decisions:
            self.apply(d, mask, facts, fact_vecs, turn_index)

    def old_memory_view(self, mask: dict[str, str]) -> list[dict[str, Any]]:
        return [{"id": n, "text": self.memories[real].text} for n, real in mask.items()]

    def new_facts_view(self, facts: list[Fact]) -> list[Any]:
        return [f.text for f in facts]

    def decide(self, mask: dict[str, str], facts: list[Fact]) -> list[dict[str, Any]] | None:
        """Step 4: one JSON-mode call (purpose ``memory_update``) -> decisions, or None."""
        prompt = prompts.render(
            self.update_prompt,
            old_memory=json.dumps(self.old_memory_view(mask), ensure_ascii=False, indent=1),
            new_facts=json.dumps(self.new_facts_view(facts), ensure_ascii=False, indent=1),
        )
        llm = self._session().llm
        return memory_call(lambda: llm.chat_json([{"role": "user", "content": prompt}], purpose="memory_update",
                                                 validate=_decisions_shape), self.rejected, None)

    def apply(self, d: dict[str, Any], mask: dict[str, str], facts: list[Fact], fact_vecs: np.ndarray,
              turn_index: int) -> None:
        """Step 5: apply one decision (unknown ids for UPDATE/DELETE/NONE are logged and ignored)."""
        event = d["event"]
        if event == "ADD":
            if d["text"] and not any(m.text == d["text"] for m in self.memories.values()):
                self._add(d["text"], self.paths_for(d, None, facts, fact_vecs), turn_index)
            return
        real = mask.get(d["id"])
        if real is None or real not in self.memories:
            self.rejected.append({"turn": turn_index, "decision": d, "reason": "unknown id"})
            return
        mem = self.memories[real]
        if event == "UPDATE":
            if not d["text"] or d["text"] == mem.text:
                return
            old = mem.text
            mem.text = d["text"]
            mem.paths = self.paths_for(d, mem, facts, fact_vecs)
            mem.updated_turn = turn_index
            self._vectors[real] = self._session().embedder.encode_one(mem.text)
            self._log(real, "UPDATE", old, mem.text, turn_index)
        elif event == "DELETE":
            del self.memories[real]
            del self._vectors[real]
            self._log(real, "DELETE", mem.text, None, turn_index)

    def paths_for(self, d: dict[str, Any], mem: Memory | None, facts: list[Fact], fact_vecs: np.ndarray) -> list[str]:
        """Artifact paths of an added / updated memory (none for plain Mem0)."""
        return []

    def _add(self, text: str, paths: list[str], turn_index: int, vec: np.ndarray | None = None) -> Memory:
        mem_id = f"m{self._next_id}"
        self._next_id += 1
        mem = Memory(id=mem_id, text=text, created_turn=turn_index, updated_turn=turn_index, paths=list(paths))
        self.memories[mem_id] = mem
        self._vectors[mem_id] = vec if vec is not None else self._session().embedder.encode_one(text)
        self._log(mem_id, "ADD", None, text, turn_index)
        return mem

    def _log(self, mem_id: str, event: str, old: str | None, new: str | None, turn_index: int) -> None:
        self.history.append({"memory_id": mem_id, "event": event, "old": old, "new": new, "turn": turn_index})

    def state(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "memories": [asdict(m) for m in self.memories.values()],
            "history": list(self.history),
            "facts_per_turn": list(self.facts_per_turn),
            "rejected": list(self.rejected),
        }
