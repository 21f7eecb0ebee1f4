"""``python -m scripts.bench prefill``: prompt tokens the local model actually prefills per call purpose.

The bench itself is :mod:`benchmarks.perf.prefill`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.perf.prefill import replay, trace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench prefill", description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="local", help="conf/backbone/<name>.yaml or a YAML path (default: local)")
    parser.add_argument("--turns", type=int, default=4, help="conversation turns (3 calls each, default 4)")
    parser.add_argument("--max-tokens", type=int, default=24, help="output tokens per call (default 24)")
    parser.add_argument("--threads", type=int, default=None, help="override backbone.local.threads")
    parser.add_argument("--n-ctx", type=int, default=8192, help="backbone.local.n_ctx for the bench (default 8192)")
    parser.add_argument("--json", type=Path, default=None, help="also write the replies and counts to this file")
    args = parser.parse_args(argv)
    if args.turns < 1:
        parser.error("--turns must be >= 1")

    from scripts.bench_llm import load_backbone_config

    cfg = load_backbone_config(args.backbone)
    local = dict(cfg.get("local") or {})
    if not local:
        print(f"bench prefill: backbone {args.backbone!r} is not a local model", file=sys.stderr)
        return 2
    if args.threads:
        local["threads"] = args.threads
    local["n_ctx"] = args.n_ctx
    calls = trace(args.turns)
    from reconmem.platform.local_model import resolve_threads

    threads = resolve_threads(local.get("threads"))
    print(f"prefill trace: {args.turns} turns x 3 calls, {args.max_tokens} output tokens each, greedy, "
          f"threads {threads}, n_ctx {args.n_ctx}")
    base_texts, base, base_s = replay(local, calls, reuse=False, max_tokens=args.max_tokens)
    new_texts, new, new_s = replay(local, calls, reuse=True, max_tokens=args.max_tokens)
    reversed_texts, _, _ = replay(local, calls[::-1], reuse=False, max_tokens=args.max_tokens)
    reversed_texts = reversed_texts[::-1]
    for purpose in dict.fromkeys(p for p, _ in calls):
        b, n = base[purpose], new[purpose]
        print(f"  {purpose:16s} calls {n['calls']}: prompt {n['prompt']:6d} tok; prefilled without reuse "
              f"{b['prefilled']:6d}, with prompt cache {n['prefilled']:6d} (restored {n['restored']:6d}) "
              f"-> {n['prefilled'] / max(b['prefilled'], 1):.2f}x; per turn {b['prefilled'] / b['calls']:.0f} -> "
              f"{n['prefilled'] / n['calls']:.0f}")
    b_tot = sum(r["prefilled"] for r in base.values())
    n_tot = sum(r["prefilled"] for r in new.values())
    same = base_texts == new_texts
    order_free = base_texts == reversed_texts
    print(f"  total prefilled {b_tot} -> {n_tot} tokens ({n_tot / max(b_tot, 1):.2f}x); "
          f"wall {base_s:.1f} s -> {new_s:.1f} s (machine load makes seconds noisy; token counts are not)")
    print(f"  greedy replies byte-identical with and without prompt reuse: "
          f"{'yes' if same else 'NO'} ({sum(a == b for a, b in zip(base_texts, new_texts))}/{len(calls)})")
    print(f"  without reuse, replies independent of call order (forward vs reversed): "
          f"{'yes' if order_free else 'NO'} ({sum(a == b for a, b in zip(base_texts, reversed_texts))}/{len(calls)})")
    if args.json:
        args.json.write_text(json.dumps({"calls": [p for p, _ in calls], "without_reuse": base_texts,
                                         "with_prompt_cache": new_texts, "without_reuse_reversed": reversed_texts,
                                         "counts": {"without": base, "with": new}}, indent=1))
    return 0 if order_free else 1


if __name__ == "__main__":
    raise SystemExit(main())
