"""Joint memory recall on the real boltons repository (paper §2.3): grounding, E0, Eq. 8/9, switches, HCC."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from reconmem.platform.context import DUAL_QUERY, EXPANSION, ORIGINAL_QUERY, REPO_WIDE, Turn
from rm_helpers import PurposeScript, decision, sketch

CHUNKED = "boltons/iterutils.py/chunked"
WINDOWED = "boltons/iterutils.py/windowed"
ITERUTILS = "boltons/iterutils.py"
LRU = "boltons/cacheutils.py/LRU"
LRI = "boltons/cacheutils.py/LRI"
SLUGIFY = "boltons/strutils.py/slugify"

M1 = "The user wants to split a log file into batches of fixed size."
M2 = "Batches must overlap by one line so that context is kept between batches."
M3 = "Timestamps in the logs are parsed with a custom regular expression."
M4 = "The team prefers small pure functions with docstrings."
M5 = "Cache hits should be counted for monitoring dashboards."
M6 = "Module-level helpers in iterutils must stay Python 2 compatible."


def add_memory(method, text: str, paths=(), turn: int = 0) -> str:
    eid = method.graph.insert_semantic(text, turn=turn, vector=method.session.embedder.encode_one(text))
    method.constructor._link_paths(eid, list(paths), turn)
    return eid


def found(ctx) -> dict[tuple[str, str], str]:
    return {(i.kind, i.id): i.source for i in ctx.items}


def semantic_seed_graph(method) -> dict[str, str]:
    """m1 -> m2 -> m3 (R_se), m4 -> m1; code: m1~chunked, m2~windowed, m3~LRU, m5~chunked, m6~iterutils.py."""
    ids = {
        "m1": add_memory(method, M1, [CHUNKED]),
        "m2": add_memory(method, M2, [WINDOWED]),
        "m3": add_memory(method, M3, [LRU]),
        "m4": add_memory(method, M4),
        "m5": add_memory(method, M5, [CHUNKED]),
        "m6": add_memory(method, M6, [ITERUTILS]),
    }
    g = method.graph
    g.add_relation(ids["m1"], ids["m2"])
    g.add_relation(ids["m2"], ids["m3"])
    g.add_relation(ids["m4"], ids["m1"])
    g.check_invariants()
    assert (CHUNKED, ITERUTILS) in g.r_st()
    return ids


# ---------------------------------------------------------------------------- Eq. 8 / Eq. 9
def test_expansion_from_a_semantic_seed_reaches_exactly_eq8_eq9(make_method):
    method = make_method(k2=1, k31=0, k32=0)
    semantic_seed_graph(method)
    ctx = method.context_for(M1)
    assert found(ctx) == {
        ("memory", "m1"): ORIGINAL_QUERY,  # E0
        ("memory", "m2"): EXPANSION,  # Eq. 8: (m1, m2) in R_se
        ("code", CHUNKED): EXPANSION,  # Eq. 9: (m1, chunked) in R_dual
        ("code", WINDOWED): EXPANSION,  # Eq. 9 from the intra-graph neighbour m2
    }
    # not reached: m3 (two R_se hops), m4 (edge points into m1), m5 (second inter hop via chunked),
    # iterutils.py (R_st hop after the inter hop), LRU (via m3)
    stages = {i.id: i.meta["stage"] for i in ctx.items}
    assert stages == {"m1": "initial", "m2": "intra_graph", CHUNKED: "inter_graph", WINDOWED: "inter_graph"}
    assert {i.id: i.meta.get("via") for i in ctx.items if i.source == EXPANSION} == {
        "m2": "m1", CHUNKED: "m1", WINDOWED: "m2"}


def test_expansion_from_a_structural_seed_reaches_exactly_eq8_eq9(make_method, boltons_index):
    method = make_method(k2=0, k31=0, k32=1, qg=False)
    semantic_seed_graph(method)
    query = boltons_index.entity_text(CHUNKED)  # embeds to exactly chunked's structural vector
    ctx = method.context_for(query)
    assert found(ctx) == {
        ("code", CHUNKED): ORIGINAL_QUERY,  # E0 via the structural graph (not grounded -> original query)
        ("code", ITERUTILS): EXPANSION,  # Eq. 8: (chunked, iterutils.py) in R_st
        ("memory", "m1"): EXPANSION,  # Eq. 9: R*_dual from chunked
        ("memory", "m5"): EXPANSION,  # Eq. 9: R*_dual from chunked
        ("memory", "m6"): EXPANSION,  # Eq. 9: R*_dual from the intra-graph neighbour iterutils.py
    }
    # not reached: windowed (sibling; R_st is child -> parent only), m2 (R_se after the inter hop)


def test_repo_wide_hits_outside_the_graph_are_kept_but_not_expanded(make_method, boltons_index):
    method = make_method(k2=0, k31=1, k32=0, qg=False)
    semantic_seed_graph(method)
    ctx = method.context_for(boltons_index.entity_text(SLUGIFY))
    assert found(ctx) == {("code", SLUGIFY): REPO_WIDE}
    assert ctx.items[0].meta["in_graph"] is False
    # once slugify is instantiated in the structural graph, the same repo-wide hit expands
    eid = add_memory(method, "Slugs are built with slugify.", [SLUGIFY])
    ctx = method.context_for(boltons_index.entity_text(SLUGIFY))
    assert found(ctx) == {("code", SLUGIFY): REPO_WIDE, ("memory", eid): EXPANSION}


# ---------------------------------------------------------------------------- switches
def test_gae_off_keeps_only_initial_retrieval(make_method):
    method = make_method(k2=1, k31=0, k32=0, gae=False)
    semantic_seed_graph(method)
    assert found(method.context_for(M1)) == {("memory", "m1"): ORIGINAL_QUERY}


def test_smg_switch_controls_direct_code_retrieval(make_method, boltons_index):
    """w/o SMG (paper §4.3): no direct structural-graph (k32) nor repository-wide (k31) code retrieval;
    code entities are obtained solely through inter-graph expansion."""
    query = boltons_index.entity_text(LRU)
    with_smg = make_method(k2=1, k31=1, k32=2, qg=False)
    without = make_method(k2=1, k31=1, k32=2, qg=False, smg=False)
    for method in (with_smg, without):
        semantic_seed_graph(method)
    got_with = with_smg.context_for(query)
    got_without = without.context_for(query)
    routes_with = {r for i in got_with.items for r in i.meta["routes"]}
    assert {"structural_graph", "repo_wide"} <= routes_with
    assert len([i for i in got_with.items if "structural_graph" in i.meta["routes"]]) == 2
    routes_without = {r for i in got_without.items for r in i.meta["routes"]}
    assert not routes_without & {"structural_graph", "repo_wide"}
    code_without = [i for i in got_without.items if i.kind == "code"]
    assert code_without and all(i.meta["stage"] == "inter_graph" and i.source == EXPANSION for i in code_without)
    (seed,) = [i.id for i in got_without.items if i.meta["stage"] == "initial"]
    reachable = {p for m in [seed, *without.graph.semantic_successors(seed)] for p in without.graph.code_paths(m)}
    assert {i.id for i in code_without} == reachable


def test_hcc_switch_class_keeps_signatures_and_drops_bodies(make_method, boltons_index):
    source = boltons_index.source(LRI)
    body_lines = ["if max_size <= 0:", "self._init_ll()", "raise TypeError('expected on_miss to be a callable'"]
    assert all(line in source for line in body_lines)
    texts = {}
    for hcc in (True, False):
        method = make_method(k2=1, k31=0, k32=0, hcc=hcc)
        add_memory(method, "LRI eviction must stay O(1).", [LRI, CHUNKED])
        ctx = method.context_for("LRI eviction must stay O(1).")
        items = {i.id: i for i in ctx.items if i.kind == "code"}
        texts[hcc] = items[LRI].text
        assert items[LRI].meta["compression"] == ("summary" if hcc else "full")
        assert items[CHUNKED].meta["compression"] == "full"  # functions are never compressed
        assert boltons_index.display_source(CHUNKED) in items[CHUNKED].text
    summary, full = texts[True], texts[False]
    assert "class LRI(dict):" in summary
    for signature in ("def __init__(self, max_size=DEFAULT_MAX_SIZE, values=None,", "def __getitem__(self, key):",
                      "def pop(self, key, default=_MISSING):", "def update(self, E, **F):"):
        assert signature in summary
    assert not any(line in summary for line in body_lines)
    assert source in full and len(summary) < len(full) / 3


# ---------------------------------------------------------------------------- grounding (§2.3.1)
DRAFT = "from boltons.cacheutils import LRU\ncache = LRU(max_size=128)\ncache['a'] = 1\nprint(cache.get('a'))"
QUERY = "How big should the LRU cache max_size be for our service?"


def test_grounding_switches_exactly_at_the_threshold(make_method, embedder):
    method = make_method(k2=0, k31=3, k32=0)
    method.drafts.add(DRAFT, embedder.encode_one(DRAFT), turn=1, language="python")
    qvec = embedder.encode_one(QUERY)
    _, similarity = method.drafts.most_similar(qvec)
    code_vectors = method.recaller.code_vectors
    by_query = [p for p, _ in code_vectors.top_k(qvec, 3)]
    by_draft = [p for p, _ in code_vectors.top_k(embedder.encode_one(DRAFT), 3)]
    assert by_query != by_draft  # the two queries really retrieve different code here

    method.recall_config.grounding_threshold = similarity  # not strictly greater -> original query
    ctx = method.context_for(QUERY)
    assert ctx.dual_query is None and ctx.meta["grounding"]["used"] is False
    assert [i.id for i in ctx.items] == by_query

    method.recall_config.grounding_threshold = float(np.nextafter(np.float32(similarity), np.float32(-1)))
    ctx = method.context_for(QUERY)
    assert ctx.dual_query == DRAFT and ctx.meta["grounding"]["used"] is True
    assert [i.id for i in ctx.items] == by_draft
    assert all(i.source == REPO_WIDE and i.meta["query"] == "dual" for i in ctx.items)


def test_qg_off_always_uses_the_original_query(make_method, embedder):
    method = make_method(k2=0, k31=3, k32=0, qg=False, grounding_threshold=-1.0)
    method.drafts.add(DRAFT, embedder.encode_one(DRAFT), turn=1, language="python")
    ctx = method.context_for(QUERY)
    assert ctx.dual_query is None and ctx.meta["grounding"]["used"] is False
    assert [i.id for i in ctx.items] == [p for p, _ in method.recaller.code_vectors.top_k(embedder.encode_one(QUERY), 3)]


def test_dual_query_drives_structural_graph_retrieval(make_method, embedder):
    method = make_method(k2=0, k31=0, k32=1, gae=False, grounding_threshold=0.0)
    semantic_seed_graph(method)
    method.drafts.add(DRAFT, embedder.encode_one(DRAFT), turn=1, language="python")
    ctx = method.context_for(QUERY)
    assert ctx.dual_query == DRAFT
    assert [(i.id, i.source) for i in ctx.items] == [(LRU, DUAL_QUERY)]


# ---------------------------------------------------------------------------- prompt, first turn, read-only
def conversation(make_method, **options):
    script = PurposeScript(
        memory_sketching=[
            sketch(("The user caches parsed log lines with LRU.", ["cacheutils/LRU"]),
                   ("Log lines are processed in batches with chunked.", ["chunked"])),
        ],
        memory_update=[decision("INSERT"), decision("INSERT", relations=["m1"])],
    )
    method = make_method(script, **options)
    return method


def test_prompt_layout_semantic_then_structural_context(make_method):
    method = conversation(make_method)
    method.observe(Turn(1, "How do I cache lines?", "Use LRU:\n```python\ncache = LRU(max_size=10)\n```"))
    ctx = method.context_for("Which helper batches the log lines?")
    assert [m["role"] for m in ctx.messages] == ["system", "user"]
    system = ctx.messages[0]["content"]
    assert system.startswith(method.session.system_prompt)
    assert system.index("## Conversation memory") < system.index("## Repository code context")
    for item in ctx.items:
        assert item.text in system
    assert ctx.messages[-1]["content"] == "Which helper batches the log lines?"


def test_first_turn_without_memory(make_method):
    # "no recall on the first turn" is CAB's protocol rule, applied once for every method by the CAB
    # maintainer agent (benchmarks/cab/maintainer.py); ReConMem itself always recalls
    plain = conversation(make_method, meta={"no_recall_first_turn": True})
    first = plain.context_for("How do I cache lines?")
    assert first.items and {i.source for i in first.items} == {REPO_WIDE}


def test_context_for_mutates_nothing(make_method):
    method = conversation(make_method)
    method.observe(Turn(1, "How do I cache lines?", "Use LRU:\n```python\ncache = LRU(max_size=10)\n```"))
    before = copy.deepcopy(method.state())
    graph_before = method.graph.to_dict(include_vectors=True)
    drafts_before = (method.drafts.to_dict(), method.drafts.vectors.matrix.copy())
    calls_before = len(method.session.llm.calls)
    for read_only in (True, False):
        ctx = method.context_for("cache = LRU(max_size=10) for the log lines?", read_only=read_only)
        assert ctx.items
    assert method.state() == before
    assert method.graph.to_dict(include_vectors=True) == graph_before
    assert method.drafts.to_dict() == drafts_before[0]
    assert np.array_equal(method.drafts.vectors.matrix, drafts_before[1])
    assert len(method.session.llm.calls) == calls_before  # recall makes no LLM call


def test_options_are_validated():
    from reconmem.memory.method import ReConMem

    with pytest.raises(ValueError, match="k2"):
        ReConMem(k2=-1)
    with pytest.raises(ValueError, match="gae"):
        ReConMem(gae="maybe")


# ---------------------------------------------------------------------------- independent branch views
def _view_keys(ctx, view: str) -> set[tuple[str, str]]:
    return {(e["kind"], e["id"]) for e in ctx.meta["views"][view]}


def test_branch_views_are_expanded_independently(make_method, boltons_index):
    """An entity reachable from both branches is in both views; together the views are the merged context."""
    method = make_method(k2=1, k31=0, k32=1, qg=False)
    ids = semantic_seed_graph(method)
    query = boltons_index.entity_text(CHUNKED)
    top_memory = method.graph.semantic_vectors.top_k(method.session.embedder.encode_one(query), 1)[0][0]
    assert top_memory in (ids["m1"], ids["m5"])  # precondition: the semantic seed links to chunked (R_dual)
    ctx = method.context_for(query)
    original, dual = _view_keys(ctx, "original"), _view_keys(ctx, "dual")
    # chunked: initial hit of the dual branch (structural graph) AND expansion (Eq. 9) of the original branch
    assert ("code", CHUNKED) in original and ("code", CHUNKED) in dual
    # the semantic seed: initial hit of the original branch AND R*_dual expansion of chunked in the dual branch
    assert ("memory", top_memory) in original and ("memory", top_memory) in dual
    assert {("memory", ids["m5"]), ("memory", ids["m6"]), ("code", ITERUTILS)} <= dual
    # the merged context (what the method answers with) is exactly the union, each entity once
    assert original | dual == set(found(ctx))
    assert len(ctx.items) == len(found(ctx))
    # the shared-seen provenance of the merged context credits chunked to one branch only (the old bias)
    merged_chunked = next(i for i in ctx.items if i.id == CHUNKED)
    assert merged_chunked.meta["stage"] == "initial" and merged_chunked.meta.get("via") is None


def test_branch_views_leave_the_prompt_unchanged(make_method, boltons_index, monkeypatch):
    """The views are bookkeeping: the messages are the same when no view is built at all."""
    method = make_method(k2=2, k31=1, k32=1)
    semantic_seed_graph(method)
    query = boltons_index.entity_text(WINDOWED)
    with_views = method.context_for(query)
    assert with_views.meta["views"]["original"] and with_views.meta["views"]["dual"]
    recaller = method.recaller
    real = recaller.retrieve_views
    monkeypatch.setattr(recaller, "retrieve_views", lambda vector, neighbours=None, **kw: (*real(vector, neighbours, **kw)[:2], {}))
    without_views = method.context_for(query)
    assert without_views.meta["views"] == {}
    assert with_views.messages == without_views.messages
    assert [i.to_dict() for i in with_views.items] == [i.to_dict() for i in without_views.items]
