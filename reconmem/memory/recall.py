"""Joint memory recall before every response (paper §2.3).

1. **Query grounding** (§2.3.1): the code draft most similar to the query; if its cosine similarity
   is strictly greater than the threshold (0.35) its code is the *dual query*, else the original
   query is used for the code side (``qg=False``: always the original query).
2. **Initial retrieval E0** (§2.3.2): top-``k2`` semantic entities by the original query; top-``k31``
   code entities of the whole repository and top-``k32`` entities of the structural memory graph by
   the dual query. ``smg=False`` follows the paper's ablation (§4.3): "removing direct retrieval
   on the structural memory graph, and instead allowing code entities to be obtained solely through
   expansion via inter-graph adjacency" - so neither k32 nor k31 code retrieval runs; code enters
   only through R_dual from the retrieved semantic entities. (The spec says "code only via
   expansion and repo-wide"; the paper wins.)
3. **Graph-adjacency expansion** (``gae``): ``E1 = E0 ∪ {e | (e', e) ∈ R_se ∪ R_st, e' ∈ E0}`` (Eq. 8)
   then ``E2 = E1 ∪ {e | (e', e) ∈ R_dual ∪ R*_dual, e' ∈ E1}`` (Eq. 9) - one hop each, no more.
   Repository-wide hits that are not instantiated in the structural graph stay in the context but
   have no graph relations, so they expand nothing.
4. Merge and de-duplicate (an entity reached by several routes appears once, labelled with its
   first route; all routes are kept in ``meta["routes"]``).
4b. **Independent branch views** (paper §3.3.1, §4.4, Fig. 6): for the coverage analysis the
   original-query branch (the k2 semantic hits) and the dual-query branch (the k32 structural-graph
   and k31 repository-wide hits, driven by the dual query, or by the original query when grounding
   fails) are each expanded on their own, with their own ``seen`` set, so an entity reachable from
   both branches is in both views. They are recorded in ``Context.meta["views"]`` as
   ``{"original": [...], "dual": [...]}`` (``{kind, id, stage, via}`` per entry). Expansion
   distributes over union, so the two views together are exactly the merged context; the merged
   context - what the method answers with - is built as before and the prompt does not change.
5. **Hierarchical code context compression** (§2.3.3) via ``RepositoryIndex.compress(path, hcc=...)``.
6. Output: the semantic context (memory texts) and the structural context (compressed code) as
   two sections of the system message (``build_messages``), no raw history: the dual memory is the
   conversation's whole context management (paper §2.3, Fig. 2).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from reconmem.platform.context import DUAL_QUERY, EXPANSION, ORIGINAL_QUERY, REPO_WIDE, Context, ContextItem, build_messages
from reconmem.memory.budgets import Budgets
from reconmem.memory.graph import DualMemoryGraph, VectorStore
from reconmem.memory.prompts import render_prompt
from reconmem.memory.stores import CODE_KINDS, CodeDraftDatabase, RepositoryVectors

if TYPE_CHECKING:
    from reconmem.platform.code.index import RepositoryIndex
    from reconmem.platform.code.retrieval import CodeRetriever

STAGE_INITIAL, STAGE_INTRA, STAGE_INTER = "initial", "intra_graph", "inter_graph"

# The retrieval branches of Fig. 6 and the initial-retrieval routes that seed each of them.
VIEW_ORIGINAL, VIEW_DUAL = "original", "dual"
BRANCH_ROUTES = {VIEW_ORIGINAL: ("semantic",), VIEW_DUAL: ("structural_graph", "repo_wide")}


@dataclass
class RecallConfig:
    gae: bool = True
    smg: bool = True
    qg: bool = True
    hcc: bool = True
    k2: int = Budgets.k2
    k31: int = Budgets.k31
    k32: int = Budgets.k32
    grounding_threshold: float = 0.35


@dataclass(slots=True)
class Hit:
    """One retrieved entity before rendering."""

    kind: str  # "memory" | "code"
    id: str  # semantic id or code path
    source: str  # provenance label
    stage: str  # initial | intra_graph | inter_graph
    score: float | None = None
    via: str | None = None  # the entity it was expanded from
    in_graph: bool = True
    routes: list[str] = field(default_factory=list)


@dataclass
class Grounding:
    used: bool
    draft_id: str | None = None
    similarity: float | None = None
    dual_query: str | None = None


class _Neighbours:
    """One recall's memo of graph adjacency, as ``(kind, id)`` pairs in the order :meth:`JointRecall.expand` visits."""

    def __init__(self, graph: DualMemoryGraph) -> None:
        self.graph = graph
        self._intra: dict[str, list[tuple[str, str]]] = {}
        self._parent: dict[str, list[tuple[str, str]]] = {}
        self._codes: dict[str, list[tuple[str, str]]] = {}
        self._memories: dict[str, list[tuple[str, str]]] = {}

    def intra(self, eid: str) -> list[tuple[str, str]]:
        """R_se successors of a memory (Eq. 8)."""
        found = self._intra.get(eid)
        if found is None:
            found = self._intra[eid] = [("memory", n) for n in sorted(self.graph.semantic_successors(eid))]
        return found

    def parent(self, path: str) -> list[tuple[str, str]]:
        """The R_st parent of a code entity, if instantiated (Eq. 8); none for repo-wide hits outside the graph."""
        found = self._parent.get(path)
        if found is None:
            parent = self.graph.structural_parent(path)
            found = self._parent[path] = [("code", parent)] if parent is not None else []
        return found

    def codes(self, eid: str) -> list[tuple[str, str]]:
        """R_dual: code paths of a memory (Eq. 9)."""
        found = self._codes.get(eid)
        if found is None:
            found = self._codes[eid] = [("code", p) for p in self.graph.code_paths(eid)]
        return found

    def memories(self, path: str) -> list[tuple[str, str]]:
        """R*_dual: memories referencing a code path (Eq. 9)."""
        found = self._memories.get(path)
        if found is None:
            found = self._memories[path] = [("memory", m) for m in self.graph.referencing(path)]
        return found


