"""ReConMem non-LLM recall / update latency versus memory size.

``python -m scripts.bench recall [--memories 100 1000 10000 100000] [--repo DIR]``

For each N a fresh dual memory graph of N synthetic memories is built over the real repository
index (default: boltons 23.1.1 from PyPI), each memory linked to 1-3 real code entities and to up
to 2 similar earlier memories. Texts (memories, queries, code drafts) are embedded *before* timing,
so the numbers cover only the method's own work. The first ``--embed-pool`` memory texts are
embedded with the real embedder; memory ``i`` beyond the pool gets the vector of pool text
``i % pool`` plus small Gaussian noise (renormalised) -- embedding 100k texts on 2 cores would
take an hour and is not what is measured. The graph is built with the real insert path
(``apply_decision``); its top-k1 candidates are found block-wise with one matrix-matrix product
per block of inserts (each memory sees only earlier ones, as online), so a 100k graph builds in
minutes; the *timed* updates below use the real per-insert ``update_candidates`` path.

* **update** = top-k1 candidate retrieval + applying one decision (INSERT 60 %, MODIFY 30 %,
  REMOVE 10 %) with dual synchronisation (instantiate / link / unlink / GC), vector-matrix updates
  and semantic relations. Excluded: the two LLM calls and embedding the new text.
* **recall** = code-draft grounding, initial retrieval (k2 semantic, k31 repository-wide, k32
  structural graph), Eq. 8/9 expansion, merge, HCC compression of every code item and prompt
  assembly. Excluded: embedding the query and the response LLM call.

Prints p50 / p95 per N, the same-size **numpy floor** (a bare ``matrix @ query`` over an N x 384
float32 matrix + ``argpartition`` top-k, timed in the same run, alternating with the recalls in
blocks of 20 queries) and
the ratio of recall / update p95 to it, then the ratio between the largest and the smallest N.
"""

from __future__ import annotations

import random
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

TEMPLATES = [
    "The user wants {name} in {file} to accept an optional timeout argument (note {i}).",
    "Decision {i}: keep {name} backwards compatible and document its return value.",
    "Requirement {i}: {name} must not mutate its input and should raise ValueError on bad sizes.",
    "Observation {i}: {name} is called from the request handler for every batch of records.",
    "Convention {i}: helpers next to {name} in {file} use snake_case and short docstrings.",
    "The team plans to extend {name} with logging of slow calls (item {i}).",
]
QUERY_TEMPLATES = [
    "How should I change {name} so it handles empty inputs?",
    "Can you write a helper that wraps {name} with caching?",
    "What did we decide about {name} earlier?",
    "Refactor the code around {name} in {file} to be faster.",
]


FLOOR_BLOCK = 20  # queries per alternating floor / recall block
BLAS_SPIN_PAUSE_S = 0.25  # > OpenBLAS's idle-spin time, so its threads are asleep when recalls start


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def _entity_name(path: str) -> tuple[str, str]:
    parts = path.split("/")
    file = next((p for p in parts if "." in p), parts[0])
    return parts[-1], file


def default_repo() -> Path:
    from reconmem.platform.downloads import fetch_pypi_source

    sha = "d2cb2fa83cf2ebe791be1e284183e8a43a1031355156a968f8e0a333ad2448fc"
    return fetch_pypi_source("boltons", "23.1.1", sha256=sha) / "boltons-23.1.1"


def _floor_ms(matrix: np.ndarray, q: np.ndarray, k: int) -> tuple[float, float]:
    """Milliseconds of a bare numpy mat-vec + argpartition top-k: (``matrix @ q`` BLAS, single-threaded einsum)."""
    out = []
    for scores_of in (lambda: matrix @ q, lambda: np.einsum("ij,j->i", matrix, q)):
        start = time.perf_counter()
        scores = scores_of()
        np.argpartition(-scores, k - 1)[:k]
        out.append((time.perf_counter() - start) * 1e3)
    return out[0], out[1]


def _pool_vectors(pool: np.ndarray, total: int, seed: int) -> np.ndarray:
    """``total`` unit vectors: the pool, then noisy copies of pool rows (see the module docstring)."""
    rng = np.random.default_rng(seed)
    out = np.empty((total, pool.shape[1]), dtype=np.float32)
    n = min(total, len(pool))
    out[:n] = pool[:n]
    for start in range(n, total, 8192):
        stop = min(total, start + 8192)
        rows = pool[np.arange(start, stop) % len(pool)] + rng.normal(0, 0.02, (stop - start, pool.shape[1])).astype(np.float32)
        out[start:stop] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return out


