"""The dual memory graph of ReConMem (paper §2.1, Eq. 1-3).

``G_dual = (G_se, G_st, R_dual, R*_dual)``:

* semantic entities ``E_se``: atomic textual memories with directed relations ``R_se``;
* structural entities ``E_st``: repository code entities (full repository paths such as
  ``boltons/iterutils.py/chunked``) referenced by at least one semantic entity;
* ``R_st`` is *derived* from the paths (Eq. 2): ``(e_i, e_j)`` iff ``parent(path(e_i)) == path(e_j)``
  and both are instantiated. It is never stored; :meth:`DualMemoryGraph.r_st` computes it;
* ``R_dual`` (semantic -> structural) and ``R*_dual`` (its exact reverse, Eq. 3) are kept as two
  adjacency maps that only :meth:`link_code` / :meth:`unlink_code` change, together, so the
  reverse relation cannot drift. Unlinking the last reference of a structural entity removes it
  (dual synchronisation protocol, §2.2.3).

Vectors of semantic and structural entities live in :class:`reconmem.platform.vectors.VectorStore`
matrices that grow incrementally (amortised O(1) insert, O(1) swap-remove), so similarity search is
one matrix-vector product regardless of how the graph was built (the platform's one exact top-k).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

from reconmem.platform.vectors import VectorStore, dot_rows  # noqa: F401 - dot_rows re-exported
from reconmem.platform.vectors import top_k as top_k_scores  # noqa: F401 - older name, re-exported

GRAPH_FORMAT = 1


def path_parent(path: str) -> str | None:
    """Repository parent of an entity path: everything before the last ``/`` (None at the top)."""
    head, sep, _ = path.rpartition("/")
    return head if sep and head else None


class GraphInvariantError(AssertionError):
    """A dual-memory-graph invariant does not hold; the message names it and the offending items."""


@dataclass
class SemanticEntity:
    """One atomic textual memory. Its vector is stored in the graph's semantic VectorStore under ``id``."""

    id: str
    text: str
    created_turn: int
    updated_turn: int


@dataclass
class StructuralEntity:
    """One repository code entity instantiated in the structural memory graph."""

    path: str
    kind: str | None
    created_turn: int


