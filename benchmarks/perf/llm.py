"""``python -m scripts.bench llm``: generation speed of a backbone and the response-cache speed-up.

Runs one real prompt (~128 output tokens, temperature 0) through :class:`reconmem.platform.llm.LLMClient`
with a fresh response cache, then the identical call again (a cache hit), and prints two lines:
load time, RSS and tokens/s; then miss vs. hit seconds and their ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
PROMPT = [
    {"role": "system", "content": "You are a helpful coding assistant."},
    {"role": "user", "content": "Write a Python function `parse_iso_date(text)` that parses an ISO-8601 date "
                                "string (YYYY-MM-DD) into a datetime.date, raising ValueError on bad input. "
                                "Include a docstring and two usage examples."},
]


def load_backbone_config(name_or_path: str) -> dict[str, Any]:
    """A backbone node from ``conf/backbone/<name>.yaml`` (or a YAML path), with its ``defaults`` merged."""
    from omegaconf import OmegaConf

    path = Path(name_or_path)
    if not path.suffix:
        path = REPO_ROOT / "conf" / "backbone" / f"{name_or_path}.yaml"
    if not path.is_file():
        raise SystemExit(f"bench llm: no backbone config {path} (try --backbone local)")
    node = OmegaConf.load(path)
    merged = OmegaConf.create({})
    for entry in node.pop("defaults", None) or []:
        if entry != "_self_":
            merged = OmegaConf.merge(merged, load_backbone_config(str(path.with_name(f"{entry}.yaml"))))
    return OmegaConf.to_container(OmegaConf.merge(merged, node), resolve=True)


def rss_gb() -> float:
    """Resident set size of this process in GB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024


def run(args: argparse.Namespace) -> int:
    """The bench for the parsed command line of ``scripts.bench_llm`` (two lines; 1 when the cached
    reply differs, 2 on a backbone error)."""
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
                from reconmem.platform.local_model.provider import ensure_registered
                from reconmem.platform.local_model.server import get_model

                started = time.perf_counter()
                model = get_model(spec.local or {})  # assemble / verify the GGUF
                gguf_s = time.perf_counter() - started
                model.load()
                ensure_registered(spec)
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