def _build(constructor: Any, n: int, texts: list[str], vecs: np.ndarray, mem_paths: list[list[str]], k1: int,
           rng: random.Random, block: int = 256) -> None:
    """Insert memories 0..n-1 through ``apply_decision``; candidates by block-wise GEMM (earlier memories only)."""
    from reconmem.memory.construct import SketchedMemory, UpdateCandidate
    from reconmem.platform.vectors import top_k

    graph = constructor.graph
    graph.semantic_vectors.reserve(n)
    ids: list[str] = []
    for start in range(0, n, block):
        stop = min(n, start + block)
        scores = vecs[start:stop] @ vecs[:stop].T  # row j: similarities of memory start+j to memories 0..stop-1
        for j, i in enumerate(range(start, stop)):
            hits = top_k(scores[j, :i], k1) if i else []
            candidates = [UpdateCandidate(ids[r], graph.semantic[ids[r]].text, graph.code_paths(ids[r]), round(sc, 4))
                          for r, sc in hits]
            relations = [c.id for c in candidates if rng.random() < 0.5]
            report = constructor.apply_decision(SketchedMemory(texts[i], [], paths=list(mem_paths[i])), vecs[i],
                                                {"action": "INSERT", "relations": relations}, candidates, turn=i)
            ids.append(report["id"])


