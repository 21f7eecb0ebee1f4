"""Embedding backends side by side on one repository's entity texts (``scripts.bench index --embed``).

Every backend embeds the same texts in the same run, interleaved: the texts are split into rounds
of whole token-length groups (the groups the embedder batches by), and each round is embedded by
every backend in turn, the order rotating per round, so a change of machine load falls on all
backends alike and the texts/s ratios are comparable. Agreement with torch: the minimum (and mean)
cosine between a text's torch vector and its vector on the other backend, and the top-10 overlap of
repository search (``|top10_torch & top10_backend| / 10``, mean and minimum) for queries built from
the repository's own function names, each backend ranking its own vectors.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

# The goals of the ONNX backends against torch (issue 27): a speed-up and an agreement bound each.
GOALS: dict[str, dict[str, float]] = {
    "onnx": {"speedup": 1.5, "min_cosine": 0.999},
    "onnx-int8": {"speedup": 2.5, "top10_overlap": 0.95},
}
REFERENCE = "torch"
TOP_K = 10


def embedder_options(name: str) -> dict[str, Any]:
    """``Embedder`` arguments of a bench backend name: ``onnx``, or ``onnx@64`` (``embedder.max_tokens=64``)."""
    backend, _, cap = name.partition("@")
    if cap and not cap.isdigit():
        raise SystemExit(f"--backends: {name!r}: the part after '@' is a token cap, e.g. onnx@64")
    return {"backend": backend, "max_tokens": int(cap) if cap else None}


@dataclass
class BackendRun:
    """What one backend did over the rounds: seconds embedding, texts, vectors (in text order)."""

    backend: str
    prepare_seconds: float = 0.0
    seconds: float = 0.0
    texts: int = 0
    vectors: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def texts_per_second(self) -> float:
        return self.texts / self.seconds if self.seconds > 0 else float("nan")


def rounds_of_groups(groups: Sequence[Sequence[int]], round_texts: int) -> list[list[int]]:
    """Consecutive token-length groups joined until a round holds at least ``round_texts`` indices."""
    rounds: list[list[int]] = []
    current: list[int] = []
    for group in groups:
        current.extend(group)
        if len(current) >= round_texts:
            rounds.append(current)
            current = []
    if current:
        rounds.append(current)
    return rounds


def run_interleaved(encoders: dict[str, Callable[[list[str]], np.ndarray]], texts: Sequence[str],
                    rounds: Sequence[Sequence[int]], dim: int,
                    clock: Callable[[], float] = time.perf_counter) -> dict[str, BackendRun]:
    """Embed ``texts`` round by round with every encoder (order rotating each round); time each."""
    names = list(encoders)
    runs = {name: BackendRun(name, vectors=np.zeros((len(texts), dim), dtype=np.float32)) for name in names}
    for number, rows in enumerate(rounds):
        batch = [texts[i] for i in rows]
        for offset in range(len(names)):
            name = names[(number + offset) % len(names)]
            started = clock()
            vecs = encoders[name](batch)
            runs[name].seconds += clock() - started
            runs[name].texts += len(rows)
            runs[name].vectors[list(rows)] = vecs
    return runs


def cosines(reference: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two matrices of unit vectors."""
    return np.einsum("ij,ij->i", reference, other)


def top_k_overlap(corpus_a: np.ndarray, queries_a: np.ndarray, corpus_b: np.ndarray, queries_b: np.ndarray,
                  k: int = TOP_K) -> np.ndarray:
    """Per query, the share of backend A's top-``k`` rows that backend B's top-``k`` also holds."""
    from reconmem.platform.vectors import dot_rows, top_k

    out = np.zeros(len(queries_a), dtype=np.float64)
    for i in range(len(queries_a)):
        first = {row for row, _ in top_k(dot_rows(corpus_a, queries_a[i]), k)}
        second = {row for row, _ in top_k(dot_rows(corpus_b, queries_b[i]), k)}
        out[i] = len(first & second) / max(min(k, len(corpus_a)), 1)
    return out


def split_identifier(name: str) -> str:
    """``parse_http_date`` / ``parseHttpDate`` / ``HTTPDate`` -> ``parse http date`` words (lower case)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", name))
    return " ".join(w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w)


def search_queries(index: Any, n: int, seed: int) -> list[str]:
    """``n`` repository-search queries from the index's functions (a seeded sample): the name's
    words and the file's stem, e.g. ``"parse http date (dateparse)"``."""
    functions = [e for e in index.entities.values() if e.kind == "function" and split_identifier(e.name)]
    if not functions:
        return []
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(functions), size=min(n, len(functions)), replace=False)
    queries = []
    for i in sorted(picked.tolist()):
        e = functions[i]
        stem = (e.file or "").rsplit("/", 1)[-1].split(".", 1)[0]
        queries.append(f"{split_identifier(e.name)} ({stem})" if stem else split_identifier(e.name))
    return queries


