"""``python -m scripts.bench index --repo PATH [--embed]``: repository index + embedding seconds by phase.

Line 1 (``index``): files, entities and seconds of a cold build (snapshot cache off) split into
walk+read+hash and tree-sitter parse+extract, then files/s and entities/s.
Line 2 (``index cached``): the same build from the per-snapshot index cache (what a second sample,
or another process, over the same repository pays).
With ``--embed`` (kinds default: every non-directory kind, what ReConMem embeds): the embedder
backends (``--backends``, default torch,onnx,onnx-int8) on the same entity texts in one run,
interleaved (:mod:`benchmarks.perf.backends`): texts/s, the ratio to torch, min / mean cosine to the
torch vectors and the top-10 overlap of repository search for ``--queries`` (200) queries, each
against its goal; ``--sample N`` compares on N texts (large repositories). Then ``embed work``
(word pieces, GFLOP, GFLOP/s per backend beside the machine's torch fp32 matmul peak), a cold
index + embed of every entity with the fastest backend that agrees with torch (``--full-backend``
to choose, ``--no-full`` to skip), and ``embed cached``: a fresh index + ``entity_vectors`` over
the same snapshot from the caches. Every wall time has the load average beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any


def _matmul_gflops(seconds: float = 2.0) -> float:
    """Best-of fp32 GFLOP/s of torch matmuls shaped like MiniLM's feed-forward layer (tokens x 384 @ 384 x 1536)."""
    import torch

    a, b = torch.randn(4096, 384), torch.randn(384, 1536)
    flop = 2 * a.shape[0] * a.shape[1] * b.shape[1]
    best = 0.0
    deadline = time.perf_counter() + seconds
    with torch.inference_mode():
        torch.matmul(a, b)  # warm-up
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            torch.matmul(a, b)
            best = max(best, flop / (time.perf_counter() - start) / 1e9)
    return best


