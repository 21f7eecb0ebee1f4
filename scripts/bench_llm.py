"""``python -m scripts.bench llm``: generation speed of a backbone and the response-cache speed-up.

The bench itself is :mod:`benchmarks.perf.llm`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.perf.llm import PROMPT, load_backbone_config, rss_gb
from reconmem.platform.offline_env import set_offline_env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench llm", description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="local", help="conf/backbone/<name>.yaml or a YAML path (default: local)")
    parser.add_argument("--max-tokens", type=int, default=128, help="output tokens to generate (default 128)")
    parser.add_argument("--threads", default=None, help="override backbone.local.threads (an integer or auto)")
    parser.add_argument("--n-ctx", type=int, default=None, help="override backbone.local.n_ctx")
    args = parser.parse_args(argv)

    set_offline_env()
    from reconmem.platform.llm import BackboneSpec, LLMClient, LLMError, UsageLedger

    cfg = load_backbone_config(args.backbone)
    if cfg.get("local"):
        if args.threads:
            cfg["local"]["threads"] = args.threads
        if args.n_ctx:
            cfg["local"]["n_ctx"] = args.n_ctx
    spec = BackboneSpec.from_config(cfg)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-llm-") as cache_dir:
            client = LLMClient(spec, ledger=UsageLedger(), cache_path=Path(cache_dir) / "cache.sqlite")
            load = ""
            if spec.is_local:
                from reconmem.platform import local_model

                started = time.perf_counter()
                model = local_model.get_model(spec.local or {})  # assemble / verify the GGUF
                gguf_s = time.perf_counter() - started
                model.load()
                local_model.ensure_registered(spec)
                load = (f"GGUF ready {gguf_s:.1f} s, load {model.load_seconds or 0.0:.1f} s, threads {model.threads}, "
                        f"n_ctx {model.n_ctx}, RSS {rss_gb():.2f} GB, ")
            miss = client.chat(PROMPT, purpose="bench", max_tokens=args.max_tokens, temperature=0.0)
            miss_s = client.ledger.events[-1]["seconds"]
            hit = client.chat(PROMPT, purpose="bench", max_tokens=args.max_tokens, temperature=0.0)
            hit_s = max(client.ledger.events[-1]["seconds"], 1e-9)
    except LLMError as exc:
        print(f"bench llm: {exc}", file=sys.stderr)
        return 2

    out_tokens = miss.usage.output_tokens
    where = f"{spec.name} ({spec.model})"
    try:
        busy = f"load avg {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except OSError:
        busy = f"{os.cpu_count()} cores"
    print(f"llm {where}: {load}{out_tokens} output tokens (+{miss.usage.input_tokens} prompt) in {miss_s:.2f} s "
          f"= {out_tokens / miss_s:.1f} tok/s end-to-end ({busy})")
    same = hit.cached and hit.text == miss.text and hit.usage == miss.usage
    print(f"llm cache: miss {miss_s:.3f} s, hit {hit_s * 1000:.2f} ms -> speed-up {miss_s / hit_s:,.0f}x "
          f"(identical reply and usage: {'yes' if same else 'NO'})")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
