"""The harness's own time per turn: ``python -m scripts.bench methods`` (``--tokens``: the token table).

Every method observes the same scripted conversation over a real repository (default Faker
20.1.0, 50 turns: each turn asks about one of the repository's functions, picked with a seed, and
the scripted answer quotes its first lines) with a zero-latency scripted backbone
(:class:`reconmem.platform.testing.ScriptedLLM`, well-formed replies for every memory purpose), the
real embedder and the real repository index. Per turn it times what the loop asks of a method:
``context_for(query)``, counting the prompt's tokens, ``observe(turn)``; the seconds the ledger
records for the (scripted) model calls are subtracted, so what remains is non-model time. The table
gives p50 / p95 per turn, the p95 of the part spent embedding (``embed``), of the rest and of the
process CPU time per turn (``cpu``: on a loaded machine wall time includes waiting for a core), and p95 as
a share of a 2-second API call, against the goal; each method runs once per embedder backend
(``--backends``, default torch,onnx), back to back, so the backends meet the same load. The
repository's entity vectors are computed (or read from the user's cache) before the first turn:
that one-time cost is the index bench's (``scripts.bench index --embed``), not a per-turn one.
Each method gets a fresh embedder without a text cache, so it embeds the conversation's texts
itself, as in a run (the repository's vectors stay memoised on the index). ``--out`` writes the rows as JSON; ``--before FILE`` prints them beside an earlier run's rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
FAKER = ("Faker", "20.1.0")
METHODS = ["full", "vanilla_rag", "mem0", "mem0r", "memgpt", "ld_agent", "reconmem", "memory_tool"]
API_CALL_SECONDS = 2.0  # the reference API call a turn's overhead is compared with
GOAL_SHARE = 0.02  # goal: p95 non-model time per turn <= 2% of that call (40 ms)
QUOTE_LINES = 6  # lines of the function's source the scripted answer quotes
SYSTEM_PROMPT = "You are an expert Python developer helping the user with their repository. Answer precisely."


def conversation(index: Any, turns: int, seed: int) -> list[tuple[str, str]]:
    """``turns`` (user, assistant) pairs about functions of ``index`` (a seeded sample, repository order)."""
    functions = [p for p, e in index.entities.items() if e.kind == "function"]
    if not functions:
        raise SystemExit("bench methods: the repository has no functions to talk about")
    picked = np.random.default_rng(seed).choice(len(functions), size=turns, replace=len(functions) < turns)
    pairs = []
    for i in sorted(picked.tolist()):
        entity = index.entities[functions[i]]
        source = "\n".join(index.source(entity.path).splitlines()[:QUOTE_LINES])
        user = f"How does `{entity.name}` in {entity.file} work, and where would I change it to add an option?"
        assistant = (f"`{entity.name}` is defined in {entity.file} (lines {entity.start_line}-{entity.end_line}). "
                     f"It starts like this:\n```python\n{source}\n```\nAdd the option as a keyword argument there.")
        pairs.append((user, assistant))
    return pairs


def _last_user(messages: list[dict[str, Any]]) -> str:
    return next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")


def scripted_reply(method: str) -> Callable[[list[dict[str, Any]], str], Any]:
    """Well-formed replies for ``method``'s memory calls (its memory grows by one item per turn)."""
    counter = {"n": 0}

    def reply(messages: list[dict[str, Any]], purpose: str) -> Any:
        counter["n"] += 1
        snippet = " ".join(_last_user(messages).split())[-160:] or "nothing"
        if purpose == "memory_sketching":
            return {"memories": [{"text": f"{counter['n']}: {snippet}", "anchors": []}]}
        if purpose == "memory_update" and method.startswith("mem0"):
            return {"memory": [{"id": "", "text": f"{counter['n']}: {snippet}", "event": "ADD"}]}
        if purpose == "memory_update":
            return {"action": "INSERT", "target": None, "text": None, "keep_new": True, "relations": []}
        if purpose == "memory_extraction":
            return {"facts": [f"{counter['n']}: {snippet}"]}
        if purpose == "persona":
            return {"user_traits": ["works on the repository"], "agent_traits": ["answers precisely"]}
        return f"Summary {counter['n']}: {snippet}"

    return reply


