"""Mem0^R baseline (LoCoEval's repository-aware Mem0; paper §3.4).

Memory entries pair a text with the paths of the repository artifacts it concerns.
- Extraction also emits candidate paths; each is resolved with ``session.repo.localize`` (exact
  lookup, else the best name match, paper §2.2.1); unresolved candidates are dropped.
- The decision call sees each memory's paths. ADD takes the paths of the decision plus those of the
  extracted fact it comes from (the most similar fact); UPDATE merges them into the old list.
- Recall: the ``recall_k`` most similar memories, the code of their linked artifacts (full source;
  an artifact longer than ``max_artifact_chars`` is given as its signature summary), plus a
  repository retrieval (``repo_k`` functions) whose query is the user query and the retrieved memory
  texts. Code is deduplicated by path, and an entity inside an artifact already shown in full is
  skipped. Mem0^R does not take the unified repository adaptation: this is its own access.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from baselines.mem0 import Fact, Memory, Mem0
from baselines.repo_context import code_item
from reconmem.platform.context import MEMORY, REPO_WIDE, Context, ContextItem
from reconmem.platform.fit import fit_prompt


class Mem0R(Mem0):
    """Mem0 with repository-artifact links and code loading at recall."""

    name = "mem0r"
    extraction_prompt = "mem0r_extraction"
    update_prompt = "mem0r_update"
    uses_repo_adaptation = False

    def __init__(self, recall_k: int = 10, similar_k: int = 5, repo_k: int = 10, max_artifact_chars: int = 6000) -> None:
        super().__init__(recall_k=recall_k, similar_k=similar_k, repo_context_k=0)
        if repo_k < 0:
            raise ValueError(f"method.manager.repo_k must be >= 0, got {repo_k}")
        self.repo_k = int(repo_k)
        self.max_artifact_chars = int(max_artifact_chars)

    def _reset(self) -> None:
        super()._reset()
        self.resolutions: list[dict[str, Any]] = []  # candidate -> resolved path (or None), for analysis

    # ---- path resolution ----------------------------------------------------------------------
    def resolve(self, candidate: str) -> str | None:
        """Resolve one candidate path against the repository index (exact, else best name match)."""
        repo = self._session().repo
        if repo is None:
            return None
        cleaned = candidate.strip().strip("`'\"").replace("\\", "/").removeprefix("./").rstrip("/")
        cleaned = cleaned.replace("::", "/").replace("#", "/")
        if not cleaned:
            return None
        if repo.get(cleaned) is not None:
            resolved: str | None = cleaned
        else:
            resolved = repo.localize(cleaned)
            if resolved is None and "." in cleaned.rsplit("/", 1)[-1] and not cleaned.endswith(".py"):
                # dotted reference such as "cacheutils.LRU.get" -> "cacheutils/LRU/get"
                resolved = repo.localize(cleaned.replace(".", "/"))
        self.resolutions.append({"candidate": candidate, "resolved": resolved})
        return resolved

    def resolve_all(self, candidates: list[str]) -> list[str]:
        out: list[str] = []
        for c in candidates:
            p = self.resolve(c)
            if p is not None and p not in out:
                out.append(p)
        return out

    def prepare_facts(self, facts: list[Fact]) -> list[Fact]:
        return [Fact(f.text, self.resolve_all(f.paths)) for f in super().prepare_facts(facts)]

    def old_memory_view(self, mask: dict[str, str]) -> list[dict[str, Any]]:
        return [{"id": n, "text": self.memories[real].text, "paths": self.memories[real].paths} for n, real in mask.items()]

    def new_facts_view(self, facts: list[Fact]) -> list[Any]:
        return [{"text": f.text, "paths": f.paths} for f in facts]

    def paths_for(self, d: dict[str, Any], mem: Memory | None, facts: list[Fact], fact_vecs: np.ndarray) -> list[str]:
        """Old paths (UPDATE) + the decision's paths + the paths of the fact the decision comes from."""
        merged = list(mem.paths) if mem is not None else []
        source_fact = self._source_fact(d["text"], facts, fact_vecs)
        extra = self.resolve_all(d.get("paths", []))
        if source_fact is not None:
            extra += source_fact.paths
        for p in extra:
            if p not in merged:
                merged.append(p)
        return merged

    def _source_fact(self, text: str, facts: list[Fact], fact_vecs: np.ndarray) -> Fact | None:
        if not facts or not text:
            return None
        for f in facts:
            if f.text == text:
                return f
        sims = np.asarray(fact_vecs) @ self._session().embedder.encode_one(text)
        return facts[int(np.argmax(sims))]

    # ---- recall -------------------------------------------------------------------------------
    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        session = self._session()
        recalled = self.search(query, self.recall_k)
        mem_items = self.memory_items(recalled)
        linked = self.linked_code(recalled)
        shown = {i.id for i in linked}
        full_shown = [i.id for i in linked if i.meta.get("compression") == "full"]
        retrieved: list[ContextItem] = []
        if session.repo is not None and self.repo_k > 0:
            repo_query = "\n".join([query, *(m.text for m, _ in recalled)])
            for path, score in session.repo.search(repo_query, session.embedder, k=self.repo_k + len(shown), kinds=("function",),
                                                  retriever=session.retriever):
                if path in shown or any(path.startswith(p + "/") for p in full_shown):
                    continue
                retrieved.append(code_item(session, path, source=REPO_WIDE, score=score))
                shown.add(path)
                if len(retrieved) >= self.repo_k:
                    break
        code = linked + retrieved
        # guard: repository hits lowest-ranked first, then linked code, then memories (lowest first)
        order = [*reversed(retrieved), *reversed(linked), *reversed(mem_items)]
        fitted = fit_prompt(session, sections=self._sections, items=mem_items + code, query=query, drop_order=order)
        meta = {"recalled": [m.id for m, _ in recalled], "repo_query_memories": len(recalled), **fitted.meta}
        return Context(query=query, messages=fitted.messages, items=fitted.items, meta=meta)

    def linked_code(self, recalled: list[tuple[Memory, float]]) -> list[ContextItem]:
        """Code of the artifacts linked to the recalled memories, deduplicated, in recall order."""
        session = self._session()
        repo = session.repo
        if repo is None:
            return []
        items: list[ContextItem] = []
        full_paths: list[str] = []
        seen: set[str] = set()
        for mem, _ in recalled:
            for path in mem.paths:
                entity = repo.get(path)
                if path in seen or entity is None or entity.kind == "directory":
                    continue
                if any(path.startswith(p + "/") for p in full_paths):
                    continue
                seen.add(path)
                source = repo.display_source(path)
                if len(source) <= self.max_artifact_chars:
                    item = code_item(session, path, source=MEMORY, text=source)
                    full_paths.append(path)
                else:
                    item = code_item(session, path, source=MEMORY, text=repo.compress(path), compression="summary")
                item.meta["memory_id"] = mem.id
                items.append(item)
        return items

    def state(self) -> dict[str, Any]:
        out = super().state()
        out["resolutions"] = list(self.resolutions)
        return out