def load_average() -> str:
    """The machine's load averages (1, 5, 15 min) and core count, printed beside wall times."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def embed_backends(args: argparse.Namespace, index: Any, repo: Path, index_s: float, tmp: Path,
                    opts: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The ``--embed`` part: every backend on the same texts (interleaved), the table, then a cold
    index + embed of every entity with the fastest backend that agrees with torch."""
    import numpy as np

    from reconmem.platform.code import RepositoryIndex
    from reconmem.platform.code.search import entity_text
    from reconmem.platform.embed import Embedder, load_model, token_length_groups
    from benchmarks.perf import backends as bb

    kinds = tuple(k for k in args.kinds.split(",") if k)
    backends = [b for b in args.backends.split(",") if b]
    if bb.REFERENCE not in backends:
        backends.insert(0, bb.REFERENCE)
    batch = {"batch_size": args.batch_size} if args.batch_size else {}
    started = time.perf_counter()
    paths = [p for p, e in index.entities.items() if e.kind in kinds]
    texts = list(dict.fromkeys(entity_text(index, p) for p in paths))
    text_s = time.perf_counter() - started
    all_texts = len(texts)
    if args.sample and args.sample < len(texts):
        picked = np.random.default_rng(args.seed).choice(len(texts), size=args.sample, replace=False)
        texts = [texts[i] for i in sorted(picked.tolist())]
    embedders = {b: Embedder(cache_dir=False, lru_size=0, **bb.embedder_options(b), **batch) for b in backends}
    prepare = {}
    for name, embedder in embedders.items():
        started = time.perf_counter()
        embedder.prepare()  # model load; for ONNX also the export (once per machine, cached)
        prepare[name] = time.perf_counter() - started
    model = load_model()
    rounds = bb.rounds_of_groups(token_length_groups(model, texts), args.round_texts)
    print(f"embed {repo.name}: {len(texts)} distinct entity texts of {len(paths)} entities (kinds {','.join(kinds)}; "
          f"texts built in {text_s:.2f} s), {len(rounds)} rounds, backends {','.join(backends)} interleaved; {load_average()}",
          flush=True)
    runs = bb.run_interleaved({b: e.encode for b, e in embedders.items()}, texts, rounds, Embedder.dim)
    for name, run in runs.items():
        run.prepare_seconds = prepare[name]
    queries = bb.search_queries(index, args.queries, args.seed)
    query_vectors = {b: e.encode(queries) for b, e in embedders.items()}
    rows = bb.summarise(runs, query_vectors)
    print(bb.format_rows(rows, len(queries)))
    print(f"extrapolated cold index + embed of all {all_texts} entity texts of {repo.name} at each measured rate:")
    print(bb.extrapolate(rows, all_texts, index_s))
    cap = int(getattr(model, "max_seq_length", 256) or 256)
    lengths = [len(ids) for ids in model.tokenizer(texts, add_special_tokens=True)["input_ids"]]
    pieces = sum(min(cap, n) for n in lengths)
    dense = sum(p.numel() for name, p in model.named_parameters() if "embeddings" not in name)
    gflop = 2 * dense * pieces / 1e9  # matmul FLOPs of the dense layers (attention scores excluded)
    peak = _matmul_gflops()
    def row_gflop(row: dict[str, Any]) -> float:  # a token-capped row computes fewer word pieces
        row_cap = bb.embedder_options(row["backend"])["max_tokens"] or cap
        return 2 * dense * sum(min(row_cap, n) for n in lengths) / 1e9

    achieved = ", ".join(f"{r['backend']} {row_gflop(r) / max(r['seconds'], 1e-9):.1f}" for r in rows)
    print(f"embed work {repo.name}: {pieces} word pieces (cap {cap}, mean {pieces / max(len(texts), 1):.0f}/text) x "
          f"{dense / 1e6:.1f}M dense parameters = {gflop:,.0f} GFLOP; GFLOP/s achieved: {achieved}; "
          f"torch fp32 matmul peak here (MiniLM FFN shape) {peak:.1f} GFLOP/s")
    full: dict[str, Any] = {}
    if not args.no_full:
        chosen = args.full_backend or bb.fastest_agreeing(rows)
        started = time.perf_counter()
        cold = RepositoryIndex.build(repo, cache_dir=False, **opts)
        cold_index_s = time.perf_counter() - started
        embedder = Embedder(cache_dir=tmp / f"embeddings-{chosen}", **bb.embedder_options(chosen), **batch)
        embedder.prepare()
        started = time.perf_counter()
        paths_full, matrix = cold.entity_vectors(embedder, kinds=kinds)
        embed_s = time.perf_counter() - started
        full = {"backend": chosen, "entities": len(paths_full), "index_s": cold_index_s, "embed_s": embed_s}
        print(f"index+embed {repo.name} cold with {chosen}: files={len(cold.files())} entities={len(paths_full)} "
              f"index {cold_index_s:.1f} s + embed {embed_s:.1f} s ({embedder.stats['computed']} texts, "
              f"{embedder.stats['computed'] / max(embed_s, 1e-9):.1f} texts/s) = {cold_index_s + embed_s:.1f} s "
              f"(model load / export before it: {prepare[chosen]:.1f} s); {load_average()}")
        started = time.perf_counter()
        second = RepositoryIndex.build(repo, cache_dir=tmp / "index", **opts)
        fresh = Embedder(cache_dir=tmp / f"embeddings-{chosen}", **bb.embedder_options(chosen), **batch)
        _, matrix2 = second.entity_vectors(fresh, kinds=kinds)
        print(f"embed cached {repo.name} (second sample, same snapshot, new process state): index+vectors "
              f"{time.perf_counter() - started:.3f} s, texts computed {fresh.stats['computed']}, vectors {matrix2.shape}")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"repo": repo.name, "index_s": index_s, "rows": rows, "full": full,
                                   "queries": len(queries), "load": load_average()}, indent=1, default=str), encoding="utf-8")
    return rows, full
