"""Memory construction and maintenance after every completed turn (paper §2.2).

Per turn ``t``:

1. **Code draft database** (§2.3.1): fenced code blocks of the assistant response are embedded and
   stored (exact duplicates are stored once).
2. **Memory sketching** (§2.2.1): one structured LLM call (purpose ``memory_sketching``) returns the
   textual memory units ``D_t``, each with candidate anchors ``Ã(d)``.
3. **Code entity localization** (Eq. 5-7): every anchor goes through ``RepositoryIndex.localize``
   (exact lookup, else the terminal-name ranking); unresolved anchors are dropped and counted.
   Directory hits are dropped too: the structural graph holds files, types, functions and
   variables only (§2.1).
4. **Semantic memory update** (§2.2.2): for each ``d_i`` in order, the top-``k1`` similar semantic
   entities (with their linked code paths) are shown to one structured LLM decision (purpose
   ``memory_update``): INSERT / MODIFY(target) / REMOVE(target) plus adjacency relations.
   REMOVE deletes the target; with prompt v2 the new unit ``d_i`` is then inserted unless the
   decision says ``"keep_new": false`` (a pure invalidation) - the newer information survives a
   conflict ("outdated information is promptly revised or removed", §2.2.2; docs/reconmem.md).
   With prompt v1 (``update_prompt_version=1``, old records) REMOVE drops ``d_i`` as before.
5. **Dual synchronisation** (§2.2.3) happens inside the graph operations (link / unlink / GC).

Failure rules (never a crash, never silent; all counted in :attr:`MemoryConstructor.stats`):

* sketching output that ``chat_json`` cannot repair or that has the wrong shape -> the turn's
  memory update is skipped (``sketch_failures``; the code drafts of the turn are still stored);
* an update decision that cannot be repaired / validated -> that memory unit is skipped
  (``update_failures``);
* MODIFY / REMOVE whose target is not one of the ids shown to the model (invented, missing, or
  not among the candidates) -> the unit is INSERTed instead, so its information is kept
  (``invalid_target_ids``);
* relation ids not among the shown candidates are ignored (``invalid_relation_ids``);
* a sketched item without usable text is dropped (``malformed_memory_items``).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from reconmem.memory.graph import DualMemoryGraph
from reconmem.memory.stores import CodeDraft, CodeDraftDatabase, RepositoryVectors  # noqa: F401 - re-exported
from reconmem.memory.prompts import PROMPT_VERSIONS, render_prompt

if TYPE_CHECKING:
    from reconmem.platform.code.index import RepositoryIndex
    from reconmem.platform.context import Turn
    from reconmem.platform.embed import Embedder
    from reconmem.platform.llm import LLMClient

log = logging.getLogger(__name__)

INSERT, MODIFY, REMOVE = "INSERT", "MODIFY", "REMOVE"
ACTIONS = (INSERT, MODIFY, REMOVE)

STAT_KEYS = (
    "turns",
    "sketch_failures",
    "update_failures",
    "context_length_skips",
    "memories_sketched",
    "malformed_memory_items",
    "anchors",
    "anchors_resolved",
    "anchors_unresolved",
    "inserts",
    "modifies",
    "removes",
    "invalid_target_ids",
    "invalid_relation_ids",
    "relations_added",
    "drafts_added",
    "drafts_duplicate",
)

_FENCE = re.compile(r"```([^\n`]*)\n(.*?)```", re.DOTALL)
_ID_CHARS = re.compile(r"[\s\[\]()`'\"<>:#]")


# ---------------------------------------------------------------------------- code drafts
def extract_code_blocks(text: str) -> list[tuple[str, str]]:
    """Fenced code blocks of ``text`` as ``(language_tag, code)``; empty blocks are skipped."""
    blocks = []
    for match in _FENCE.finditer(text or ""):
        code = match.group(2).strip("\n")
        if code.strip():
            blocks.append((match.group(1).strip().lower(), code))
    return blocks


# ---------------------------------------------------------------------------- validation
def validate_sketch(obj: Any) -> dict[str, Any]:
    """Check a sketching reply: ``{"memories": [{"text": str, "anchors": [str]}]}`` (a bare list is accepted).

    Returns ``{"memories": [...], "malformed": n}`` with items lacking usable text dropped and
    counted. Raises ValueError when the overall shape is wrong.
    """
    if isinstance(obj, dict):
        items = obj.get("memories")
        if items is None:
            raise ValueError('memory_sketching: reply has no "memories" list')
    elif isinstance(obj, list):
        items = obj
    else:
        raise ValueError(f"memory_sketching: expected an object with 'memories', got {type(obj).__name__}")
    if not isinstance(items, list):
        raise ValueError('memory_sketching: "memories" is not a list')
    # Idempotent: re-validating a validated reply keeps its count of dropped items.
    malformed = obj.get("malformed", 0) if isinstance(obj, dict) and isinstance(obj.get("malformed"), int) else 0
    memories = []
    for item in items:
        if isinstance(item, str):
            item = {"text": item, "anchors": []}
        text = item.get("text") if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip():
            malformed += 1
            continue
        anchors = item.get("anchors", [])
        if isinstance(anchors, str):
            anchors = [anchors]
        if not isinstance(anchors, list):
            anchors = []
        anchors = [a for a in anchors if isinstance(a, str) and a.strip()]
        memories.append({"text": " ".join(text.split()), "anchors": anchors})
    return {"memories": memories, "malformed": malformed}


def validate_decision(obj: Any) -> dict[str, Any]:
    """Check an update decision: action in INSERT/MODIFY/REMOVE; target, text optional; relations a list."""
    if not isinstance(obj, dict):
        raise ValueError(f"memory_update: expected a JSON object, got {type(obj).__name__}")
    action = obj.get("action")
    if not isinstance(action, str) or action.strip().upper() not in ACTIONS:
        raise ValueError(f"memory_update: action must be one of {ACTIONS}, got {action!r}")
    target = obj.get("target")
    text = obj.get("text")
    relations = obj.get("relations", [])
    if isinstance(relations, str):
        relations = [relations]
    if not isinstance(relations, list):
        relations = []
    keep_new = obj.get("keep_new")
    if isinstance(keep_new, str) and keep_new.strip().lower() in ("true", "false"):
        keep_new = keep_new.strip().lower() == "true"
    return {
        "action": action.strip().upper(),
        "target": target if isinstance(target, (str, int)) and str(target).strip() else None,
        "text": text.strip() if isinstance(text, str) and text.strip() else None,
        "keep_new": keep_new if isinstance(keep_new, bool) else None,  # REMOVE only; None = not said
        "relations": [r for r in relations if isinstance(r, (str, int))],
    }


def normalise_id(raw: Any) -> str | None:
    """``"[M3]"`` / ``" m3 "`` / ``"id: m3"`` -> ``"m3"``; None for empty."""
    if raw is None:
        return None
    text = str(raw).strip()
    if text.lower().startswith("id"):
        text = text[2:]
    text = _ID_CHARS.sub("", text).lower()
    return text or None


# ---------------------------------------------------------------------------- construction
@dataclass
class SketchedMemory:
    """One textual memory unit ``d_i`` of the memorized bipartite graph with its resolved paths ``A(d_i)``."""

    text: str
    anchors: list[str]
    paths: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)


@dataclass
class UpdateCandidate:
    """A similar existing semantic entity shown to the update decision."""

    id: str
    text: str
    paths: list[str]
    score: float


class MemoryConstructor:
    """Runs §2.2 on each completed turn against one graph and one code draft database."""

    def __init__(
        self,
        graph: DualMemoryGraph,
        drafts: CodeDraftDatabase,
        *,
        llm: "LLMClient",
        embedder: "Embedder",
        repo: "RepositoryIndex | None",
        code_vectors: "RepositoryVectors | None",
        k1: int,
        repository_name: str = "repository",
        sketch_max_tokens: int | None = None,
        update_max_tokens: int | None = None,
        update_prompt_version: int | None = None,
    ) -> None:
        self.graph = graph
        self.drafts = drafts
        self.llm = llm
        self.embedder = embedder
        self.repo = repo
        self.code_vectors = code_vectors
        self.k1 = k1
        self.repository_name = repository_name
        self.sketch_max_tokens = sketch_max_tokens
        self.update_max_tokens = update_max_tokens
        self.update_prompt_version = update_prompt_version or PROMPT_VERSIONS["memory_update"]
        self.stats: dict[str, int] = {k: 0 for k in STAT_KEYS}
        # this conversation's chat_json failures (the client's counter is shared by the whole run)
        self.json_failures: dict[str, int] = {"memory_sketching": 0, "memory_update": 0}

    # ---------------------------------------------------------------- per turn
    def process_turn(self, turn: "Turn") -> dict[str, Any]:
        """Run construction for one completed turn; returns a JSON-able report of what happened."""
        started = time.perf_counter()
        self.stats["turns"] += 1
        report: dict[str, Any] = {"turn": turn.index, "drafts": self.store_drafts(turn)}
        memories = self.sketch(turn)
        if memories is None:
            report["skipped"] = "sketch_failed"
            report["seconds"] = round(time.perf_counter() - started, 4)
            return report
        report["memories"] = [asdict(m) for m in memories]
        vectors = self.embedder.encode([m.text for m in memories]) if memories else np.zeros((0, 0))
        decisions = []
        for memory, vector in zip(memories, vectors):
            candidates = self.update_candidates(vector)
            decision = self.decide(memory, memories, candidates)
            if decision is None:
                decisions.append({"memory": memory.text, "skipped": "update_failed"})
                continue
            decisions.append(self.apply_decision(memory, vector, decision, candidates, turn=turn.index))
        report["decisions"] = decisions
        report["seconds"] = round(time.perf_counter() - started, 4)
        return report

    def store_drafts(self, turn: "Turn") -> list[str]:
        """Extract code blocks of the assistant response into the code draft database."""
        blocks = extract_code_blocks(turn.assistant)
        if not blocks:
            return []
        new_blocks = [(lang, code) for lang, code in blocks if code not in self.drafts._by_code]
        self.stats["drafts_duplicate"] += len(blocks) - len(new_blocks)
        added = []
        if new_blocks:
            vecs = self.embedder.encode([code for _, code in new_blocks])
            for (lang, code), vec in zip(new_blocks, vecs):
                draft_id = self.drafts.add(code, vec, turn=turn.index, language=lang)
                if draft_id is None:
                    self.stats["drafts_duplicate"] += 1
                else:
                    added.append(draft_id)
        self.stats["drafts_added"] += len(added)
        return added

    # ---------------------------------------------------------------- sketching + localization
    def sketch(self, turn: "Turn") -> list[SketchedMemory] | None:
        """Memory sketching + localization -> ``D_t`` with ``A(d_i)``; None when the reply is unusable."""
        prompt = render_prompt(
            "memory_sketching", repository=self.repository_name, user=turn.user, assistant=turn.assistant
        )
        reply = self._ask_json(prompt, purpose="memory_sketching", validate=validate_sketch,
                               max_tokens=self.sketch_max_tokens, failure_stat="sketch_failures",
                               what=f"memory sketching of turn {turn.index} (turn update skipped)")
        if reply is None:
            return None
        self.stats["malformed_memory_items"] += int(reply.get("malformed", 0))
        memories = []
        for item in reply["memories"]:
            paths, unresolved = self.localize_all(item["anchors"])
            memories.append(SketchedMemory(item["text"], list(item["anchors"]), paths, unresolved))
        self.stats["memories_sketched"] += len(memories)
        return memories

    def localize_all(self, anchors: list[str]) -> tuple[list[str], list[str]]:
        """``A(d) = {L(ã) | L(ã) != ⊥}`` (Eq. 5), de-duplicated in anchor order, plus the dropped anchors."""
        paths: list[str] = []
        unresolved: list[str] = []
        for anchor in anchors:
            self.stats["anchors"] += 1
            path = self.localize(anchor)
            if path is None:
                unresolved.append(anchor)
                self.stats["anchors_unresolved"] += 1
                continue
            self.stats["anchors_resolved"] += 1
            if path not in paths:
                paths.append(path)
        return paths, unresolved

    def localize(self, anchor: str) -> str | None:
        """``L(ã)``: the repository's two-stage resolution; directories count as unresolved."""
        if self.repo is None:
            return None
        path = self.repo.localize(anchor)  # normalises the anchor's surface form itself
        if path is None:
            return None
        entity = self.repo.get(path)
        if entity is None or entity.kind == "directory":
            return None
        return path

    # ---------------------------------------------------------------- update
    def update_candidates(self, vector: np.ndarray) -> list[UpdateCandidate]:
        """Top-``k1`` similar semantic entities with the paths of their linked code entities."""
        hits = self.graph.semantic_vectors.top_k(vector, self.k1)
        return [
            UpdateCandidate(eid, self.graph.semantic[eid].text, self.graph.code_paths(eid), round(score, 4))
            for eid, score in hits
        ]

    def decide(
        self, memory: SketchedMemory, turn_memories: list[SketchedMemory], candidates: list[UpdateCandidate]
    ) -> dict[str, Any] | None:
        """One structured update decision (purpose ``memory_update``); None (counted) if unusable."""
        prompt = render_prompt(
            "memory_update",
            self.update_prompt_version,
            repository=self.repository_name,
            turn_memories="\n".join(
                f"  {'*' if m is memory else '-'} {m.text} [{', '.join(m.paths)}]" for m in turn_memories
            ),
            text=memory.text,
            paths=", ".join(memory.paths) or "(none)",
            candidates="\n".join(f"  {c.id}: {c.text} [{', '.join(c.paths)}]" for c in candidates)
            or "  (no existing memories)",
        )
        return self._ask_json(prompt, purpose="memory_update", validate=validate_decision,
                              max_tokens=self.update_max_tokens, failure_stat="update_failures",
                              what=f"memory update of unit {memory.text[:80]!r} (unit skipped)")

    def _ask_json(self, prompt: str, *, purpose: str, validate: Callable[[Any], dict[str, Any]],
                  max_tokens: int | None, failure_stat: str, what: str) -> dict[str, Any] | None:
        """One JSON memory call; None (counted in ``failure_stat`` and logged) when unusable or too long."""
        from reconmem.platform.llm import ContextLengthExceeded

        try:
            reply = self.llm.chat_json([{"role": "user", "content": prompt}], purpose=purpose,
                                       validate=validate, max_tokens=max_tokens)
        except ContextLengthExceeded as exc:
            self.stats["context_length_skips"] += 1
            self.stats[failure_stat] += 1
            log.warning("reconmem: %s: prompt too long: %s", what, exc)
            return None
        if reply is None:  # chat_json returns None exactly when the client counted a JSON failure
            self.json_failures[purpose] = self.json_failures.get(purpose, 0) + 1
        if reply is not None:
            try:
                reply = validate(reply)  # idempotent; guards clients that ignore `validate`
            except ValueError as exc:
                log.warning("reconmem: %s", exc)
                reply = None
        if reply is None:
            self.stats[failure_stat] += 1
            log.warning("reconmem: %s: output unusable", what)
        return reply

    def apply_decision(
        self,
        memory: SketchedMemory,
        vector: np.ndarray,
        decision: dict[str, Any],
        candidates: list[UpdateCandidate],
        *,
        turn: int,
        embed_text: Callable[[str], np.ndarray] | None = None,
    ) -> dict[str, Any]:
        """Apply a validated decision to the graph (with dual synchronisation). Returns a report."""
        shown = {c.id: c for c in candidates}
        action = decision["action"]
        target = normalise_id(decision.get("target"))
        report: dict[str, Any] = {"memory": memory.text, "requested": action, "target": target}
        if action in (MODIFY, REMOVE) and (target not in shown or target not in self.graph.semantic):
            self.stats["invalid_target_ids"] += 1
            report["invalid_target"] = target
            action = INSERT
        relations = []
        for raw in decision.get("relations", []):
            rid = normalise_id(raw)
            if rid in shown and rid in self.graph.semantic:
                if rid not in relations:
                    relations.append(rid)
            else:
                self.stats["invalid_relation_ids"] += 1
        report["action"] = action
        if action == INSERT:
            eid = self.graph.insert_semantic(memory.text, turn=turn, vector=vector)
            self._link_paths(eid, memory.paths, turn)
            report["id"] = eid
            self.stats["inserts"] += 1
        elif action == MODIFY:
            eid = target  # type: ignore[assignment]
            old = self.graph.semantic[eid].text
            merged = decision.get("text") or f"{old} {memory.text}"
            if merged != old:
                embed = embed_text or self.embedder.encode_one
                self.graph.modify_semantic(eid, text=merged, turn=turn, vector=embed(merged))
            else:
                self.graph.modify_semantic(eid, text=merged, turn=turn)
            self._link_paths(eid, memory.paths, turn)  # existing associations are kept: union
            report["id"] = eid
            report["text"] = merged
            self.stats["modifies"] += 1
        else:  # REMOVE: the outdated target goes; the newer unit survives unless it is a pure invalidation
            report["collected"] = self.graph.remove_semantic(target)  # type: ignore[arg-type]
            report["removed"] = target
            self.stats["removes"] += 1
            keep_new = decision.get("keep_new")
            if keep_new is None:
                keep_new = self.update_prompt_version >= 2  # v1 never asked; it dropped d_i
            report["keep_new"] = bool(keep_new)
            if keep_new:
                eid = self.graph.insert_semantic(memory.text, turn=turn, vector=vector)
                self._link_paths(eid, memory.paths, turn)
                report["id"] = eid
                self.stats["inserts"] += 1
                relations = [r for r in relations if r in self.graph.semantic]
            else:
                report["id"] = target
                relations = []
        added = [r for r in relations if r != report["id"] and self.graph.add_relation(report["id"], r)]
        self.stats["relations_added"] += len(added)
        report["relations"] = added
        return report

    def _link_paths(self, eid: str, paths: list[str], turn: int) -> None:
        for path in paths:
            if path in self.graph.structural:
                self.graph.link_code(eid, path, turn=turn)
                continue
            entity = self.repo.get(path) if self.repo is not None else None
            vector = self.code_vectors.vector(path) if self.code_vectors is not None else None
            self.graph.link_code(eid, path, kind=entity.kind if entity else None, vector=vector, turn=turn)
