"""``python -m scripts.bench index --repo PATH [--embed]``: repository index + embedding seconds by phase.

Line 1 (``index``): files, entities and seconds of a cold build (snapshot cache off) split into
walk+read+hash and tree-sitter parse+extract, then files/s and entities/s.
Line 2 (``index cached``): the same build from the per-snapshot index cache (what a second sample,
or another process, over the same repository pays).
With ``--embed`` (kinds default: every non-directory kind, what ReConMem embeds):
line 3 (``embed``): entity-text building, embedding (texts computed, texts/s, model load separated)
and the vector-cache write, into a fresh embedding cache unless ``--warm``;
then ``embed floor``: the machine's fp32 matmul peak measured in the same run and the seconds the
embedding's dense-layer FLOPs need at that peak (what bounds a cold embed without changing the vectors);
line 4 (``embed cached``): a fresh index + ``entity_vectors`` over the same snapshot from the caches.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench index", description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="repository root directory to index")
    parser.add_argument("--languages", default=None, help="comma-separated languages (default: all supported)")
    parser.add_argument("--max-file-bytes", type=int, default=1_000_000)
    parser.add_argument("--embed", action="store_true", help="also time embedding the entities")
    parser.add_argument("--kinds", default="file,type,function,variable",
                        help="entity kinds to embed with --embed (comma-separated; default: all but directories)")
    parser.add_argument("--warm", action="store_true", help="--embed: use the user's embedding cache (default: a fresh one)")
    parser.add_argument("--batch-size", type=int, default=None, help="--embed: embedder batch size (default: the Embedder's)")
    args = parser.parse_args(argv)

    repo = Path(args.repo).expanduser()
    if not repo.is_dir():
        parser.error(f"--repo: not a directory: {repo}")
    from reconmem.platform.code import RepositoryIndex

    languages = [x for x in args.languages.split(",") if x] if args.languages else None
    opts = {"languages": languages, "max_file_bytes": args.max_file_bytes}
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        index = RepositoryIndex.build(repo, cache_dir=False, **opts)
        t = index.build_timings
        n_files, n_entities = len(index.files()), len(index.entities)
        print(f"index {repo.name}: files={n_files} entities={n_entities} seconds={t['total']:.3f} "
              f"(walk+read+hash {t['walk_read_hash']:.3f}, parse+extract {t['parse_extract']:.3f}) "
              f"files/s={n_files / max(t['total'], 1e-9):.1f} entities/s={n_entities / max(t['total'], 1e-9):.1f}")
        RepositoryIndex.build(repo, cache_dir=Path(tmp) / "index", **opts)  # fills the snapshot cache
        again = RepositoryIndex.build(repo, cache_dir=Path(tmp) / "index", **opts)
        same = again.from_cache and list(again.entities) == list(index.entities) and again.entities == index.entities
        t2 = again.build_timings
        print(f"index cached {repo.name}: seconds={t2['total']:.3f} (walk+read+hash {t2['walk_read_hash']:.3f}, "
              f"load snapshot {t2.get('load_snapshot', float('nan')):.3f}) -> {t['total'] / max(t2['total'], 1e-9):.1f}x "
              f"faster; identical entities: {'yes' if same else 'NO'}")
        if not args.embed:
            return 0 if same else 1

        from reconmem.platform.code.search import entity_text
        from reconmem.platform.embed import Embedder, load_model

        kinds = tuple(k for k in args.kinds.split(",") if k)
        cache_dir = None if args.warm else Path(tmp) / "embeddings"
        embedder = Embedder(cache_dir=cache_dir, **({"batch_size": args.batch_size} if args.batch_size else {}))
        started = time.perf_counter()
        load_model()
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        paths = [p for p, e in index.entities.items() if e.kind in kinds]
        texts = [entity_text(index, p) for p in paths]
        text_s = time.perf_counter() - started
        started = time.perf_counter()
        embedder.encode(texts)
        embed_s = time.perf_counter() - started
        started = time.perf_counter()
        paths2, _ = index.entity_vectors(embedder, kinds=kinds)  # texts now hit the embedder cache: the npz write
        write_s = time.perf_counter() - started
        stats = dict(embedder.stats)
        total = text_s + embed_s + write_s
        model = load_model()
        cap = int(getattr(model, "max_seq_length", 256) or 256)
        pieces = sum(min(cap, len(ids)) for ids in model.tokenizer(texts, add_special_tokens=True)["input_ids"])
        dense = sum(p.numel() for name, p in model.named_parameters() if "embeddings" not in name)
        gflop = 2 * dense * pieces / 1e9  # matmul FLOPs of the dense layers (attention scores excluded)
        print(f"embed {repo.name}: entities={len(paths2)} kinds={','.join(kinds)} seconds={total:.3f} "
              f"(entity texts {text_s:.3f}, embedding {embed_s:.3f} = {stats['computed'] / max(embed_s, 1e-9):.1f} texts/s "
              f"at batch {embedder.batch_size}, vector-cache write {write_s:.3f}; model load {load_s:.1f} s not included) "
              f"computed={stats['computed']} disk_hits={stats['disk_hits']}")
        print(f"embed work {repo.name}: {pieces} word pieces (cap {cap}, mean {pieces / max(len(texts), 1):.0f}/text) x "
              f"{dense / 1e6:.1f}M dense parameters = {gflop:,.0f} GFLOP -> {gflop / max(embed_s, 1e-9):.1f} GFLOP/s achieved")
        peak = _matmul_gflops()
        print(f"embed floor {repo.name}: this machine's torch fp32 matmul peak (MiniLM FFN shape) {peak:.1f} GFLOP/s -> "
              f"the dense layers alone need >= {gflop / peak:.0f} s at peak (achieved {100 * gflop / max(embed_s, 1e-9) / peak:.0f}% "
              f"of it); index+embed in 30 s would need {gflop / 30:.0f} GFLOP/s ({gflop / 30 / peak:.1f}x the peak)")
        print(f"index+embed {repo.name} cold: {t['total'] + total:.1f} s (+ model load {load_s:.1f} s)")
        started = time.perf_counter()
        second = RepositoryIndex.build(repo, cache_dir=Path(tmp) / "index", **opts)
        fresh = Embedder(cache_dir=cache_dir)
        paths3, matrix3 = second.entity_vectors(fresh, kinds=kinds)
        second_s = time.perf_counter() - started
        print(f"embed cached {repo.name} (second sample, same snapshot, new process state): index+vectors "
              f"{second_s:.3f} s, texts computed {fresh.stats['computed']}, vectors {matrix3.shape}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
