"""``python -m scripts.bench retrieval``: recall@10, MRR and ms/query of the code retrievers, in one run.

Pairs come from DevEval tasks (``--data``: ``$RECONMEM_DEVEVAL_DATA`` or the fetched
``data.jsonl``): the query is the task's requirement text (Functionality + Arguments), the gold
entities are the target's callees (the record's ``dependency``: intra-class, intra-file,
cross-file, resolved to index paths) and its containers in the file (the file and, for a method,
its class). Each project's repository is its PyPI sdist (``benchmarks/deveval/data/pypi_sources.json``,
read only), indexed as LoCoEval indexes it: a copy with the selected targets blanked, their
docstrings removed and their judging test files hidden. The target itself is never ranked. A task
a blanked copy cannot be built for (its judging test file is not in the sdist: a run refuses such
a task with ``BlankingError``) is left out, counted by reason and printed.

Two ranking spaces, as the harness retrieves: every code entity (file, type, function,
variable: ReConMem's repository-wide route) and functions only (the baselines' repository
adaptation, gold restricted to functions). Per backend (dense, bm25, hybrid):

* recall@10: the share of (query, gold entity) pairs whose entity is in the query's top 10;
* MRR: the mean over queries of 1 / rank of the first gold entity (0 beyond rank 100);
* ms/query: one ranking call (top 100) plus, for dense and hybrid, embedding the query with a
  cache-less embedder (measured once per query, the same figure added in both spaces and to both
  backends); ``rank ms`` is the ranking call alone. Medians, and the p95 of ms/query. The embedding
  is timed on its second computation: the first text of each token length pays a one-time kernel
  set-up (0.2-1 s on this machine; texts are embedded unpadded, grouped by exact length), which a
  long run pays once per length, not per query.

Entity vectors use the embedding cache (``$RECONMEM_CACHE/embeddings``): the first run over a
project embeds it, later runs only look vectors up.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from reconmem.platform import pyast

# The LoCoEval verified set's projects (mapped, oracle-validated) minus the two largest (boto,
# pyramid: 14k / 8k entities to embed), plus three mapped projects of their size class.
DEFAULT_PROJECTS = (
    "Utilities/boltons", "Communications/IMAPClient", "Internet/Jinja2", "System/fs", "Utilities/gunicorn",
    "Internet/falcon", "System/mrjob", "Security/pycoin", "Multimedia/Mopidy", "Utilities/sacred",
    "Database/alembic", "Security/diffprivlib", "Internet/sumy",
)
SPACES = {"all": ("file", "type", "function", "variable"), "functions": ("function",)}
BACKENDS = ("dense", "bm25", "hybrid")
DEPTH = 100
CUTOFF = 10


@dataclass
class Query:
    """One DevEval task as a retrieval query."""

    project: str
    namespace: str
    text: str
    target: str  # the target's entity path (never ranked)
    gold: dict[str, str] = field(default_factory=dict)  # entity path -> where it comes from


def requirement_text(record: dict[str, Any]) -> str:
    """The task's requirement as a query: Functionality, then Arguments."""
    req = record.get("requirement") or {}
    return "\n".join(str(req[k]).strip() for k in ("Functionality", "Arguments") if req.get(k))


