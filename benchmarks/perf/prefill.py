"""``python -m scripts.bench prefill``: prompt tokens the local model actually prefills per call purpose.

Replays one scripted conversation trace through the real local backbone three times, each time on
a freshly loaded model (same GGUF, threads, n_ctx) with the same greedy requests:

* **no reuse** -- every request sets ``cache_prompt: false`` (``backbone.local.prompt_cache=false``):
  each call prefills its whole prompt;
* **prompt cache** -- the default: one llama.cpp slot plus llama.cpp's host-memory prompt cache,
  which restores the cached prompt sharing the longest prefix before each call;
* **no reuse, reversed order** -- the calls of the first pass in reverse order.

Each turn of the trace makes the three calls of a ReConMem turn with the method's real prompt
templates -- a response over the growing conversation (``turn_generation``, as Full History sends
it), ``memory_sketching`` and ``memory_update`` -- so a growing history and repeated instructions
are both exercised. Per purpose it prints the prompt tokens, the tokens llama.cpp evaluated
(``timings.prompt_n``) and restored (``timings.cache_n``) and the ratio; then how many replies
are byte-identical between reuse and no reuse (llama.cpp's CPU kernels are not batch-invariant, so
a restored prefix can change a reply), and whether the no-reuse replies are independent of the
call order (they must be: exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections import defaultdict
from typing import Any

TURNS = [
    ("Where is the function that splits an iterable into chunks in boltons/iterutils.py?",
     "It is boltons/iterutils.py/chunked; it yields lists of `size` items from `src`."),
    ("Please make chunked accept a `fill` value for the last chunk and keep it backwards compatible.",
     "Add `fill=_UNSET` to chunked and pad the last chunk only when `fill` is given."),
    ("Also add a docstring example for the new fill argument and a test in tests/test_iterutils.py.",
     "Docstring: `chunked(range(5), 2, fill=0)` gives `[[0, 1], [2, 3], [4, 0]]`; the test checks it."),
    ("Now write windowed_iter so that it reuses chunked where possible.",
     "windowed_iter keeps its own deque; reusing chunked would change its semantics, so I left it."),
    ("What did we decide about chunked's fill argument?",
     "chunked pads the last chunk with `fill` only when it is given; the default keeps old behaviour."),
]
SYSTEM = "You are a helpful coding assistant working with the user on the repository boltons."


def trace(turns: int) -> list[tuple[str, list[dict[str, str]]]]:
    """(purpose, messages) of ``turns`` ReConMem-style turns (response, sketch, update)."""
    from reconmem.memory.prompts import render_prompt

    history: list[dict[str, str]] = [{"role": "system", "content": SYSTEM}]
    calls: list[tuple[str, list[dict[str, str]]]] = []
    for t in range(turns):
        user, assistant = TURNS[t % len(TURNS)]
        history = history + [{"role": "user", "content": user}]
        calls.append(("turn_generation", list(history)))
        history = history + [{"role": "assistant", "content": assistant}]
        sketch = render_prompt("memory_sketching", repository="boltons", user=user, assistant=assistant)
        calls.append(("memory_sketching", [{"role": "user", "content": sketch}]))
        update = render_prompt("memory_update", repository="boltons", turn_memories=f"  * {assistant}",
                               text=assistant, paths="boltons/iterutils.py/chunked",
                               candidates="\n".join(f"  m{i + 1}: {TURNS[i][1]} [boltons/iterutils.py/chunked]"
                                                    for i in range(t)) or "  (no existing memories)")
        calls.append(("memory_update", [{"role": "user", "content": update}]))
    return calls


def replay(local: dict[str, Any], calls: list, *, reuse: bool, max_tokens: int) -> tuple[list[str], dict, float]:
    """Run ``calls`` on a freshly loaded model; (reply texts, per-purpose counts, seconds)."""
    from reconmem.platform.llm.response import prefill_counts
    from reconmem.platform.local_model.server import LocalModel
    from reconmem.platform.local_model.settings import effective_n_ctx, resolve_threads
    from reconmem.platform.local_model.weights import resolve_gguf

    model = LocalModel(resolve_gguf(local), n_ctx=effective_n_ctx(local), threads=resolve_threads(local.get("threads")),
                       n_batch=local.get("n_batch")).load()
    texts: list[str] = []
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    started = time.perf_counter()
    for purpose, messages in calls:
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0.0}
        if not reuse:
            body["cache_prompt"] = False
        reply = model.chat(body)
        prefill = prefill_counts(reply)
        row = counts[purpose]
        row["calls"] += 1
        row["prompt"] += int((reply.get("usage") or {}).get("prompt_tokens") or 0)
        row["prefilled"] += prefill.get("prefilled_tokens", 0)
        row["restored"] += prefill.get("restored_tokens", 0)
        texts.append(((reply.get("choices") or [{}])[0].get("message") or {}).get("content") or "")
    seconds = time.perf_counter() - started
    model.close()
    gc.collect()
    return texts, counts, seconds


def run(args: argparse.Namespace) -> int:
    """The bench for the parsed command line of ``scripts.bench_prefill`` (prints the per-purpose lines;
    1 when replies depend on call order, 2 for a backbone that is not local)."""
    from benchmarks.perf.llm import load_backbone_config

    cfg = load_backbone_config(args.backbone)
    local = dict(cfg.get("local") or {})
    if not local:
        print(f"bench prefill: backbone {args.backbone!r} is not a local model", file=sys.stderr)
        return 2
    if args.threads:
        local["threads"] = args.threads
    local["n_ctx"] = args.n_ctx
    calls = trace(args.turns)
    from reconmem.platform.local_model.settings import resolve_threads

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

