"""ReConMem as a :class:`~reconmem.platform.context.ContextManager` (paper §2) with its four ablation switches.

* ``gae``  graph-adjacency expansion (Eq. 8/9); off -> E0 only.
* ``smg``  direct code retrieval (k32 from the structural memory graph, k31 repository-wide); off ->
  code entities are obtained solely through inter-graph expansion (paper §4.3, ❷ w/o SMG).
* ``qg``   code-draft-based query grounding; off -> the code side always uses the original query.
* ``hcc``  hierarchical code context compression; off -> full source of every code entity.

First turn: "no recall on the first turn" (CAB, paper §3.5) is the benchmark protocol's rule for
every method and lives in one place, the CAB maintainer agent (``benchmarks/cab/maintainer.py``), which
does not call ``context_for`` for the first response. Elsewhere the first recall runs normally on
the empty memory, which yields only repository-wide code (k31) - there are no memories, drafts or
structural entities yet.

Window guard: the recalled context goes through :func:`reconmem.platform.fit.fit_prompt`; when it
does not fit the backbone's window, expansion hits go first (inter-graph, then intra-graph), then
initial hits by ascending score; the trim is recorded in ``context.meta`` (``trimmed_items``,
``tokens_before``, ``tokens_after``).

``context_for`` never mutates the graph, the code draft database or the statistics (read-only or
not); all writes happen in ``observe``.
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

from reconmem.memory.construct import CodeDraftDatabase, MemoryConstructor
from reconmem.platform.code.retrieval import CodeRetriever, RetrieverSpec
from reconmem.platform.context import Context, ContextItem, ContextManager, Session, Turn
from reconmem.platform.fit import fit_prompt
from reconmem.memory.budgets import BUDGET_NAMES, DEFAULT_BUDGETS
from reconmem.memory.graph import DualMemoryGraph
from reconmem.memory.prompts import PROMPT_VERSIONS
from reconmem.memory.recall import CODE_KINDS, STAGE_INITIAL, STAGE_INTER, STAGE_INTRA, JointRecall, RecallConfig, RepositoryVectors, context_blocks


def resolve_budgets(explicit: Mapping[str, Any], budgets_by_backbone: Mapping[str, Any] | None,
                    backbone: str | None) -> dict[str, int]:
    """k1/k2/k31/k32 for ``backbone``: an explicit value (not None) wins, then the table's entry for
    ``backbone``, then its ``default`` entry, then :data:`DEFAULT_BUDGETS`. Unknown keys in the table
    are an error naming them."""
    table = dict(budgets_by_backbone or {})
    resolved = dict(DEFAULT_BUDGETS)
    for key in ("default", backbone):
        if key is None or key not in table:
            continue
        entry = dict(table[key] or {})
        unknown = sorted(set(entry) - set(BUDGET_NAMES))
        if unknown:
            raise ValueError(f"ReConMem: method.budgets_by_backbone.{key} has unknown key(s) {unknown}; "
                             f"allowed {list(BUDGET_NAMES)}")
        resolved.update({k: v for k, v in entry.items() if v is not None})
    resolved.update({k: v for k, v in explicit.items() if v is not None})
    return {k: _count(k, resolved[k]) for k in BUDGET_NAMES}


_STAGE_RANK = {STAGE_INTER: 0, STAGE_INTRA: 1, STAGE_INITIAL: 2}


def drop_order(items: list[ContextItem]) -> list[ContextItem]:
    """Recalled items lowest-ranked first: expansion hits (inter-graph, then intra-graph) before
    initial hits, and within a stage the lower similarity score first (the window guard's order)."""
    def rank(item: ContextItem) -> tuple[int, float]:
        score = item.meta.get("score")
        return _STAGE_RANK.get(item.meta.get("stage"), 0), float("-inf") if score is None else float(score)

    return sorted(items, key=rank)


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"ReConMem: option {name} must be true or false, got {value!r}")


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"ReConMem: option {name} must be a non-negative integer, got {value!r}")
    return value