class DualMemoryGraph:
    """Semantic graph + structural graph + dual relations, kept consistent by construction."""

    def __init__(self, *, parent_of: Callable[[str], str | None] = path_parent, id_prefix: str = "m") -> None:
        self.parent_of = parent_of
        self.id_prefix = id_prefix
        self.semantic: dict[str, SemanticEntity] = {}
        self.structural: dict[str, StructuralEntity] = {}
        self._r_se_out: dict[str, set[str]] = {}
        self._r_se_in: dict[str, set[str]] = {}
        self._dual: dict[str, set[str]] = {}  # R_dual: semantic id -> structural paths
        self._dual_rev: dict[str, set[str]] = {}  # R*_dual: structural path -> semantic ids
        self.semantic_vectors = VectorStore()
        self.structural_vectors = VectorStore()
        self._next_id = 1

    # ------------------------------------------------------------------ semantic entities
    def new_id(self) -> str:
        eid = f"{self.id_prefix}{self._next_id}"
        self._next_id += 1
        return eid

    def insert_semantic(self, text: str, *, turn: int, vector: np.ndarray | None = None) -> str:
        """Create a semantic entity (no relations, no code yet) and return its id."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("insert_semantic: text must be a non-empty string")
        eid = self.new_id()
        self.semantic[eid] = SemanticEntity(eid, text.strip(), turn, turn)
        self._r_se_out[eid] = set()
        self._r_se_in[eid] = set()
        self._dual[eid] = set()
        if vector is not None:
            self.semantic_vectors.upsert(eid, vector)
        return eid

    def modify_semantic(self, eid: str, *, text: str, turn: int, vector: np.ndarray | None = None) -> None:
        """Replace the text (and vector) of an existing semantic entity."""
        entity = self._require(eid)
        if not isinstance(text, str) or not text.strip():
            raise ValueError("modify_semantic: text must be a non-empty string")
        entity.text = text.strip()
        entity.updated_turn = turn
        if vector is not None:
            self.semantic_vectors.upsert(eid, vector)

    def remove_semantic(self, eid: str) -> list[str]:
        """Delete a semantic entity with its R_se edges and code associations (dual sync + GC).

        Returns the structural paths that were garbage-collected.
        """
        self._require(eid)
        collected: list[str] = []
        for path in sorted(self._dual[eid]):
            if self.unlink_code(eid, path):
                collected.append(path)
        for dst in self._r_se_out.pop(eid):
            self._r_se_in[dst].discard(eid)
        for src in self._r_se_in.pop(eid):
            self._r_se_out[src].discard(eid)
        del self._dual[eid]
        del self.semantic[eid]
        self.semantic_vectors.remove(eid)
        return collected

    def add_relation(self, src: str, dst: str) -> bool:
        """Add the directed semantic relation ``(src, dst)`` to R_se. False if a self-loop or present."""
        self._require(src)
        self._require(dst)
        if src == dst or dst in self._r_se_out[src]:
            return False
        self._r_se_out[src].add(dst)
        self._r_se_in[dst].add(src)
        return True

    def remove_relation(self, src: str, dst: str) -> bool:
        if dst not in self._r_se_out.get(src, ()):
            return False
        self._r_se_out[src].discard(dst)
        self._r_se_in[dst].discard(src)
        return True

    # ------------------------------------------------------------------ dual synchronisation
    def link_code(
        self, eid: str, path: str, *, kind: str | None = None, vector: np.ndarray | None = None, turn: int = 0
    ) -> bool:
        """Associate semantic ``eid`` with code entity ``path``: instantiate it if absent, add both dual edges.

        Returns True if the association is new.
        """
        self._require(eid)
        if not isinstance(path, str) or not path:
            raise ValueError("link_code: path must be a non-empty string")
        if path not in self.structural:
            self.structural[path] = StructuralEntity(path, kind, turn)
            self._dual_rev[path] = set()
            if vector is not None:
                self.structural_vectors.upsert(path, vector)
        if path in self._dual[eid]:
            return False
        self._dual[eid].add(path)
        self._dual_rev[path].add(eid)
        return True

    def unlink_code(self, eid: str, path: str) -> bool:
        """Remove both dual edges; garbage-collect the structural entity if now unreferenced.

        Returns True if the structural entity was removed.
        """
        if path not in self._dual.get(eid, ()):
            return False
        self._dual[eid].discard(path)
        refs = self._dual_rev[path]
        refs.discard(eid)
        if refs:
            return False
        del self._dual_rev[path]
        del self.structural[path]
        self.structural_vectors.remove(path)
        return True

    # ------------------------------------------------------------------ queries
    def semantic_successors(self, eid: str) -> set[str]:
        """``{e | (eid, e) in R_se}``."""
        return set(self._r_se_out.get(eid, ()))

    def semantic_predecessors(self, eid: str) -> set[str]:
        return set(self._r_se_in.get(eid, ()))

    def structural_parent(self, path: str) -> str | None:
        """``e`` with ``(path, e) in R_st``: the parent path if instantiated, else None (Eq. 2)."""
        if path not in self.structural:
            return None
        parent = self.parent_of(path)
        return parent if parent is not None and parent in self.structural else None

    def code_paths(self, eid: str) -> list[str]:
        """Paths linked to semantic ``eid`` by R_dual, sorted."""
        return sorted(self._dual.get(eid, ()))

    def referencing(self, path: str) -> list[str]:
        """Semantic ids linked to ``path`` by R*_dual, sorted."""
        return sorted(self._dual_rev.get(path, ()))

    def r_se(self) -> set[tuple[str, str]]:
        return {(s, d) for s, ds in self._r_se_out.items() for d in ds}

    def r_st(self) -> set[tuple[str, str]]:
        """R_st derived from paths (Eq. 2): child -> parent, both instantiated."""
        pairs = set()
        for path in self.structural:
            parent = self.structural_parent(path)
            if parent is not None:
                pairs.add((path, parent))
        return pairs

    def r_dual(self) -> set[tuple[str, str]]:
        return {(s, p) for s, ps in self._dual.items() for p in ps}

    def r_dual_reverse(self) -> set[tuple[str, str]]:
        return {(p, s) for p, ss in self._dual_rev.items() for s in ss}

    def __len__(self) -> int:
        return len(self.semantic)

    # ------------------------------------------------------------------ invariants
    def check_invariants(self) -> None:
        """Raise :class:`GraphInvariantError` naming the first violated invariant."""
        sem = set(self.semantic)
        st = set(self.structural)

        def fail(msg: str) -> None:
            raise GraphInvariantError(f"DualMemoryGraph invariant violated: {msg}")

        if set(self._r_se_out) != sem or set(self._r_se_in) != sem or set(self._dual) != sem:
            fail("adjacency maps are not keyed by exactly the semantic entities")
        for s, ds in self._r_se_out.items():
            if s in ds:
                fail(f"self-loop in R_se at {s}")
            for d in ds:
                if d not in sem:
                    fail(f"R_se edge ({s}, {d}) ends outside E_se")
                if s not in self._r_se_in[d]:
                    fail(f"R_se edge ({s}, {d}) missing from the reverse index")
        if {(d, s) for d, ss in self._r_se_in.items() for s in ss} != {(d, s) for s, d in self.r_se()}:
            fail("R_se reverse index differs from R_se")
        r_dual = self.r_dual()
        reverse = self.r_dual_reverse()
        if {(s, p) for p, s in reverse} != r_dual:
            fail(f"R*_dual is not the exact reverse of R_dual: {sorted(r_dual ^ {(s, p) for p, s in reverse})[:5]}")
        referenced = {p for _, p in r_dual}
        if referenced != st:
            fail(
                f"structural entities != referenced paths; unreferenced={sorted(st - referenced)[:5]} "
                f"uninstantiated={sorted(referenced - st)[:5]}"
            )
        if set(self._dual_rev) != st:
            fail("R*_dual is not keyed by exactly the structural entities")
        derived = {(p, self.parent_of(p)) for p in st if self.parent_of(p) in st}
        if self.r_st() != derived:
            fail("R_st differs from the relation derived from paths")
        if not set(self.semantic_vectors.keys()) <= sem:
            fail("semantic vectors for entities that do not exist")
        if not set(self.structural_vectors.keys()) <= st:
            fail("structural vectors for entities that do not exist")
        for eid, entity in self.semantic.items():
            if entity.id != eid:
                fail(f"semantic entity keyed {eid} has id {entity.id}")

    # ------------------------------------------------------------------ serialisation
    def to_dict(self, *, include_vectors: bool = False) -> dict[str, Any]:
        """JSON-serialisable snapshot (sorted, deterministic). R_st is listed for readers but is derived."""
        data: dict[str, Any] = {
            "format": GRAPH_FORMAT,
            "next_id": self._next_id,
            "semantic": [asdict(self.semantic[k]) for k in sorted(self.semantic, key=_id_order)],
            "structural": [asdict(self.structural[k]) for k in sorted(self.structural)],
            "r_se": sorted(self.r_se(), key=lambda e: (_id_order(e[0]), _id_order(e[1]))),
            "r_dual": sorted(self.r_dual(), key=lambda e: (_id_order(e[0]), e[1])),
            "r_st_derived": sorted(self.r_st()),
        }
        data["r_se"] = [list(e) for e in data["r_se"]]
        data["r_dual"] = [list(e) for e in data["r_dual"]]
        data["r_st_derived"] = [list(e) for e in data["r_st_derived"]]
        if include_vectors:
            data["vectors"] = {
                "semantic": {k: self.semantic_vectors.get(k).tolist() for k in sorted(self.semantic_vectors.keys())},
                "structural": {k: self.structural_vectors.get(k).tolist() for k in sorted(self.structural_vectors.keys())},
            }
        return data

    @classmethod
    def from_dict(
        cls,
        data: dict[str, Any],
        *,
        parent_of: Callable[[str], str | None] = path_parent,
        embed_texts: Callable[[list[str]], np.ndarray] | None = None,
        code_vector: Callable[[str], np.ndarray | None] | None = None,
    ) -> "DualMemoryGraph":
        """Rebuild a graph from :meth:`to_dict`. Vectors come from the dict, else from the callables."""
        if not isinstance(data, dict) or data.get("format") != GRAPH_FORMAT:
            raise ValueError(f"DualMemoryGraph.from_dict: expected a dict with format={GRAPH_FORMAT}")
        graph = cls(parent_of=parent_of)
        for item in data.get("semantic", []):
            e = SemanticEntity(**item)
            graph.semantic[e.id] = e
            graph._r_se_out[e.id] = set()
            graph._r_se_in[e.id] = set()
            graph._dual[e.id] = set()
        kinds = {}
        for item in data.get("structural", []):
            kinds[item["path"]] = StructuralEntity(**item)
        for src, dst in data.get("r_se", []):
            graph.add_relation(src, dst)
        for eid, path in data.get("r_dual", []):
            if eid not in graph.semantic:
                raise ValueError(f"DualMemoryGraph.from_dict: r_dual names unknown semantic id {eid!r}")
            st = kinds.get(path)
            graph.link_code(eid, path, kind=st.kind if st else None, turn=st.created_turn if st else 0)
        graph._next_id = int(data.get("next_id", len(graph.semantic) + 1))
        vectors = data.get("vectors") or {}
        if vectors:
            for k, v in vectors.get("semantic", {}).items():
                graph.semantic_vectors.upsert(k, np.asarray(v, dtype=np.float32))
            for k, v in vectors.get("structural", {}).items():
                graph.structural_vectors.upsert(k, np.asarray(v, dtype=np.float32))
        else:
            if embed_texts is not None and graph.semantic:
                ids = list(graph.semantic)
                mat = embed_texts([graph.semantic[i].text for i in ids])
                for i, vec in zip(ids, mat):
                    graph.semantic_vectors.upsert(i, vec)
            if code_vector is not None:
                for path in graph.structural:
                    vec = code_vector(path)
                    if vec is not None:
                        graph.structural_vectors.upsert(path, vec)
        graph.check_invariants()
        return graph

    # ------------------------------------------------------------------ helpers
    def _require(self, eid: str) -> SemanticEntity:
        entity = self.semantic.get(eid)
        if entity is None:
            raise KeyError(f"no semantic entity {eid!r}")
        return entity


def _id_order(eid: str) -> tuple[int, str]:
    """Sort ids like m2 < m10."""
    digits = "".join(ch for ch in eid if ch.isdigit())
    return (int(digits) if digits else -1, eid)
