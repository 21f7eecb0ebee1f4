"""ReConMem non-LLM recall / update latency versus memory size.

``python -m scripts.bench recall [--memories 100 1000 10000] [--repo DIR]``

For each N a fresh dual memory graph of N synthetic memories is built over the real repository
index (default: boltons 23.1.1 from PyPI), each memory linked to 1-3 real code entities and to up
to 2 similar earlier memories. All texts (memories, queries, code drafts) are embedded in one batch
*before* timing, so the numbers cover only the method's own work:

* **update** = top-k1 candidate retrieval + applying one decision (INSERT 60 %, MODIFY 30 %,
  REMOVE 10 %) with dual synchronisation (instantiate / link / unlink / GC), vector-matrix updates
  and semantic relations. Excluded: the two LLM calls and embedding the new text.
* **recall** = code-draft grounding, initial retrieval (k2 semantic, k31 repository-wide, k32
  structural graph), Eq. 8/9 expansion, merge, HCC compression of every code item and prompt
  assembly. Excluded: embedding the query and the response LLM call.

Prints p50 / p95 per N and the ratio between the largest and the smallest N.
"""

from __future__ import annotations

import argparse
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


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def _entity_name(path: str) -> tuple[str, str]:
    parts = path.split("/")
    file = next((p for p in parts if "." in p), parts[0])
    return parts[-1], file


def _default_repo() -> Path:
    from reconmem.platform.downloads import fetch_pypi_source

    sha = "d2cb2fa83cf2ebe791be1e284183e8a43a1031355156a968f8e0a333ad2448fc"
    return fetch_pypi_source("boltons", "23.1.1", sha256=sha) / "boltons-23.1.1"


def run(sizes: list[int], *, repo_root: Path, n_queries: int, n_updates: int, k: dict[str, int], seed: int) -> dict[str, Any]:
    """Build graphs of each size and time update / recall. Returns the measurements."""
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
    text_vecs = embedder.encode(texts)
    query_vecs = embedder.encode(queries)
    draft_vecs = embedder.encode(draft_codes)
    print(f"embedded {len(texts)} memories, {len(queries)} queries, {len(draft_codes)} drafts in "
          f"{time.perf_counter() - t:.1f}s (excluded from timings)")

    results = []
    for n in sizes:
        graph = DualMemoryGraph()
        drafts = CodeDraftDatabase()
        for code, vec in zip(draft_codes, draft_vecs):
            drafts.add(code, vec, turn=0, language="python")
        constructor = MemoryConstructor(graph, drafts, llm=None, embedder=embedder, repo=index,
                                        code_vectors=code_vectors, k1=k["k1"])
        t = time.perf_counter()
        for i in range(n):
            memory = SketchedMemory(texts[i], [], paths=list(mem_paths[i]))
            candidates = constructor.update_candidates(text_vecs[i])
            relations = [c.id for c in candidates if rng.random() < 0.5]
            constructor.apply_decision(memory, text_vecs[i], {"action": "INSERT", "relations": relations},
                                       candidates, turn=i)
        build_s = time.perf_counter() - t

        recaller = JointRecall(graph, drafts, repo=index, code_vectors=code_vectors,
                               config=RecallConfig(k2=k["k2"], k31=k["k31"], k32=k["k32"]))
        recall_ms, items, grounded, retrieve_ms, render_ms = [], [], 0, [], []
        size_at_recall = (len(graph.semantic), len(graph.structural), len(graph.r_se()))
        for _ in range(2):  # warm-up (first compression of a file builds lazy structures)
            recaller.recall(queries[0], query_vecs[0], system_prompt="bench")
        for q, qv in zip(queries, query_vecs):
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
    return {"rows": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench recall", description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, nargs="+", default=[100, 1000, 10000], help="graph sizes N")
    parser.add_argument("--repo", type=Path, default=None, help="repository root (default: boltons 23.1.1 sdist)")
    parser.add_argument("--queries", type=int, default=200, help="timed recalls per N")
    parser.add_argument("--updates", type=int, default=200, help="timed updates per N")
    parser.add_argument("--k1", type=int, default=2)
    parser.add_argument("--k2", type=int, default=4)
    parser.add_argument("--k31", type=int, default=2)
    parser.add_argument("--k32", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sizes = sorted(set(args.memories))
    if any(n < 1 for n in sizes):
        parser.error("--memories: sizes must be >= 1")
    repo_root = args.repo or _default_repo()
    if not repo_root.is_dir():
        parser.error(f"--repo: not a directory: {repo_root}")
    k = {"k1": args.k1, "k2": args.k2, "k31": args.k31, "k32": args.k32}
    print(f"ReConMem non-LLM latency (k={k}); timings exclude LLM calls and embedding-model time")
    out = run(sizes, repo_root=repo_root, n_queries=args.queries, n_updates=args.updates, k=k, seed=args.seed)
    rows = out["rows"]
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        ratio = large["memories"] / small["memories"]
        print(f"ratio N={large['memories']} / N={small['memories']} (x{ratio:g} memories): "
              f"recall p50 x{large['recall_p50'] / small['recall_p50']:.2f}, "
              f"p95 x{large['recall_p95'] / small['recall_p95']:.2f}; "
              f"update p50 x{large['update_p50'] / small['update_p50']:.2f}, "
              f"p95 x{large['update_p95'] / small['update_p95']:.2f}")
    target = rows[-1]["recall_p95"]
    print(f"target recall p95 < 50 ms at N={rows[-1]['memories']}: {'met' if target < 50 else 'NOT met'} ({target:.2f} ms)")
    return 0
