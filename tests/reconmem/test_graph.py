"""DualMemoryGraph: dual synchronisation, derived R_st, invariants under random updates, JSON round-trip."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconmem.memory.graph import DualMemoryGraph, GraphInvariantError, VectorStore, path_parent

PATHS = [
    "pkg/a.py",
    "pkg/a.py/C",
    "pkg/a.py/C/m",
    "pkg/a.py/C/n",
    "pkg/a.py/f",
    "pkg/b.py",
    "pkg/b.py/g",
    "pkg/sub/c.py/D/k",
    "top.py",
    "top.py/h",
]


def vec(seed: int, dim: int = 8) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def test_path_parent():
    assert path_parent("pkg/a.py/C/m") == "pkg/a.py/C"
    assert path_parent("pkg/a.py") == "pkg"
    assert path_parent("top.py") is None


def test_link_instantiates_and_unlink_garbage_collects():
    g = DualMemoryGraph()
    a = g.insert_semantic("a", turn=1, vector=vec(1))
    b = g.insert_semantic("b", turn=1, vector=vec(2))
    assert g.link_code(a, "pkg/a.py/C/m", vector=vec(3))
    assert g.link_code(b, "pkg/a.py/C/m")
    assert not g.link_code(b, "pkg/a.py/C/m")  # already associated
    assert set(g.structural) == {"pkg/a.py/C/m"}
    assert g.r_dual_reverse() == {("pkg/a.py/C/m", a), ("pkg/a.py/C/m", b)}
    assert not g.unlink_code(a, "pkg/a.py/C/m")  # still referenced by b
    assert "pkg/a.py/C/m" in g.structural
    assert g.unlink_code(b, "pkg/a.py/C/m")  # last reference -> collected
    assert g.structural == {} and len(g.structural_vectors) == 0
    g.check_invariants()


def test_r_st_is_derived_child_to_parent_only_between_instantiated():
    g = DualMemoryGraph()
    a = g.insert_semantic("a", turn=1)
    g.link_code(a, "pkg/a.py/C/m")
    g.link_code(a, "pkg/a.py")  # grandparent of the method: no direct edge
    assert g.r_st() == set()
    g.link_code(a, "pkg/a.py/C")
    assert g.r_st() == {("pkg/a.py/C/m", "pkg/a.py/C"), ("pkg/a.py/C", "pkg/a.py")}
    assert g.structural_parent("pkg/a.py/C") == "pkg/a.py"
    assert g.structural_parent("pkg/a.py") is None  # "pkg" (directory) is not instantiated
    g.unlink_code(a, "pkg/a.py/C")
    assert g.r_st() == set()


def test_remove_semantic_drops_relations_and_collects_code():
    g = DualMemoryGraph()
    a = g.insert_semantic("a", turn=1)
    b = g.insert_semantic("b", turn=1)
    g.add_relation(a, b)
    g.add_relation(b, a)
    assert not g.add_relation(a, a)
    g.link_code(a, "top.py/h")
    assert g.remove_semantic(a) == ["top.py/h"]
    assert g.r_se() == set() and g.structural == {}
    g.check_invariants()


def test_check_invariants_detects_a_broken_reverse_relation():
    g = DualMemoryGraph()
    a = g.insert_semantic("a", turn=1)
    g.link_code(a, "top.py/h")
    g._dual_rev["top.py/h"].discard(a)  # corrupt on purpose
    with pytest.raises(GraphInvariantError, match="exact reverse"):
        g.check_invariants()


def test_vector_store_swap_remove_and_top_k():
    store = VectorStore(capacity=2)
    for i in range(5):
        store.upsert(f"k{i}", vec(i))
    store.remove("k1")
    store.remove("k4")
    assert sorted(store.keys()) == ["k0", "k2", "k3"]
    top = store.top_k(vec(3), 2)
    assert top[0][0] == "k3" and top[0][1] == pytest.approx(1.0, abs=1e-5)
    assert np.allclose(store.get("k2"), vec(2) / np.linalg.norm(vec(2)), atol=1e-6)
    assert store.top_k(vec(3), 2, among=["k0", "k2"])[0][0] in {"k0", "k2"}


# --- property-based: random operation sequences keep every invariant --------------------------
op = st.one_of(
    st.tuples(st.just("insert"), st.lists(st.sampled_from(PATHS), max_size=3), st.integers(0, 10**6)),
    st.tuples(st.just("modify"), st.integers(0, 50), st.lists(st.sampled_from(PATHS), max_size=2)),
    st.tuples(st.just("remove"), st.integers(0, 50)),
    st.tuples(st.just("relate"), st.integers(0, 50), st.integers(0, 50)),
    st.tuples(st.just("unlink"), st.integers(0, 50), st.sampled_from(PATHS)),
)


def expected_relations(g: DualMemoryGraph) -> tuple[set, set, set]:
    r_dual = {(s, p) for s in g.semantic for p in g.code_paths(s)}
    reverse = {(p, s) for s, p in r_dual}
    r_st = {(p, path_parent(p)) for p in g.structural if path_parent(p) in g.structural}
    return r_dual, reverse, r_st


@settings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=40))
def test_invariants_hold_after_any_update_sequence(ops):
    g = DualMemoryGraph()
    for item in ops:
        ids = sorted(g.semantic)
        kind = item[0]
        if kind == "insert":
            eid = g.insert_semantic(f"memory {item[2]}", turn=len(ids), vector=vec(item[2]))
            for p in item[1]:
                g.link_code(eid, p, vector=vec(hash(p) % 1000))
        elif ids and kind == "modify":
            eid = ids[item[1] % len(ids)]
            g.modify_semantic(eid, text=g.semantic[eid].text + " +", turn=99, vector=vec(item[1]))
            for p in item[2]:
                g.link_code(eid, p)
        elif ids and kind == "remove":
            g.remove_semantic(ids[item[1] % len(ids)])
        elif ids and kind == "relate":
            g.add_relation(ids[item[1] % len(ids)], ids[item[2] % len(ids)])
        elif ids and kind == "unlink":
            g.unlink_code(ids[item[1] % len(ids)], item[2])
        g.check_invariants()
        r_dual, reverse, r_st = expected_relations(g)
        assert g.r_dual() == r_dual
        assert g.r_dual_reverse() == reverse  # R*_dual is the exact reverse (Eq. 3)
        assert set(g.structural) == {p for _, p in r_dual}  # every structural entity is referenced
        assert g.r_st() == r_st  # Eq. 2
        assert set(g.semantic_vectors.keys()) == set(g.semantic)
    data = json.loads(json.dumps(g.to_dict(include_vectors=True)))
    back = DualMemoryGraph.from_dict(data)
    assert back.to_dict(include_vectors=True) == data
    lean = DualMemoryGraph.from_dict(json.loads(json.dumps(g.to_dict())))
    assert lean.to_dict() == g.to_dict()


def test_bench_recall_block_build_equals_the_per_insert_path():
    """scripts.bench recall builds big graphs block-wise; the graph equals inserting one by one."""
    import random

    from reconmem.memory.construct import CodeDraftDatabase, MemoryConstructor, SketchedMemory
    from benchmarks.perf.recall import _build

    rng = np.random.default_rng(3)
    n = 700
    vecs = rng.standard_normal((n, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    texts = [f"memory {i}" for i in range(n)]
    paths = [[f"pkg/mod{i % 7}.py/f{i % 13}"] for i in range(n)]

    def constructor():
        return MemoryConstructor(DualMemoryGraph(), CodeDraftDatabase(), llm=None, embedder=None, repo=None,
                                 code_vectors=None, k1=2)

    fast = constructor()
    _build(fast, n, texts, vecs, paths, 2, random.Random(0), block=64)
    slow = constructor()
    r = random.Random(0)
    for i in range(n):
        candidates = slow.update_candidates(vecs[i])
        relations = [c.id for c in candidates if r.random() < 0.5]
        slow.apply_decision(SketchedMemory(texts[i], [], paths=list(paths[i])), vecs[i],
                            {"action": "INSERT", "relations": relations}, candidates, turn=i)
    assert fast.graph.to_dict() == slow.graph.to_dict()
    assert np.array_equal(fast.graph.semantic_vectors.matrix, slow.graph.semantic_vectors.matrix)