def _module_root(file_rel: str, module: list[str]) -> str | None:
    """The directory the dotted module names start from (``src/`` for ``src/jinja2/meta.py``)."""
    parts = list(Path(file_rel).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if len(parts) < len(module) or parts[len(parts) - len(module):] != module:
        return None
    prefix = parts[:len(parts) - len(module)]
    return "/".join(prefix) + "/" if prefix else ""


def resolve_dotted(index: Any, root: str, dotted: str) -> str | None:
    """Entity path of a DevEval dotted name (``jinja2.nodes.Template``) in ``index``, or None."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        module, rest = parts[:i], "/".join(parts[i:])
        for file in (f"{root}{'/'.join(module)}.py", f"{root}{'/'.join(module)}/__init__.py"):
            if file in index.entities:
                path = f"{file}/{rest}"
                return path if path in index.entities else None
    return None


def build_queries(records: Sequence[dict[str, Any]], index: Any, snapshot: Path, project: str) -> list[Query]:
    """Queries with their gold entities in ``index`` (a query without any gold entity is dropped)."""
    from benchmarks.locoeval.repo import _qualname, resolve_file

    out: list[Query] = []
    for rec in records:
        try:
            file_rel = resolve_file(snapshot, rec["completion_path"], project).relative_to(snapshot).as_posix()
        except FileNotFoundError:
            continue
        qual = _qualname(rec["namespace"], file_rel)
        target = f"{file_rel}/{'/'.join(qual)}"
        root = _module_root(file_rel, rec["namespace"].split(".")[:-len(qual)])
        if target not in index.entities or root is None:
            continue
        q = Query(project, rec["namespace"], requirement_text(rec), target)
        for i in range(1, len(qual)):  # the enclosing classes of a method
            q.gold.setdefault(f"{file_rel}/{'/'.join(qual[:i])}", "container")
        q.gold.setdefault(file_rel, "container")
        for kind in ("intra_class", "intra_file", "cross_file"):
            for dotted in (rec.get("dependency") or {}).get(kind) or []:
                path = resolve_dotted(index, root, dotted)
                if path and path != target:
                    q.gold.setdefault(path, kind)
        if q.text and q.gold:
            out.append(q)
    return out


def _blankable(snapshot: Path, records: Sequence[dict[str, Any]], project: str,
               ) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The records LoCoEval's blanked copy can be built for, and why each other one is left out.

    A run refuses a task whose judging test file is not in the snapshot (``BlankingError``: its
    tests could not be hidden); the bench measures retrieval only, so it leaves such a task out
    and counts it under its reason.
    """
    from benchmarks.locoeval.repo import _qualname, find_function, resolve_file

    keep: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    for rec in records:
        try:
            f = resolve_file(snapshot, rec["completion_path"], project)
        except FileNotFoundError:
            skipped["target file not in the snapshot"] += 1
            continue
        try:
            tree = pyast.parse(f.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            skipped["target file does not parse"] += 1
            continue
        if find_function(tree, _qualname(rec["namespace"], f.relative_to(snapshot).as_posix())) is None:
            skipped["target function not in its file"] += 1
            continue
        if any(not _in_tree(snapshot, test, project) for test in _test_files(rec)):
            skipped["judging test file not in the snapshot"] += 1
            continue
        keep.append(rec)
    return keep, skipped


def _test_files(rec: dict[str, Any]) -> list[str]:
    """The files of the task's judging tests (``path::test`` ids)."""
    return sorted({t.split("::")[0] for t in rec.get("tests") or []})


def _in_tree(root: Path, rel: str, project: str) -> bool:
    from benchmarks.locoeval.repo import resolve_file

    try:
        resolve_file(root, rel, project)
    except FileNotFoundError:
        return False
    return True


def format_skipped(skipped: Counter[str]) -> str:
    """``3 tasks skipped: judging test file not in the snapshot 2, target file does not parse 1``."""
    total = sum(skipped.values())
    reasons = ", ".join(f"{reason} {n}" for reason, n in skipped.most_common())
    return f"{total} task{'s' if total != 1 else ''} skipped: {reasons}"


def project_index(entry: Any, records: list[dict[str, Any]], cache: Path,
                  ) -> tuple[Any, Path, list[dict[str, Any]], Counter[str]]:
    """(index over the blanked copy, pristine snapshot, the records blanked in it, skipped tasks by reason)."""
    from benchmarks.deveval.providers import get_snapshot
    from benchmarks.locoeval.repo import blanked_copy
    from reconmem.platform.code import RepositoryIndex

    snapshot = Path(get_snapshot(entry.repo_spec()))
    records, skipped = _blankable(snapshot, records, entry.project_path)
    tests = sorted({t for r in records for t in _test_files(r)})
    blanked = blanked_copy(snapshot, [(r["namespace"], r["completion_path"]) for r in records], cache_dir=cache,
                           project_path=entry.project_path, hidden_files=tests, strip_docstrings=True)
    return RepositoryIndex.build(blanked), snapshot, records, skipped


def select_records(records: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` tasks of a project with at least one callee, in namespace order."""
    with_deps = [r for r in records if any((r.get("dependency") or {}).get(k) for k in ("intra_class", "intra_file", "cross_file"))]
    return sorted(with_deps, key=lambda r: r["namespace"])[:limit]


def _rank_of(ranking: list[str], gold: set[str]) -> int | None:
    return next((i for i, p in enumerate(ranking, start=1) if p in gold), None)


def evaluate(queries: list[Query], index: Any, embedder: Any, query_embedder: Any, space: str,
             backends: Sequence[str], embedded: dict[str, tuple[Any, float]] | None = None,
             ) -> dict[str, dict[str, list[float]]]:
    """Per backend: hits per pair (1/0), reciprocal rank per query, ms per query (with and without
    the query's embedding). ``embedded`` keeps each query's vector and embedding time across spaces."""
    embedded = {} if embedded is None else embedded
    from reconmem.platform.code.retrieval import CodeRetriever, RetrieverSpec, lexical_index
    from reconmem.platform.code.search import RepositoryVectors

    kinds = SPACES[space]
    needs_dense = any(b != "bm25" for b in backends)
    vectors = RepositoryVectors(index, embedder, kinds)
    if needs_dense:
        vectors.matrix  # noqa: B018 - embed (or load) the entity vectors before timing
    retrievers = {b: CodeRetriever(index, vectors, kinds, RetrieverSpec(b)) for b in backends}
    if "bm25" in backends or "hybrid" in backends:
        lexical_index(index, kinds, RetrieverSpec("bm25"))  # built before timing
    out = {b: {"hits": [], "rr": [], "ms": [], "rank_ms": []} for b in backends}
    for q in queries:
        gold = {p for p in q.gold if index.entities[p].kind in kinds}
        if not gold:
            continue
        embed_ms = 0.0
        vector = None
        if needs_dense:
            if q.text not in embedded:
                query_embedder.encode_one(q.text)  # the first text of a token length builds its kernels
                t0 = time.perf_counter()
                vec = query_embedder.encode_one(q.text)
                embedded[q.text] = (vec, (time.perf_counter() - t0) * 1e3)
            vector, embed_ms = embedded[q.text]
        for b in backends:
            t0 = time.perf_counter()
            ranked = retrievers[b].repository(vector, DEPTH + 1, text=q.text)
            rank_ms = (time.perf_counter() - t0) * 1e3
            ms = rank_ms + (embed_ms if b != "bm25" else 0.0)
            paths = [p for p, _ in ranked if p != q.target][:DEPTH]
            top = set(paths[:CUTOFF])
            out[b]["hits"] += [1.0 if g in top else 0.0 for g in sorted(gold)]
            rank = _rank_of(paths, gold)
            out[b]["rr"].append(1.0 / rank if rank else 0.0)
            out[b]["ms"].append(ms)
            out[b]["rank_ms"].append(rank_ms)
    return out


def merge_metrics(total: dict, part: dict) -> None:
    for b, m in part.items():
        for k, v in m.items():
            total.setdefault(b, {}).setdefault(k, []).extend(v)


def format_table(space: str, results: dict[str, dict[str, list[float]]], n_projects: int) -> str:
    """The printed table of one ranking space."""
    first = next(iter(results.values()))
    lines = [f"retrieval space={space} ({'/'.join(SPACES[space])}): {len(first['hits'])} (query, gold entity) pairs, "
             f"{len(first['rr'])} queries, {n_projects} projects",
             f"  {'backend':8s} {'recall@10':>9s} {'MRR':>7s} {'ms/query':>9s} {'rank ms':>8s} {'p95 ms':>8s}"]
    for b, m in results.items():
        recall = sum(m["hits"]) / max(1, len(m["hits"]))
        mrr = sum(m["rr"]) / max(1, len(m["rr"]))
        ms = statistics.median(m["ms"]) if m["ms"] else 0.0
        rank_ms = statistics.median(m["rank_ms"]) if m["rank_ms"] else 0.0
        p95 = sorted(m["ms"])[int(0.95 * (len(m["ms"]) - 1))] if m["ms"] else 0.0
        lines.append(f"  {b:8s} {recall:9.3f} {mrr:7.3f} {ms:9.2f} {rank_ms:8.2f} {p95:8.2f}")
    return "\n".join(lines)


def load_records(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_manifest(path: Path | None) -> Any:
    """The DevEval manifest, re-read once if another process is rewriting it at that moment."""
    from benchmarks.deveval.tasks import TaskDataError, load_manifest

    for attempt in range(3):
        try:
            return load_manifest(path)
        except TaskDataError:
            if attempt == 2:
                raise
            time.sleep(2.0)
    raise AssertionError("unreachable")


def run(args: Any, *, data: Path, backends: Sequence[str], spaces: Sequence[str]) -> int:
    """The bench for the parsed command line of ``scripts.bench_retrieval`` (``args``: manifest,
    projects, max_per_project, out); prints one table per space, 1 when no project gave a query."""
    manifest = load_manifest(args.manifest)
    by_project: dict[str, list[dict[str, Any]]] = {}
    for rec in load_records(data):
        by_project.setdefault(rec["project_path"], []).append(rec)

    from reconmem.platform.downloads import cache_root
    from reconmem.platform.embed import Embedder

    embedder = Embedder() if any(b != "bm25" for b in backends) else None
    query_embedder = Embedder(cache_dir=False, lru_size=0) if embedder is not None else None
    totals: dict[str, dict[str, dict[str, list[float]]]] = {s: {} for s in spaces}
    used: list[str] = []
    skipped: Counter[str] = Counter()
    for project in [p for p in args.projects.split(",") if p]:
        entry = manifest.project(project)
        records = select_records(by_project.get(project, []), args.max_per_project)
        if entry is None or not records:
            print(f"  skip {project}: {'not in the manifest' if entry is None else 'no task with callees in --data'}",
                  file=sys.stderr)
            continue
        t0 = time.perf_counter()
        index, snapshot, records, left_out = project_index(entry, records, cache_root())
        skipped.update(left_out)
        if left_out:
            print(f"  {project}: {format_skipped(left_out)}", file=sys.stderr)
        queries = build_queries(records, index, snapshot, project)
        n_entities = sum(1 for e in index.entities.values() if e.kind != "directory")
        if not queries:
            print(f"  skip {project}: no query with a resolvable gold entity", file=sys.stderr)
            continue
        embedded: dict[str, tuple[Any, float]] = {}
        for space in spaces:
            merge_metrics(totals[space], evaluate(queries, index, embedder, query_embedder, space, backends, embedded))
        used.append(project)
        print(f"  {project}: {len(queries)} queries, {sum(len(q.gold) for q in queries)} gold entities, "
              f"{n_entities} entities, {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    if not used:
        print("retrieval: no project gave a query", file=sys.stderr)
        return 1
    report: dict[str, Any] = {"projects": used, "max_per_project": args.max_per_project, "depth": DEPTH,
                              "skipped_tasks": dict(skipped.most_common()), "spaces": {}}
    for space in spaces:
        print(format_table(space, totals[space], len(used)))
        report["spaces"][space] = {
            b: {"pairs": len(m["hits"]), "queries": len(m["rr"]), "recall@10": sum(m["hits"]) / max(1, len(m["hits"])),
                "mrr": sum(m["rr"]) / max(1, len(m["rr"])), "ms_median": statistics.median(m["ms"]),
                "rank_ms_median": statistics.median(m["rank_ms"])}
            for b, m in totals[space].items()}
    if skipped:
        print(f"retrieval: {format_skipped(skipped)}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0

