"""Prompt and memory tokens of every method on one identical scripted conversation.

``python -m scripts.bench methods --tokens [--methods full,mem0,...] [--turns 20] [--repo-context-k 10]``
(without ``--tokens``: the harness's own time per turn, :mod:`benchmarks.perf.overhead`)

A fixed 20-turn conversation about the real boltons 23.1.1 repository (user queries AND assistant
answers are scripted, so every method sees exactly the same dialogue) is observed by each method
in turn. Memory calls use the real backbone (default ``conf/backbone/local.yaml``, the offline
local model) through the response cache. For each method the table shows the prompt tokens it
would send on the last turn (``count_tokens(context_for(last query).messages)``, before observing
that turn; per-turn values go to stderr) and the tokens its memory management spent over the 20 turns (every ledger event; no
response is generated here, so all of them are memory work), with the number of calls and the
wall time. MemGPT manages memory inside its answer loop (``respond``), which a scripted dialogue
never runs: only its overflow summaries would show up here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.perf.methods import backbone_cfg as load_backbone_cfg
from benchmarks.perf.methods import build_manager

REPO_ROOT = Path(__file__).resolve().parents[2]
BOLTONS = ("boltons", "23.1.1", "d2cb2fa83cf2ebe791be1e284183e8a43a1031355156a968f8e0a333ad2448fc")
METHODS = ["full", "vanilla_rag", "mem0", "mem0r", "memgpt", "ld_agent", "reconmem"]
SYSTEM_PROMPT = ("You are an expert Python developer helping the user with their repository (boltons). "
                 "Answer precisely; when asked for code, give complete, working Python.")

# (topic, user, assistant): four topics of five turns over real boltons code.
CONVERSATION: list[tuple[str, str, str]] = [
    ("cache", "We are working on boltons. I need a small in-memory cache for parsed config files. Which class in boltons/cacheutils.py should I use?",
     "Use `LRU` from boltons/cacheutils.py. It is a dict subclass with a `max_size` (default 128) that evicts the least recently used entry; `LRI` evicts by insertion order instead."),
    ("cache", "Requirement: the cache must hold at most 64 parsed files and we must be able to see hit and miss counts.",
     "Then create `LRU(max_size=64)`. It tracks `hit_count`, `miss_count` and `soft_miss_count`, so you can log `cache.hit_count` and `cache.miss_count` after each run."),
    ("cache", "How does LRU.get behave when the key is missing?",
     "`LRU.get(key, default=None)` calls `self[key]`; on KeyError it increments `soft_miss_count` and returns `default`. Plain `cache[key]` raises KeyError and counts a miss, unless `on_miss` is set."),
    ("cache", "Decision: we will wrap the loader with the `cached` decorator instead of calling the cache by hand. Show me how.",
     "```python\nfrom boltons.cacheutils import LRU, cached\n\n_config_cache = LRU(max_size=64)\n\n@cached(_config_cache)\ndef load_config(path):\n    with open(path) as f:\n        return parse(f.read())\n```\n`cached` builds the key from the arguments with `make_cache_key`."),
    ("cache", "Note for later: load_config must never cache files whose name starts with 'tmp_'.",
     "Noted: skip the cache for 'tmp_' files, e.g. check `os.path.basename(path).startswith('tmp_')` and call the undecorated parser directly in that case."),
    ("strings", "New topic: URL slugs for our docs pages. What does strutils.slugify do?",
     "`slugify(text, delim='_', lower=True, ascii=False)` splits on punctuation and whitespace with `split_punct_ws` and joins the words with `delim`; by default it lower-cases the result."),
    ("strings", "Our docs need '-' as the delimiter, and titles like 'Hello, World!' must become 'hello-world'.",
     "Call `slugify('Hello, World!', delim='-')`, which returns 'hello-world'. Pass `ascii=True` if you also need a bytes-safe ASCII result."),
    ("strings", "We also convert class names like HTTPResponseCode to snake case. Which helper does that?",
     "`camel2under('HTTPResponseCode')` returns 'http_response_code'; the reverse is `under2camel('http_response_code')`, which gives 'HttpResponseCode'."),
    ("strings", "Decision: slugs must be ASCII only, because our static host rejects non-ASCII paths.",
     "Then use `slugify(title, delim='-', ascii=True)`; it runs `asciify` on the result, so 'Café Menu' becomes b'cafe-menu' (decode it to str before building the path)."),
    ("strings", "Please write a helper docs_slug(title) with those rules.",
     "```python\nfrom boltons.strutils import slugify\n\ndef docs_slug(title):\n    return slugify(title, delim='-', ascii=True).decode('ascii')\n```"),
    ("iter", "Another area: we batch API uploads. How do I split a list of 1000 records into chunks of 100?",
     "Use `chunked(records, 100)` from boltons/iterutils.py; it returns a list of lists. `chunked_iter` is the lazy version for large inputs."),
    ("iter", "The upload API limit is 250 records per request, and the last batch may be shorter.",
     "Then `chunked(records, 250)`; the last chunk simply holds the remainder. Pass `fill=None` only if you need equal-sized chunks."),
    ("iter", "We also need sliding windows of 3 readings for smoothing. What is there?",
     "`windowed(readings, 3)` yields tuples of 3 consecutive items; `windowed_iter` is the lazy form. `pairwise` is the size-2 special case."),
    ("iter", "Retries: between failed uploads we want exponential backoff from 1s up to 60s.",
     "Use `backoff(1, 60)` from iterutils, which returns the list [1, 2, 4, 8, 16, 32, 60]; `backoff_iter(1, 60, count='repeat')` keeps yielding 60 after the cap."),
    ("iter", "Decision: uploads use chunked_iter with 250 and backoff_iter(1, 60, count=5). Summarise the plan.",
     "Plan: stream records with `chunked_iter(records, 250)`; for each batch try the upload, and on failure sleep through `backoff_iter(1, 60, count=5)` before giving up and logging the batch."),
    ("files", "Last area: writing the exported reports safely. How do we avoid half-written files?",
     "Use `atomic_save(path)` from boltons/fileutils.py as a context manager: it writes to a temporary file and renames it over the target on success, so readers never see partial content."),
    ("files", "The reports directory may not exist yet. What creates it?",
     "`mkdir_p(path)` creates the directory and its parents and does nothing if it already exists, like `mkdir -p`."),
    ("files", "Requirement: report files must be created with permissions 0o640.",
     "`atomic_save(path, file_perms=0o640)` sets the permissions on the temporary file before the rename; `FilePerms` can build the mode from strings like 'rw-r-----'."),
    ("files", "Which fileutils helper lists all .csv files under a directory tree?",
     "`iter_find_files(root, patterns=['*.csv'])` walks the tree and yields matching paths; add `ignored=['*.tmp']` to skip temporary files."),
    ("files", "Now combine everything: write export_reports(records, root) that batches records by 250, writes one CSV per batch atomically with mode 0o640 under root/reports, and returns the paths.",
     "```python\nimport csv, os\nfrom boltons.fileutils import atomic_save, mkdir_p\nfrom boltons.iterutils import chunked_iter\n\ndef export_reports(records, root):\n    out_dir = os.path.join(root, 'reports')\n    mkdir_p(out_dir)\n    paths = []\n    for i, batch in enumerate(chunked_iter(records, 250)):\n        path = os.path.join(out_dir, f'report_{i}.csv')\n        with atomic_save(path, text_mode=True, file_perms=0o640) as f:\n            csv.writer(f).writerows(batch)\n        paths.append(path)\n    return paths\n```"),
]


def run_method(name: str, *, backbone_cfg: Any, embedder: Any, repo: Any, turns: int, repo_context_k: int,
               cache_path: Path | None) -> dict[str, Any]:
    """Observe the scripted conversation with one method; return its row of the table."""
    from reconmem.platform.context import Session, Turn
    from reconmem.platform.llm import BackboneSpec, LLMClient, UsageLedger

    ledger = UsageLedger()
    llm = LLMClient(BackboneSpec.from_config(backbone_cfg), ledger=ledger, cache_path=cache_path)
    cm = build_manager(name, backbone_cfg, repo_context_k)
    session = Session(sample_id=f"bench-{name}", llm=llm, embedder=embedder, repo=repo, system_prompt=SYSTEM_PROMPT,
                      context_window=llm.context_window)
    started = time.perf_counter()
    last_prompt_tokens = 0
    with ledger.tags(method=name):
        cm.start(session)
        for i, (topic, user, assistant) in enumerate(CONVERSATION[:turns]):
            prompt_tokens = llm.count_tokens(cm.context_for(user).messages)
            if i == turns - 1:
                last_prompt_tokens = prompt_tokens
            with ledger.tags(turn=i):
                cm.observe(Turn(index=i, user=user, assistant=assistant, meta={"topic": topic}))
            so_far = ledger.totals(by=())
            print(f"[bench methods] {name} turn {i + 1}/{turns}: prompt {prompt_tokens} tok, memory "
                  f"{so_far['total_tokens']} tok in {so_far['calls']} calls, {time.perf_counter() - started:.0f}s",
                  file=sys.stderr, flush=True)
    totals = ledger.totals(by=())
    by_purpose = {p: t["total_tokens"] for p, t in ledger.totals().items()}
    return {"method": name, "last_turn_prompt_tokens": last_prompt_tokens, "memory_tokens": totals["total_tokens"],
            "memory_input_tokens": totals["input_tokens"], "memory_output_tokens": totals["output_tokens"],
            "memory_calls": totals["calls"], "cached_calls": totals["cached_calls"], "by_purpose": by_purpose,
            "json_failures": dict(llm.json_failures), "seconds": round(time.perf_counter() - started, 1)}


def format_table(rows: list[dict[str, Any]]) -> str:
    head = f"{'method':<12} {'last-turn prompt tok':>20} {'memory tok':>11} {'(in/out)':>15} {'calls':>6} {'seconds':>8}"
    lines = [head, "-" * len(head)]
    for r in rows:
        io = f"{r['memory_input_tokens']}/{r['memory_output_tokens']}"
        lines.append(f"{r['method']:<12} {r['last_turn_prompt_tokens']:>20} {r['memory_tokens']:>11} {io:>15} "
                     f"{r['memory_calls']:>6} {r['seconds']:>8}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The token table for the parsed command line of ``scripts.bench_methods`` (``--out``: also as JSON)."""
    from reconmem.platform.code import RepositoryIndex
    from reconmem.platform.downloads import cache_root, fetch_pypi_source
    from reconmem.platform.embed import Embedder

    backbone_cfg = load_backbone_cfg(Path(args.backbone))
    name, version, sha = BOLTONS
    repo = RepositoryIndex.build(fetch_pypi_source(name, version, sha256=sha) / f"{name}-{version}")
    embedder = Embedder()
    cache_path = None if args.no_cache else cache_root() / "llm_cache.sqlite"
    rows = []
    for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
        print(f"[bench methods] {method} ...", file=sys.stderr, flush=True)
        rows.append(run_method(method, backbone_cfg=backbone_cfg, embedder=embedder, repo=repo, turns=args.turns,
                               repo_context_k=args.repo_context_k, cache_path=cache_path))
    print(f"{args.turns}-turn scripted boltons conversation, backbone {backbone_cfg.name}, "
          f"repo_context_k={args.repo_context_k}")
    print(format_table(rows))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text(json.dumps(rows, indent=1), encoding="utf-8")
        os.replace(tmp, out)
    return 0