class JointRecall:
    """Recall over one graph + code draft database + repository. Never mutates any of them."""

    def __init__(
        self,
        graph: DualMemoryGraph,
        drafts: CodeDraftDatabase,
        *,
        repo: "RepositoryIndex | None",
        code_vectors: RepositoryVectors | None,
        config: RecallConfig,
        code_retriever: "CodeRetriever | None" = None,
    ) -> None:
        self.graph = graph
        self.drafts = drafts
        self.repo = repo
        self.code_vectors = code_vectors
        self.config = config
        self.code_retriever = code_retriever  # None: dense ranking (the paper's)

    # ---------------------------------------------------------------- stages
    def ground(self, query_vector: np.ndarray) -> tuple[Grounding, np.ndarray]:
        """Code-draft-based query grounding -> (what happened, the vector of the code-side query)."""
        if not self.config.qg:
            return Grounding(False), query_vector
        best = self.drafts.most_similar(query_vector)
        if best is None:
            return Grounding(False), query_vector
        draft, similarity = best
        if similarity > self.config.grounding_threshold:
            return Grounding(True, draft.id, similarity, draft.code), self.drafts.vectors.get(draft.id)  # type: ignore[return-value]
        return Grounding(False, draft.id, similarity), query_vector

    def initial(self, query_vector: np.ndarray, code_vector: np.ndarray, grounded: bool, *,
                code_text: str | None = None) -> list[Hit]:
        """E0: k2 semantic (original query), k32 structural-graph and k31 repo-wide (code-side query:
        ``code_vector``, and ``code_text`` for a lexical or hybrid code retriever)."""
        cfg = self.config
        code_source = DUAL_QUERY if grounded else ORIGINAL_QUERY
        hits = [
            Hit("memory", eid, ORIGINAL_QUERY, STAGE_INITIAL, score, routes=["semantic"])
            for eid, score in self.graph.semantic_vectors.top_k(query_vector, cfg.k2)
        ]
        retriever = self.code_retriever
        if cfg.smg:
            graph_dense = lambda n: self.graph.structural_vectors.top_k(code_vector, n)  # noqa: E731
            graph_hits = (graph_dense(cfg.k32) if retriever is None else
                          retriever.among(self.graph.structural, graph_dense, cfg.k32, text=code_text))
            hits += [
                Hit("code", path, code_source, STAGE_INITIAL, score, routes=["structural_graph"])
                for path, score in graph_hits
            ]
        if cfg.smg and self.code_vectors is not None:  # w/o SMG: code only via inter-graph expansion (§4.3)
            repo_hits = (self.code_vectors.top_k(code_vector, cfg.k31) if retriever is None else
                         retriever.repository(code_vector, cfg.k31, text=code_text))
            hits += [
                Hit("code", path, REPO_WIDE, STAGE_INITIAL, score, in_graph=path in self.graph.structural,
                    routes=["repo_wide"])
                for path, score in repo_hits
            ]
        return hits

    def expand(self, e0: list[Hit], neighbours: "_Neighbours | None" = None) -> list[Hit]:
        """Eq. 8 then Eq. 9 over the graph. Returns only the *new* hits (E2 minus E0), in a stable order.

        ``neighbours`` memoises the graph lookups of one recall (the merged context and both
        branch views expand overlapping sets); it never changes the result."""
        nb = neighbours or _Neighbours(self.graph)
        seen = {(h.kind, h.id) for h in e0}
        intra: list[Hit] = []
        for h in e0:
            for kind, nid in (nb.intra(h.id) if h.kind == "memory" else nb.parent(h.id)):
                if (kind, nid) not in seen:
                    seen.add((kind, nid))
                    intra.append(Hit(kind, nid, EXPANSION, STAGE_INTRA, via=h.id, routes=["r_se" if kind == "memory" else "r_st"]))
        inter: list[Hit] = []
        for h in [*e0, *intra]:
            for kind, nid in (nb.codes(h.id) if h.kind == "memory" else nb.memories(h.id)):
                if (kind, nid) not in seen:
                    seen.add((kind, nid))
                    inter.append(Hit(kind, nid, EXPANSION, STAGE_INTER, via=h.id, routes=["r_dual" if kind == "code" else "r_dual_reverse"]))
        return intra + inter

    @staticmethod
    def merge(hits: list[Hit]) -> list[Hit]:
        """Deduplicate by (kind, id): the first occurrence wins, later routes are appended to it."""
        merged: dict[tuple[str, str], Hit] = {}
        for h in hits:
            key = (h.kind, h.id)
            if key in merged:
                first = merged[key]
                first.routes.extend(r for r in h.routes if r not in first.routes)
                if first.score is None and h.score is not None:
                    first.score = h.score
            else:
                merged[key] = h
        return list(merged.values())

    def _expanded(self, initial: list[Hit], neighbours: "_Neighbours | None" = None) -> list[Hit]:
        """E0 (merged) plus its expansion (when ``gae``), merged; works on copies of ``initial``."""
        e0 = self.merge([replace(h, routes=list(h.routes)) for h in initial])
        return self.merge(e0 + (self.expand(e0, neighbours) if self.config.gae else []))

    def retrieve(self, query_vector: np.ndarray, *, query: str | None = None) -> tuple[Grounding, list[Hit]]:
        """Grounding + E0 + (optional) expansion + merge; no rendering."""
        grounding, hits, _ = self.retrieve_views(query_vector, query=query)
        return grounding, hits

    def retrieve_views(self, query_vector: np.ndarray, neighbours: "_Neighbours | None" = None, *,
                       query: str | None = None) -> tuple[Grounding, list[Hit], dict[str, list[Hit]]]:
        """(grounding, the merged hits, each branch's independently expanded hits).

        The merged hits are what the method answers with. Each view starts from its own branch's
        initial hits (:data:`BRANCH_ROUTES`) and is expanded with its own ``seen`` set. ``query``
        (the original query's text) is needed by a lexical or hybrid code retriever only."""
        grounding, code_vector = self.ground(query_vector)
        code_text = grounding.dual_query if grounding.used else query
        initial = self.initial(query_vector, code_vector, grounding.used, code_text=code_text)
        neighbours = neighbours or _Neighbours(self.graph)
        merged = self._expanded(initial, neighbours)
        views = {view: self._expanded([h for h in initial if h.routes and h.routes[0] in routes], neighbours)
                 for view, routes in BRANCH_ROUTES.items()}
        return grounding, merged, views

    # ---------------------------------------------------------------- rendering
    def code_text(self, path: str) -> tuple[str, str]:
        """(code, compression level) under the hcc switch."""
        assert self.repo is not None
        entity = self.repo.get(path)
        text = self.repo.compress(path, hcc=self.config.hcc)
        level = "summary" if self.config.hcc and entity is not None and entity.kind in ("type", "file") else "full"
        return text, level

    def recall(self, query: str, query_vector: np.ndarray, *, system_prompt: str) -> Context:
        """The whole §2.3 pipeline -> a :class:`Context` with per-item provenance."""
        t0 = time.perf_counter()
        neighbours = _Neighbours(self.graph)
        grounding, hits, branch_views = self.retrieve_views(query_vector, neighbours, query=query)
        t1 = time.perf_counter()
        memory_items: list[ContextItem] = []
        code_items: list[ContextItem] = []
        for h in hits:
            meta: dict[str, Any] = {
                "stage": h.stage,
                "routes": list(h.routes),
                "score": None if h.score is None else round(float(h.score), 6),
            }
            if h.via is not None:
                meta["via"] = h.via
            if h.kind == "memory":
                entity = self.graph.semantic[h.id]
                meta["paths"] = [path for _, path in neighbours.codes(h.id)]
                meta["updated_turn"] = entity.updated_turn
                memory_items.append(ContextItem("memory", h.id, entity.text, h.source, meta))
            else:
                entity = None if self.repo is None else self.repo.get(h.id)
                if entity is None:
                    continue
                text, level = self.code_text(h.id)
                meta.update(
                    path=h.id,
                    compression=level,
                    code_kind=entity.kind,
                    language=entity.language,
                    in_graph=h.id in self.graph.structural,
                    query="dual" if grounding.used and h.stage == STAGE_INITIAL else (
                        "original" if h.stage == STAGE_INITIAL else None),
                )
                code_items.append(ContextItem("code", h.id, text, h.source, meta))
        t2 = time.perf_counter()
        messages = build_messages(system_prompt, context_blocks(memory_items + code_items), [], query)
        rendered_keys = {(i.kind, i.id) for i in memory_items + code_items}
        views = {view: [{"kind": h.kind, "id": h.id, "stage": h.stage, **({"via": h.via} if h.via is not None else {})}
                        for h in view_hits if (h.kind, h.id) in rendered_keys]
                 for view, view_hits in branch_views.items()}
        meta = {
            "grounding": {
                "used": grounding.used,
                "draft_id": grounding.draft_id,
                "similarity": None if grounding.similarity is None else round(grounding.similarity, 6),
                "threshold": self.config.grounding_threshold,
            },
            "counts": {
                "memory": len(memory_items),
                "code": len(code_items),
                "expansion": sum(1 for h in hits if h.source == EXPANSION),
            },
            "timing_ms": {"retrieve": round((t1 - t0) * 1e3, 3), "compress": round((t2 - t1) * 1e3, 3)},
            "views": views,
        }
        return Context(query=query, messages=messages, items=memory_items + code_items,
                       dual_query=grounding.dual_query, meta=meta)


def context_blocks(items: list[ContextItem]) -> list[str]:
    """The two system-message sections for recalled items: memory texts, then the compressed code
    (used by :meth:`JointRecall.recall` and by the window guard when it re-renders a trimmed set)."""
    memory_items = [i for i in items if i.kind == "memory"]
    code_items = [i for i in items if i.kind == "code"]
    blocks = []
    if memory_items:
        blocks.append(render_prompt("semantic_context", items="\n".join(f"- {i.text}" for i in memory_items)).rstrip())
    if code_items:
        rendered = []
        for item in code_items:
            lang = item.meta.get("language") or ""
            rendered.append(f"```{lang}\n{item.text}\n```")  # the text starts with a "path:" comment
        blocks.append(render_prompt("structural_context", items="\n\n".join(rendered)).rstrip())
    return blocks


# CODE_KINDS, CodeDraftDatabase, RepositoryVectors and VectorStore are re-exported for older imports.
__all__ = ["BRANCH_ROUTES", "CODE_KINDS", "CodeDraftDatabase", "Grounding", "Hit", "JointRecall", "RecallConfig", "RepositoryVectors",
           "VectorStore"]