class ReConMem(ContextManager):
    """Graph-based dual memory (semantic + structural memory graphs) for repository conversations."""

    name = "reconmem"

    def __init__(
        self,
        gae: bool = True,
        smg: bool = True,
        qg: bool = True,
        hcc: bool = True,
        k1: int | None = None,
        k2: int | None = None,
        k31: int | None = None,
        k32: int | None = None,
        grounding_threshold: float = 0.35,
        *,
        budgets_by_backbone: Mapping[str, Any] | None = None,
        backbone: str | None = None,
        code_kinds: Sequence[str] = CODE_KINDS,
        sketch_max_tokens: int | None = None,
        update_max_tokens: int | None = None,
        update_prompt_version: int | None = None,
        keep_turn_reports: bool = True,
    ) -> None:
        super().__init__()
        budgets = resolve_budgets({"k1": k1, "k2": k2, "k31": k31, "k32": k32}, budgets_by_backbone, backbone)
        self.backbone = backbone
        self.recall_config = RecallConfig(
            gae=_flag("gae", gae),
            smg=_flag("smg", smg),
            qg=_flag("qg", qg),
            hcc=_flag("hcc", hcc),
            k2=budgets["k2"],
            k31=budgets["k31"],
            k32=budgets["k32"],
            grounding_threshold=float(grounding_threshold),
        )
        if not -1.0 <= self.recall_config.grounding_threshold <= 1.0:
            raise ValueError(f"ReConMem: option grounding_threshold must be in [-1, 1], got {grounding_threshold!r}")
        self.k1 = budgets["k1"]
        bad = [k for k in code_kinds if k not in CODE_KINDS]
        if bad:
            raise ValueError(f"ReConMem: option code_kinds has unknown kinds {bad}; allowed {list(CODE_KINDS)}")
        self.code_kinds = tuple(code_kinds)
        self.sketch_max_tokens = sketch_max_tokens
        self.update_max_tokens = update_max_tokens
        self.prompt_versions = dict(PROMPT_VERSIONS)
        if update_prompt_version is not None:
            if int(update_prompt_version) not in (1, 2):
                raise ValueError(f"ReConMem: option update_prompt_version must be 1 or 2, got {update_prompt_version!r}")
            self.prompt_versions["memory_update"] = int(update_prompt_version)
        self.keep_turn_reports = keep_turn_reports
        self.graph = DualMemoryGraph()
        self.drafts = CodeDraftDatabase()
        self.constructor: MemoryConstructor | None = None
        self.recaller: JointRecall | None = None
        self.turns_observed = 0
        self.turn_reports: list[dict[str, Any]] = []

    @property
    def config(self) -> dict[str, Any]:
        c = self.recall_config
        return {
            "gae": c.gae, "smg": c.smg, "qg": c.qg, "hcc": c.hcc,
            "k1": self.k1, "k2": c.k2, "k31": c.k31, "k32": c.k32,
            "grounding_threshold": c.grounding_threshold, "code_kinds": list(self.code_kinds),
        }

    def params(self) -> dict[str, Any]:
        """The resolved budgets and switches (the run manifest's ``method_params``)."""
        return self.config

    def start(self, session: Session) -> None:
        """Fresh graph and code draft database for a new conversation."""
        super().start(session)
        self.graph = DualMemoryGraph()
        self.drafts = CodeDraftDatabase()
        code_vectors = (
            RepositoryVectors(session.repo, session.embedder, self.code_kinds) if session.repo is not None else None
        )
        code_retriever = None  # dense: the graph's and the repository's vectors, as in the paper
        if code_vectors is not None and RetrieverSpec.of(session.retriever).name != "dense":
            code_retriever = CodeRetriever(session.repo, code_vectors, self.code_kinds, session.retriever)
        repository_name = session.repo_name or "repository"
        self.constructor = MemoryConstructor(
            self.graph,
            self.drafts,
            llm=session.llm,
            embedder=session.embedder,
            repo=session.repo,
            code_vectors=code_vectors,
            k1=self.k1,
            repository_name=repository_name,
            sketch_max_tokens=self.sketch_max_tokens,
            update_max_tokens=self.update_max_tokens,
            update_prompt_version=self.prompt_versions["memory_update"],
        )
        self.recaller = JointRecall(
            self.graph, self.drafts, repo=session.repo, code_vectors=code_vectors, config=self.recall_config,
            code_retriever=code_retriever,
        )
        self.turns_observed = 0
        self.turn_reports = []

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        """Joint memory recall for ``query`` (never mutates memory, whatever ``read_only`` says)."""
        session = self._session()
        assert self.recaller is not None
        started = time.perf_counter()
        query_vector = session.embedder.encode_one(query)
        embedded = time.perf_counter()
        ctx = self.recaller.recall(query, query_vector, system_prompt=session.system_prompt)
        ctx.meta["timing_ms"]["embed_query"] = round((embedded - started) * 1e3, 3)
        fitted = fit_prompt(session, sections=context_blocks, items=ctx.items, query=query, drop_order=drop_order(ctx.items))
        ctx.messages, ctx.items = fitted.messages, fitted.items
        ctx.meta.update(fitted.meta)
        if fitted.meta["trimmed_items"] and isinstance(ctx.meta.get("views"), dict):  # views list what reached the prompt
            kept = {(i.kind, i.id) for i in fitted.items}
            ctx.meta["views"] = {v: [e for e in hits if (e.get("kind"), e.get("id")) in kept]
                                 for v, hits in ctx.meta["views"].items()}
        ctx.meta["read_only"] = read_only
        ctx.meta["memory_size"] = {"semantic": len(self.graph.semantic), "structural": len(self.graph.structural),
                                   "drafts": len(self.drafts)}
        return ctx

    def observe(self, turn: Turn) -> None:
        """Memory construction and maintenance for a completed turn (§2.2)."""
        self._session()
        assert self.constructor is not None
        report = self.constructor.process_turn(turn)
        self.turns_observed += 1
        if self.keep_turn_reports:
            self.turn_reports.append(report)

    @property
    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = dict(self.constructor.stats) if self.constructor is not None else {}
        stats["turns_observed"] = self.turns_observed
        stats["semantic_entities"] = len(self.graph.semantic)
        stats["structural_entities"] = len(self.graph.structural)
        stats["drafts"] = len(self.drafts)
        # this conversation's own count (the client's json_failures counter is run-wide)
        stats["json_failures"] = dict(self.constructor.json_failures) if self.constructor is not None else {
            "memory_sketching": 0, "memory_update": 0}
        return stats

    def state(self) -> dict[str, Any]:
        """memory.json: the graph, code drafts, statistics, config and prompt versions."""
        return {
            "method": self.name,
            "config": self.config,
            "prompt_versions": dict(self.prompt_versions),
            "graph": self.graph.to_dict(),
            "drafts": self.drafts.to_dict(),
            "stats": self.stats,
            "turn_reports": list(self.turn_reports),
        }