def run(sizes: list[int], *, repo_root: Path, n_queries: int, n_updates: int, k: dict[str, int], seed: int,
        embed_pool: int = 2000) -> dict[str, Any]:
    """Build graphs of each size and time update / recall against the numpy floor. Returns the measurements."""
    from reconmem.platform.code import RepositoryIndex
    from reconmem.memory.construct import CodeDraftDatabase, MemoryConstructor, SketchedMemory
    from reconmem.platform.embed import Embedder
    from reconmem.memory.graph import DualMemoryGraph
    from reconmem.memory.recall import JointRecall, RecallConfig, RepositoryVectors

    rng = random.Random(seed)
    index = RepositoryIndex.build(repo_root)
    embedder = Embedder()
    code_vectors = RepositoryVectors(index, embedder)
    t = time.perf_counter()
    entity_paths = [p for p in code_vectors.paths if index.get(p).kind in ("function", "type", "variable")]
    print(f"repository {repo_root.name}: {len(code_vectors.paths)} code entities "
          f"(vectors ready in {time.perf_counter() - t:.1f}s)")

    total = max(sizes) + n_updates
    mem_paths = [rng.sample(entity_paths, rng.randint(1, 3)) for _ in range(total)]
    texts = []
    for i in range(total):
        name, file = _entity_name(mem_paths[i][0])
        texts.append(rng.choice(TEMPLATES).format(name=name, file=file, i=i))
    queries = []
    for i in range(n_queries):
        name, file = _entity_name(rng.choice(entity_paths))
        queries.append(rng.choice(QUERY_TEMPLATES).format(name=name, file=file))
    function_paths = [p for p in entity_paths if index.get(p).kind == "function"]
    draft_codes = [index.source(p)[:800] for p in rng.sample(function_paths, 50)]
    t = time.perf_counter()
    pool = min(total, max(1, embed_pool))
    text_vecs = _pool_vectors(embedder.encode(texts[:pool]), total, seed)
    query_vecs = embedder.encode(queries)
    draft_vecs = embedder.encode(draft_codes)
    print(f"embedded {pool} memory texts (+{total - pool} noisy copies), {len(queries)} queries, {len(draft_codes)} "
          f"drafts in {time.perf_counter() - t:.1f}s (excluded from timings)")

    results = []
    for n in sizes:
        graph = DualMemoryGraph()
        drafts = CodeDraftDatabase()
        for code, vec in zip(draft_codes, draft_vecs):
            drafts.add(code, vec, turn=0, language="python")
        constructor = MemoryConstructor(graph, drafts, llm=None, embedder=embedder, repo=index,
                                        code_vectors=code_vectors, k1=k["k1"])
        t = time.perf_counter()
        _build(constructor, n, texts, text_vecs, mem_paths, k["k1"], rng)
        build_s = time.perf_counter() - t

        recaller = JointRecall(graph, drafts, repo=index, code_vectors=code_vectors,
                               config=RecallConfig(k2=k["k2"], k31=k["k31"], k32=k["k32"]))
        floor_matrix = np.ascontiguousarray(graph.semantic_vectors.matrix.copy())
        recall_ms, items, grounded, retrieve_ms, render_ms, blas_ms, einsum_ms = [], [], 0, [], [], [], []
        size_at_recall = (len(graph.semantic), len(graph.structural), len(graph.r_se()))
        for _ in range(2):  # warm-up (first compression of a file builds lazy structures)
            recaller.recall(queries[0], query_vecs[0], system_prompt="bench")
        pairs = list(zip(queries, query_vecs))
        for block in range(0, len(pairs), FLOOR_BLOCK):
            # Floor and recall alternate in blocks (not call by call): a multi-threaded BLAS leaves its
            # threads spinning for ~0.1 s after a call, which would steal the second core from the
            # recall's two-half mat-vec that follows it. A pause separates the two.
            for q, qv in pairs[block:block + FLOOR_BLOCK]:
                blas, single = _floor_ms(floor_matrix, qv, k["k2"])
                blas_ms.append(blas)
                einsum_ms.append(single)
            time.sleep(BLAS_SPIN_PAUSE_S)
            for q, qv in pairs[block:block + FLOOR_BLOCK]:
                start = time.perf_counter()
                ctx = recaller.recall(q, qv, system_prompt="You are a helpful coding assistant.")
                recall_ms.append((time.perf_counter() - start) * 1e3)
                items.append(len(ctx.items))
                retrieve_ms.append(ctx.meta["timing_ms"]["retrieve"])
                render_ms.append(ctx.meta["timing_ms"]["compress"])
                grounded += bool(ctx.meta["grounding"]["used"])
        update_ms = []
        for j in range(n_updates):
            i = max(sizes) + j
            memory = SketchedMemory(texts[i], [], paths=list(mem_paths[i]))
            vec = text_vecs[i]
            roll = rng.random()
            start = time.perf_counter()
            candidates = constructor.update_candidates(vec)
            if roll < 0.6 or not candidates:
                choice = {"action": "INSERT", "relations": [c.id for c in candidates[:1]]}
            elif roll < 0.9:
                choice = {"action": "MODIFY", "target": candidates[0].id, "text": candidates[0].text + " (updated)",
                          "relations": []}
            else:
                choice = {"action": "REMOVE", "target": candidates[0].id, "relations": []}
            constructor.apply_decision(memory, vec, choice, candidates, turn=n + j, embed_text=lambda _s, v=vec: v)
            update_ms.append((time.perf_counter() - start) * 1e3)
        graph.check_invariants()

        row = {
            "memories": n,
            "semantic": size_at_recall[0],
            "structural": size_at_recall[1],
            "r_se": size_at_recall[2],
            "build_s": build_s,
            "update_p50": _percentile(update_ms, 50),
            "update_p95": _percentile(update_ms, 95),
            "recall_p50": _percentile(recall_ms, 50),
            "recall_p95": _percentile(recall_ms, 95),
            "floor_blas_p50": _percentile(blas_ms, 50),
            "floor_blas_p95": _percentile(blas_ms, 95),
            "floor_einsum_p50": _percentile(einsum_ms, 50),
            "floor_einsum_p95": _percentile(einsum_ms, 95),
            "items_mean": statistics.mean(items),
            "retrieve_p50": _percentile(retrieve_ms, 50),
            "compress_p50": _percentile(render_ms, 50),
            "grounded": grounded,
        }
        results.append(row)
        print(f"N={n:>6}  semantic={row['semantic']:>6} structural={row['structural']:>5} R_se={row['r_se']:>6}  "
              f"build {build_s:6.2f}s  update p50 {row['update_p50']:.3f} ms p95 {row['update_p95']:.3f} ms  "
              f"recall p50 {row['recall_p50']:.3f} ms p95 {row['recall_p95']:.3f} ms  "
              f"(retrieve+expand p50 {row['retrieve_p50']:.3f} ms, HCC+items p50 {row['compress_p50']:.3f} ms)  "
              f"items/recall {row['items_mean']:.1f}  grounded {grounded}/{len(queries)}", flush=True)
        row["floor_p50"] = min(row["floor_blas_p50"], row["floor_einsum_p50"])  # the faster numpy floor
        row["floor_p95"] = min(row["floor_blas_p95"], row["floor_einsum_p95"])
        print(f"        numpy floor ({n} x {floor_matrix.shape[1]} float32 mat-vec + argpartition top-{k['k2']}): "
              f"BLAS matrix @ q p50 {row['floor_blas_p50']:.3f} ms p95 {row['floor_blas_p95']:.3f} ms, "
              f"single-thread einsum p50 {row['floor_einsum_p50']:.3f} ms p95 {row['floor_einsum_p95']:.3f} ms -> "
              f"recall / faster floor: p50 {row['recall_p50'] / row['floor_p50']:.2f}x, p95 "
              f"{row['recall_p95'] / row['floor_p95']:.2f}x; update / floor: p50 {row['update_p50'] / row['floor_p50']:.2f}x, "
              f"p95 {row['update_p95'] / row['floor_p95']:.2f}x", flush=True)
    return {"rows": results}