def goal_met(backend: str, speedup: float, min_cosine: float, overlap: float) -> bool | None:
    """Whether ``backend`` meets its goal (None: it has none, i.e. the reference)."""
    goal = GOALS.get(backend)
    if goal is None:
        return None
    checks = {"speedup": speedup, "min_cosine": min_cosine, "top10_overlap": overlap}
    return all(checks[key] >= bound for key, bound in goal.items())


def agreement_met(backend: str, min_cosine: float, overlap: float) -> bool | None:
    """Whether ``backend`` meets the agreement half of its goal (speed aside)."""
    goal = GOALS.get(backend)
    if goal is None:
        return None
    checks = {"min_cosine": min_cosine, "top10_overlap": overlap}
    return all(checks[key] >= bound for key, bound in goal.items() if key in checks)


def summarise(runs: dict[str, BackendRun], query_vectors: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """One row per backend: texts/s, ratio to torch, cosine and top-10 overlap against torch, goal."""
    ref = runs[REFERENCE]
    rows = []
    for name, run in runs.items():
        cos = cosines(ref.vectors, run.vectors)
        overlap = top_k_overlap(ref.vectors, query_vectors[REFERENCE], run.vectors, query_vectors[name]) \
            if len(query_vectors.get(name, [])) else np.array([float("nan")])
        speedup = ref.seconds / run.seconds if run.seconds > 0 else float("nan")
        rows.append({"backend": name, "texts": run.texts, "seconds": run.seconds, "prepare_seconds": run.prepare_seconds,
                     "texts_per_s": run.texts_per_second, "speedup": speedup,
                     "min_cosine": float(cos.min()), "mean_cosine": float(cos.mean()),
                     "top10_overlap": float(overlap.mean()), "top10_overlap_min": float(overlap.min()),
                     "agreement": agreement_met(name, float(cos.min()), float(overlap.mean())),
                     "goal": goal_met(name, speedup, float(cos.min()), float(overlap.mean()))})
    return rows


def _mark(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def extrapolate(rows: Sequence[dict[str, Any]], n_texts: int, index_seconds: float, goal_seconds: float = 60.0) -> str:
    """Per backend: every one of ``n_texts`` entity texts at its measured texts/s, plus the cold index."""
    lines = []
    for r in rows:
        embed = n_texts / r["texts_per_s"] if r["texts_per_s"] > 0 else float("nan")
        total = embed + index_seconds
        lines.append(f"  {r['backend']:<12} all {n_texts} texts at {r['texts_per_s']:.1f} texts/s: embed {embed:,.0f} s "
                     f"+ index {index_seconds:.1f} s = {total:,.0f} s ({'within' if total <= goal_seconds else 'over'} "
                     f"the {goal_seconds:g} s goal)")
    return "\n".join(lines)


def format_rows(rows: Sequence[dict[str, Any]], n_queries: int) -> str:
    """The backend table."""
    head = (f"{'backend':<10} {'texts':>6} {'embed s':>8} {'texts/s':>8} {'x torch':>8} {'min cos':>9} {'mean cos':>9} "
            f"{f'top-{TOP_K} ov.':>11} {'(min)':>6} {'agrees':>7} {'goal':>5}  prepare s")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['backend']:<10} {r['texts']:>6} {r['seconds']:>8.1f} {r['texts_per_s']:>8.1f} {r['speedup']:>7.2f}x "
                     f"{r['min_cosine']:>9.5f} {r['mean_cosine']:>9.5f} {r['top10_overlap']:>11.3f} "
                     f"{r['top10_overlap_min']:>6.2f} {_mark(r['agreement']):>7} {_mark(r['goal']):>5}  {r['prepare_seconds']:.1f}")
    goals = "; ".join(f"{b}: " + ", ".join(f"{k} >= {v:g}" for k, v in g.items()) for b, g in GOALS.items())
    lines.append(f"(top-{TOP_K} overlap over {n_queries} queries; goals: {goals}; 'agrees' = the agreement half of the goal)")
    return "\n".join(lines)


def fastest_agreeing(rows: Sequence[dict[str, Any]]) -> str:
    """The fastest backend whose agreement goal holds (torch, the reference, always does; a variant
    without a goal, such as a token cap, is never chosen)."""
    ok = [r for r in rows if r["agreement"] or r["backend"] == REFERENCE]
    return max(ok, key=lambda r: r["texts_per_s"])["backend"]