class TimedEmbedder:
    """The embedder with the seconds spent in ``encode`` / ``encode_one`` counted (everything else delegated)."""

    def __init__(self, inner: Any):
        self._inner = inner
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def encode(self, texts: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._inner.encode(texts)
        finally:
            self.seconds += time.perf_counter() - started

    def encode_one(self, text: str) -> Any:
        return self.encode([text])[0]


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (linear interpolation), NaN for no values."""
    return float(np.percentile(values, q)) if values else float("nan")


def run_method(name: str, *, backbone_cfg: Any, embedder: Any, repo: Any, pairs: list[tuple[str, str]],
               repo_context_k: int) -> dict[str, Any]:
    """Observe the conversation with one method; its non-model seconds per turn and the row."""
    from reconmem.platform.context import Session, Turn
    from reconmem.platform.llm import UsageLedger
    from reconmem.platform.testing import ScriptedLLM
    from benchmarks.perf.methods import build_manager

    embedder = TimedEmbedder(embedder)
    ledger = UsageLedger()
    llm = ScriptedLLM(scripted_reply(name), ledger=ledger, context_window=int(backbone_cfg.context_window))
    cm = build_manager(name, backbone_cfg, repo_context_k)
    session = Session(sample_id=f"overhead-{name}", llm=llm, embedder=embedder, repo=repo,
                      system_prompt=SYSTEM_PROMPT, context_window=llm.context_window)
    cm.start(session)
    per_turn: list[float] = []
    embedding: list[float] = []
    cpu: list[float] = []
    for i, (user, assistant) in enumerate(pairs):
        model_before, embed_before = _model_seconds(ledger), embedder.seconds
        started, cpu_started = time.perf_counter(), time.process_time()
        llm.count_tokens(cm.context_for(user).messages)
        cm.observe(Turn(index=i, user=user, assistant=assistant))
        wall = time.perf_counter() - started
        cpu.append(time.process_time() - cpu_started)
        per_turn.append(max(wall - (_model_seconds(ledger) - model_before), 0.0))
        embedding.append(embedder.seconds - embed_before)
    p50, p95 = percentile(per_turn, 50), percentile(per_turn, 95)
    rest = [t - e for t, e in zip(per_turn, embedding)]
    return {"method": name, "backend": embedder.backend, "turns": len(per_turn), "p50_ms": 1000 * p50,
            "p95_ms": 1000 * p95, "max_ms": 1000 * max(per_turn), "embed_p95_ms": 1000 * percentile(embedding, 95),
            "rest_p95_ms": 1000 * percentile(rest, 95), "cpu_p95_ms": 1000 * percentile(cpu, 95), "share_p95": p95 / API_CALL_SECONDS, "calls": len(llm.calls),
            "ok": p95 <= GOAL_SHARE * API_CALL_SECONDS}


def _model_seconds(ledger: Any) -> float:
    return float(sum(float(e.get("seconds") or 0.0) for e in ledger.events))


def format_table(rows: list[dict[str, Any]], before: dict[tuple[str, str], dict[str, Any]] | None = None) -> str:
    """The per-turn overhead table: one row per method and embedder backend (with an earlier run's
    p95 beside each row when given). ``embed`` is the part spent embedding, ``rest`` everything else,
    ``cpu`` the process CPU seconds of the turn (all threads; what load on a shared machine does not inflate)."""
    head = (f"{'method':<12} {'backend':<9} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'embed p95':>10} {'rest p95':>9} "
            f"{'cpu p95':>8} {'p95 / 2 s call':>15} {'goal':>5} {'calls':>6}")
    if before:
        head += f" {'before p95 ms':>14} {'before share':>13}"
    lines = [head, "-" * len(head)]
    for r in rows:
        line = (f"{r['method']:<12} {r['backend']:<9} {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} {r['max_ms']:>8.1f} "
                f"{r['embed_p95_ms']:>10.1f} {r['rest_p95_ms']:>9.1f} {r.get('cpu_p95_ms', float('nan')):>8.1f} "
                f"{100 * r['share_p95']:>14.2f}% "
                f"{'yes' if r['ok'] else 'NO':>5} {r['calls']:>6}")
        if before:
            old = before.get((r["method"], r["backend"]))
            line += (f" {old['p95_ms']:>14.1f} {100 * old['share_p95']:>12.2f}%" if old else f" {'-':>14} {'-':>13}")
        lines.append(line)
    lines.append(f"(goal: p95 <= {100 * GOAL_SHARE:g}% of a {API_CALL_SECONDS:g} s API call = "
                 f"{1000 * GOAL_SHARE * API_CALL_SECONDS:.0f} ms)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The bench for the parsed command line of ``scripts.bench_overhead`` (prints the table; ``--out`` / ``--before``)."""
    from reconmem.platform.code import RepositoryIndex
    from reconmem.platform.downloads import fetch_pypi_source
    from reconmem.platform.code.search import CODE_KINDS
    from reconmem.platform.embed import Embedder
    from benchmarks.perf.methods import backbone_cfg as load_backbone_cfg

    backbone_cfg = load_backbone_cfg(Path(args.backbone))
    root = Path(args.repo) if args.repo else fetch_pypi_source(*FAKER) / f"{FAKER[0]}-{FAKER[1]}"
    repo = RepositoryIndex.build(root)
    embedders = {}
    for backend in [b for b in args.backends.split(",") if b]:
        embedders[backend] = Embedder(backend=backend)
        started = time.perf_counter()
        for kinds in (CODE_KINDS, ("function",)):  # what the methods search; one-time, memoised on the index
            repo.entity_vectors(embedders[backend], kinds=kinds)
        print(f"[bench methods] {root.name}: {len(repo.entities)} entities, {backend} vectors ready in "
              f"{time.perf_counter() - started:.1f} s ({embedders[backend].stats['computed']} computed)",
              file=sys.stderr, flush=True)
    pairs = conversation(repo, args.turns, args.seed)
    rows = []
    for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
        for backend in embedders:
            # A fresh embedder per method (no text cache): every method embeds the conversation's texts
            # itself, as in a run; the repository's vectors stay memoised on the index.
            fresh = Embedder(cache_dir=False, backend=backend)
            rows.append(run_method(method, backbone_cfg=backbone_cfg, embedder=fresh, repo=repo, pairs=pairs,
                                   repo_context_k=args.repo_context_k))
            print(f"[bench methods] {method} ({backend}): p95 {rows[-1]['p95_ms']:.1f} ms", file=sys.stderr, flush=True)
    before = None
    if args.before:
        before = {(r["method"], r.get("backend", "torch")): r for r in json.loads(Path(args.before).read_text(encoding="utf-8"))}
    one, five, fifteen = os.getloadavg()
    print(f"{args.turns}-turn scripted conversation over {root.name}, zero-latency scripted backbone, "
          f"methods parameterised for {backbone_cfg.name}, repo_context_k={args.repo_context_k}; load average {one:.2f}, {five:.2f}, "
          f"{fifteen:.2f} on {os.cpu_count()} cores")
    print(format_table(rows, before))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0

