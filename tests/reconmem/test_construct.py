"""Memory construction on the real boltons repository with scripted LLM replies (paper §2.2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconmem.memory.construct import (
    CodeDraftDatabase,
    MemoryConstructor,
    SketchedMemory,
    UpdateCandidate,
    extract_code_blocks,
    validate_decision,
)
from reconmem.platform.context import Turn
from reconmem.memory.graph import DualMemoryGraph, path_parent
from reconmem.memory.recall import RepositoryVectors
from rm_helpers import PurposeScript, decision, sketch

CHUNKED = "boltons/iterutils.py/chunked"
WINDOWED = "boltons/iterutils.py/windowed"
ITERUTILS = "boltons/iterutils.py"


def turn(i: int, user: str = "question", assistant: str = "answer") -> Turn:
    return Turn(index=i, user=user, assistant=assistant)


# ---------------------------------------------------------------------------- localization (§2.2.1)
@pytest.mark.parametrize(
    "anchor, expected, rule",
    [
        (CHUNKED, CHUNKED, "stage 1: exact lookup"),
        ("dictutils.py/OrderedMultiDict/add", "boltons/dictutils.py/OrderedMultiDict/add", "(a) longer trailing run"),
        ("urlutils/OrderedMultiDict/add", "boltons/urlutils.py/OrderedMultiDict/add", "(a) trailing run, file stem"),
        ("tests/main", "tests/test_statsutils_histogram.py/main", "(b) leading run beats shorter path"),
        ("OrderedMultiDict/add", "boltons/urlutils.py/OrderedMultiDict/add", "(c) tie on (a),(b): shorter path"),
        ("_DeferredLine/__init__", "boltons/tbutils.py/_DeferredLine/__init__", "(c) tie on (a),(b): shorter path"),
        ("CharData/sort_key", None, "unresolved: no such terminal name"),
        ("definitely_not_in_boltons", None, "unresolved"),
        ("boltons", None, "directory: not a structural entity"),
    ],
)
def test_anchor_localization(make_method, anchor, expected, rule):
    method = make_method()
    paths, unresolved = method.constructor.localize_all([anchor])
    assert paths == ([expected] if expected else []), rule
    assert unresolved == ([] if expected else [anchor]), rule


def test_localization_competitors_really_tie(boltons_index):
    """The tie cases above are real ties in boltons (both candidates exist)."""
    for path in ("boltons/dictutils.py/OrderedMultiDict/add", "boltons/urlutils.py/OrderedMultiDict/add",
                 "boltons/ecoutils.py/main", "tests/test_statsutils_histogram.py/main",
                 "boltons/excutils.py/_DeferredLine/__init__", "boltons/tbutils.py/_DeferredLine/__init__"):
        assert boltons_index.get(path) is not None, path


def test_unresolved_anchors_dropped_and_counted(make_method):
    script = PurposeScript(
        memory_sketching=[sketch(("chunked splits an iterable into lists", ["iterutils/chunked", "NoSuchThing/zzz"]))],
        memory_update=[decision("INSERT")],
    )
    method = make_method(script)
    method.observe(turn(1))
    (eid,) = method.graph.semantic
    assert method.graph.code_paths(eid) == [CHUNKED]
    assert method.stats["anchors_unresolved"] == 1 and method.stats["anchors_resolved"] == 1


# ---------------------------------------------------------------------------- INSERT / MODIFY / REMOVE (§2.2.2)
def test_insert_creates_entity_with_code_and_relations(make_method, embedder):
    script = PurposeScript(
        memory_sketching=[
            sketch(("The user wants chunked to yield lists of size 3.", [CHUNKED])),
            sketch(("windowed should be used for overlapping windows.", ["windowed"])),
        ],
        memory_update=[decision("INSERT"), decision("INSERT", relations=["m1"])],
    )
    method = make_method(script)
    method.observe(turn(1))
    g = method.graph
    assert list(g.semantic) == ["m1"]
    assert g.semantic["m1"].text == "The user wants chunked to yield lists of size 3."
    assert g.code_paths("m1") == [CHUNKED]
    assert g.structural[CHUNKED].kind == "function" and CHUNKED in g.structural_vectors
    assert np.allclose(g.semantic_vectors.get("m1"), embedder.encode_one(g.semantic["m1"].text), atol=1e-5)
    method.observe(turn(2))
    assert g.code_paths("m2") == [WINDOWED]
    assert g.r_se() == {("m2", "m1")}  # directed: from the updated memory to the related one
    assert method.stats["inserts"] == 2 and method.stats["relations_added"] == 1
    g.check_invariants()


def test_modify_merges_text_and_code_associations(make_method, embedder):
    script = PurposeScript(
        memory_sketching=[
            sketch(("chunked must yield lists of size 3.", [CHUNKED])),
            sketch(("chunked must also pad the last chunk with None.", ["windowed"])),
        ],
        memory_update=[
            decision("INSERT"),
            decision("MODIFY", target="[M1]", text="chunked must yield lists of size 3, padding the last with None."),
        ],
    )
    method = make_method(script)
    method.observe(turn(1))
    method.observe(turn(2))
    g = method.graph
    assert list(g.semantic) == ["m1"]
    assert g.semantic["m1"].text == "chunked must yield lists of size 3, padding the last with None."
    assert g.semantic["m1"].created_turn == 1 and g.semantic["m1"].updated_turn == 2
    assert g.code_paths("m1") == [CHUNKED, WINDOWED]  # existing + new associations
    assert np.allclose(g.semantic_vectors.get("m1"), embedder.encode_one(g.semantic["m1"].text), atol=1e-5)
    # the decision saw m1 with its code path as reference context (top-k1 with linked paths)
    update_prompt = method.session.llm.calls[-1]["messages"][-1]["content"]
    assert f"m1: chunked must yield lists of size 3. [{CHUNKED}]" in update_prompt
    assert method.stats["modifies"] == 1
    g.check_invariants()


def test_remove_deletes_conflicting_entity_and_collects_code(make_method):
    script = PurposeScript(
        memory_sketching=[
            sketch(("Use chunked with size 3.", [CHUNKED]), ("Use windowed for pairs.", [WINDOWED, ITERUTILS])),
            sketch(("The user no longer wants chunked; drop that plan.", [CHUNKED])),
        ],
        memory_update=[decision("INSERT"), decision("INSERT", relations=["m1"]),
                       {**decision("REMOVE", target="m1"), "keep_new": False}],  # a pure invalidation
    )
    method = make_method(script)
    method.observe(turn(1))
    g = method.graph
    assert g.r_st() == {(WINDOWED, ITERUTILS), (CHUNKED, ITERUTILS)}
    method.observe(turn(2))
    assert list(g.semantic) == ["m2"]  # keep_new false: the invalidating unit itself is not stored
    assert CHUNKED not in g.structural  # unreferenced -> garbage-collected
    assert set(g.structural) == {WINDOWED, ITERUTILS}
    assert g.r_st() == {(WINDOWED, ITERUTILS)}
    assert g.r_se() == set()  # the edge m2 -> m1 went with m1
    assert method.stats["removes"] == 1
    g.check_invariants()


def test_remove_on_conflict_keeps_the_revised_requirement(make_method):
    """Distractor first, revision later: REMOVE deletes the outdated memory and the
    newer unit survives; the prompt says so."""
    distractor = "parse_batches should split the log lines with chunked into lists of 5."
    revised = "Revised: parse_batches must use windowed with size 2 instead of chunked."
    script = PurposeScript(
        memory_sketching=[sketch((distractor, [CHUNKED])), sketch((revised, [WINDOWED]))],
        memory_update=[decision("INSERT"), decision("REMOVE", target="m1")],  # keep_new not said: v2 keeps d_i
    )
    method = make_method(script)
    method.observe(turn(1, "Let's batch the lines with chunked, 5 per list.", "OK, chunked(lines, 5)."))
    method.observe(turn(2, "Change of plan: use windowed pairs instead of chunked.", "Done: windowed(lines, 2)."))
    g = method.graph
    texts = [e.text for e in g.semantic.values()]
    assert texts == [revised]  # the revised requirement is in memory, the distractor is gone
    (eid,) = g.semantic
    assert g.code_paths(eid) == [WINDOWED] and CHUNKED not in g.structural
    assert method.stats["removes"] == 1 and method.stats["inserts"] == 2
    update_prompt = method.session.llm.calls[-1]["messages"][-1]["content"]
    assert '"keep_new": true  -> the new unit is stored as a new memory' in update_prompt
    assert "the target is deleted" in update_prompt
    g.check_invariants()


def test_remove_with_prompt_v1_drops_the_unit_as_before(make_method):
    script = PurposeScript(
        memory_sketching=[sketch(("old plan", [CHUNKED])), sketch(("new plan", [WINDOWED]))],
        memory_update=[decision("INSERT"), decision("REMOVE", target="m1")],
    )
    method = make_method(script, update_prompt_version=1)
    method.observe(turn(1))
    method.observe(turn(2))
    assert method.graph.semantic == {}  # v1 semantics (replays old records and caches)
    assert "keep_new" not in method.session.llm.calls[-1]["messages"][-1]["content"]
    assert method.state()["prompt_versions"]["memory_update"] == 1


def test_invented_ids_follow_the_documented_rule(make_method):
    script = PurposeScript(
        memory_sketching=[sketch(("A", [CHUNKED])), sketch(("B", []), ("C", []))],
        memory_update=[
            decision("INSERT"),
            decision("MODIFY", target="m99", text="never used", relations=["m1", "m42"]),
            decision("REMOVE", target=None),
        ],
    )
    method = make_method(script)
    method.observe(turn(1))
    method.observe(turn(2))
    g = method.graph
    assert [g.semantic[e].text for e in g.semantic] == ["A", "B", "C"]  # invalid targets degrade to INSERT
    assert g.r_se() == {("m2", "m1")}
    assert method.stats["invalid_target_ids"] == 2 and method.stats["invalid_relation_ids"] == 1


def test_malformed_sketch_is_skipped_and_counted(make_method):
    script = PurposeScript(memory_sketching=["I am not JSON at all", {"memory": "wrong shape"}])
    method = make_method(script)
    method.observe(turn(1, assistant="```python\nprint('draft')\n```"))
    method.observe(turn(2))
    assert method.graph.semantic == {}
    stats = method.stats
    assert stats["sketch_failures"] == 2 and stats["turns_observed"] == 2
    assert stats["json_failures"]["memory_sketching"] == 2
    assert stats["drafts"] == 1  # code drafts of the turn are still stored
    assert [r.get("skipped") for r in method.turn_reports] == ["sketch_failed", "sketch_failed"]


def test_malformed_decision_skips_that_unit_and_is_counted(make_method):
    script = PurposeScript(
        memory_sketching=[sketch(("kept", []), ("lost", []), ("also kept", []))],
        memory_update=[decision("INSERT"), '{"action": "UPSERT"}', decision("INSERT")],
    )
    method = make_method(script)
    method.observe(turn(1))
    assert [e.text for e in method.graph.semantic.values()] == ["kept", "also kept"]
    assert method.stats["update_failures"] == 1
    assert method.stats["json_failures"]["memory_update"] == 1


def test_repaired_json_is_used(make_method):
    script = PurposeScript(
        memory_sketching=["```json\n{'memories': [{'text': 'repaired memory', 'anchors': ['chunked'],},]}\n```"],
        memory_update=['{"action": "insert", "relations": [],'],
    )
    method = make_method(script)
    method.observe(turn(1))
    assert [e.text for e in method.graph.semantic.values()] == ["repaired memory"]
    assert method.stats["sketch_failures"] == 0 and method.stats["update_failures"] == 0


def test_validate_decision_rejects_unknown_actions():
    with pytest.raises(ValueError, match="action"):
        validate_decision({"action": "DELETE"})
    assert validate_decision({"action": "modify", "target": "m1"})["action"] == "MODIFY"


# ---------------------------------------------------------------------------- code drafts (§2.3.1)
def test_code_blocks_extracted_into_draft_database(make_method):
    answer = (
        "Here:\n```python\nfrom boltons.iterutils import chunked\nprint(chunked(range(9), 3))\n```\n"
        "and again\n```python\nfrom boltons.iterutils import chunked\nprint(chunked(range(9), 3))\n```\n"
        "```\n\n```\n```bash\npip install boltons\n```"
    )
    assert [lang for lang, _ in extract_code_blocks(answer)] == ["python", "python", "bash"]
    method = make_method(PurposeScript(memory_sketching=[sketch()]))
    method.observe(turn(1, assistant=answer))
    drafts = method.drafts
    assert [d.language for d in drafts.drafts.values()] == ["python", "bash"]
    assert len(drafts.vectors) == 2
    assert method.stats["drafts_duplicate"] == 1


# ---------------------------------------------------------------------------- property test over real paths
POOL = [
    ITERUTILS, CHUNKED, WINDOWED, "boltons/iterutils.py/remap",
    "boltons/cacheutils.py", "boltons/cacheutils.py/LRU", "boltons/cacheutils.py/LRU/__getitem__",
    "boltons/cacheutils.py/LRI", "boltons/dictutils.py/OrderedMultiDict/add", "boltons/strutils.py/slugify",
]
TEXTS = [f"memory about topic {i}" for i in range(12)]

update_op = st.tuples(
    st.sampled_from(["INSERT", "MODIFY", "REMOVE"]),
    st.one_of(st.none(), st.integers(0, 15).map(lambda i: f"m{i}")),  # may be invented
    st.integers(0, len(TEXTS) - 1),
    st.lists(st.sampled_from(POOL), max_size=3, unique=True),
    st.lists(st.integers(0, 15).map(lambda i: f"m{i}"), max_size=2),
)


@pytest.fixture(scope="module")
def text_vectors(embedder):
    return dict(zip(TEXTS, embedder.encode(TEXTS)))


@pytest.fixture(scope="module")
def code_vectors(boltons_index, embedder):
    return RepositoryVectors(boltons_index, embedder)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(update_op, min_size=1, max_size=30))
def test_invariants_hold_after_random_update_sequences(ops, boltons_index, embedder, text_vectors, code_vectors):
    graph = DualMemoryGraph()
    constructor = MemoryConstructor(graph, CodeDraftDatabase(), llm=None, embedder=embedder, repo=boltons_index,
                                    code_vectors=code_vectors, k1=3)
    for step, (action, target, t, paths, relations) in enumerate(ops):
        text = TEXTS[t]
        candidates: list[UpdateCandidate] = constructor.update_candidates(text_vectors[text])
        constructor.apply_decision(
            SketchedMemory(text, paths, paths=list(paths)),
            text_vectors[text],
            {"action": action, "target": target, "text": None, "relations": relations},
            candidates,
            turn=step,
            embed_text=lambda s: text_vectors.get(s, text_vectors[TEXTS[0]]),
        )
        graph.check_invariants()
        r_dual = graph.r_dual()
        assert graph.r_dual_reverse() == {(p, s) for s, p in r_dual}  # Eq. 3
        assert set(graph.structural) == {p for _, p in r_dual}  # only referenced entities
        assert graph.r_st() == {(p, path_parent(p)) for p in graph.structural if path_parent(p) in graph.structural}
        assert all(boltons_index.parent(c) == p for c, p in graph.r_st())  # derived relation = repository parent
    back = DualMemoryGraph.from_dict(graph.to_dict(include_vectors=True))
    assert back.to_dict(include_vectors=True) == graph.to_dict(include_vectors=True)


def test_json_failures_are_this_conversations_own(boltons_index, embedder):
    """memory.json's json_failures count this sample's failed JSON calls, not the shared client's total."""
    from reconmem.memory.method import ReConMem
    from reconmem.platform.context import Session
    from reconmem.platform.testing import ScriptedLLM

    script = PurposeScript(memory_sketching=["not json", "still not json", sketch(("ok", []))],
                           memory_update=[decision("INSERT")])
    llm = ScriptedLLM(script)  # one client shared by two conversations, as in a run
    first, second = ReConMem(), ReConMem()
    first.start(Session(sample_id="a", llm=llm, embedder=embedder, repo=boltons_index))
    second.start(Session(sample_id="b", llm=llm, embedder=embedder, repo=boltons_index))
    first.observe(turn(1))
    first.observe(turn(2))
    second.observe(turn(1))
    assert llm.json_failures["memory_sketching"] == 2  # run-wide
    assert first.state()["stats"]["json_failures"] == {"memory_sketching": 2, "memory_update": 0}
    assert second.state()["stats"]["json_failures"] == {"memory_sketching": 0, "memory_update": 0}
