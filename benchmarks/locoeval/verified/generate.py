"""The verified set's generator (version 2): DevEval tasks of every mapped project -> samples.

Pipeline (deterministic, no LLM; ``python -m scripts.make_verified_locoeval``):

1. **Projects**: every manifest entry (``pypi_sources.json``, or ``--manifest``) with at least
   ``min_usable`` oracle-validated tasks (``--projects`` narrows the list); candidate tasks of a
   project in a seeded order. ``--filter-runs`` drops the tasks a ``no_memory`` run solved.
2. **Screening** (``screening``): static filters, then test runs (cached on disk in
   ``<cache>/locoeval_verified_v2/outcomes.jsonl``, so a rerun repeats none). Projects take turns,
   one tested candidate each per round, until ``tasks`` tasks are usable (or the candidates run out).
3. **Set-level limits**: comparisons at most ``COMPARE_SHARE`` of the facts (extra comparison facts
   dropped first, then tasks).
4. **Composition** (``compose``): per project seeded sample sizes 1-4, subsets alternating so the
   set has as many single-hop as multi-hop samples.

Outputs in ``out_dir``: ``samples.jsonl``, ``samples.verification.jsonl``, ``deveval_tasks.jsonl``
(the DevEval records used, verbatim), ``screening.json`` (every candidate and why it was kept or
dropped) and ``generation.json`` (options, projects and versions, counts).
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from benchmarks.locoeval.verified.compose import compose_sample, plan_sizes, repository_symbols, set_statistics
from benchmarks.locoeval.verified.distractors import Vocabulary
from benchmarks.locoeval.verified.facts import BodyFacts, Fact
from benchmarks.locoeval.verified.source import norm
from benchmarks.locoeval.verified.screening import MIN_FACTS, Candidate, OutcomeCache, static_screen, test_screen
from benchmarks.locoeval.verified.validity import SiblingIndex, SnapshotText, indexed, text_files
from benchmarks.runs import run_pool
from reconmem.platform import pyast

COMPARE_SHARE = 0.25
SET_NAME = "locoeval_verified_v2"


@dataclass
class Options:
    """What to generate (the script's command-line options)."""

    out_dir: Path
    deveval_data: Path | None = None
    manifest: Path | None = None
    projects: list[str] | None = None
    min_usable: int = 4
    tasks: int = 330
    max_per_project: int = 40
    seed: int = 0
    timeout: float = 60.0
    workers: int = 1
    cache_dir: Path | None = None
    filter_runs: list[Path] = field(default_factory=list)
    static_only: bool = False
    outcome: Callable[[Any, Path, str], str] | None = None   # test hook: (task, snapshot, body) -> outcome, no executor


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Project:
    """One manifest entry's snapshot, texts, vocabulary and sibling index (built on first use)."""

    def __init__(self, entry: Any, manifest: Any) -> None:
        from benchmarks.deveval.providers import get_snapshot

        self.entry = entry
        self.root = Path(get_snapshot(entry.repo_spec(), manifest=manifest))
        self.files = dict(text_files(self.root))
        self.text = SnapshotText(self.files)
        self.siblings = SiblingIndex.of_tree(self.root, self.files)
        self.vocab = Vocabulary()
        self._modules: dict[str, tuple[Vocabulary, ast.Module]] = {}
        for name, text in self.files.items():
            if name.endswith(".py") and not _is_test(name):
                try:
                    self.vocab.merged(self.module(name)[0])
                except (SyntaxError, ValueError):
                    continue

    def module(self, rel: str) -> tuple[Vocabulary, ast.Module]:
        if rel not in self._modules:
            tree = pyast.parse(self.files[rel])
            voc = Vocabulary.of_module(self.files[rel], tree)
            voc.project = self.vocab
            self._modules[rel] = (voc, tree)
        return self._modules[rel]

    def test_files(self, task: Any) -> list[str]:
        """Snapshot-relative paths of the files holding the task's tests."""
        from benchmarks.locoeval.repo import files_of_tests

        return files_of_tests(self.root, task.tests, self.entry.project_path)


def _is_test(rel: str) -> bool:
    parts = rel.split("/")
    return any(p in ("tests", "test", "testing") for p in parts[:-1]) or parts[-1].startswith(("test_", "conftest"))


def prepare(project: Project, task: Any, record: dict[str, Any]) -> tuple[Candidate, BodyFacts | None]:
    """The candidate of one task with its static screening done."""
    from benchmarks.deveval.providers import reference_function
    from benchmarks.locoeval.repo import _qualname, blank_source, find_function

    entry = project.entry
    ref = reference_function(project.root, task, entry.task(task.namespace))
    cand = Candidate(task.namespace, entry.project_path, ref, record)
    rel = ref["file"] if ref["file"] in project.files else None
    if rel is None:
        cand.status, cand.notes = "static_drop", ["target file is not a text file of the snapshot"]
        return cand, None
    voc, tree = project.module(rel)
    qual = _qualname(task.namespace, rel)
    func = find_function(tree, qual)
    if func is None or func.lineno != ref["signature_line"]:
        func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.lineno == ref["signature_line"]), None)
    if func is None or not ref["body"].strip():
        cand.status, cand.notes = "static_drop", ["function not found / empty body"]
        return cand, None
    try:
        visible_own = norm(blank_source(project.files[rel], [qual], filename=rel, strip_docstrings=True))
    except Exception as exc:  # noqa: BLE001 - recorded in screening.json
        cand.status, cand.notes = "static_drop", [f"cannot blank: {type(exc).__name__}: {exc}"]
        return cand, None
    hidden = project.test_files(task)
    exclude = [rel, *hidden]

    def in_snapshot(fragment: str) -> list[str]:
        hits = project.text.files_with(fragment, exclude=exclude, limit=1)
        return hits or ([rel] if indexed(rel) and norm(fragment) in visible_own else [])

    body_facts = BodyFacts(project.files[rel], func, ref["body_start"], ref["body_end"], voc,
                           class_name=qual[-2] if len(qual) > 1 else None)
    sibling = project.siblings.most_similar(body_facts.reference_body(), skip=[(rel, func.lineno)],
                                            exclude_files=hidden)
    return static_screen(cand, body_facts, in_snapshot=in_snapshot, sibling=sibling), body_facts


def capped(kept: list[Candidate]) -> dict[str, list[Fact]]:
    """The facts each task contributes once comparisons are at most COMPARE_SHARE of all facts."""
    used = {c.namespace: list(c.kept) for c in kept}

    def share() -> float:
        total = sum(len(v) for v in used.values())
        return sum(f.kind == "compare" for v in used.values() for f in v) / total if total else 0.0

    for c in reversed(kept):
        if share() <= COMPARE_SHARE:
            break
        facts = used[c.namespace]
        while len(facts) > MIN_FACTS and any(f.kind == "compare" for f in facts) and share() > COMPARE_SHARE:
            facts.remove(next(f for f in reversed(facts) if f.kind == "compare"))
    for c in reversed(kept):
        if share() <= COMPARE_SHARE:
            break
        if any(f.kind == "compare" for f in used[c.namespace]):
            del used[c.namespace]
    return used


def solved_by(run_dirs: list[Path]) -> dict[str, str]:
    """``{namespace: run dir}`` of the tasks a ``no_memory`` run passed (``--filter-runs``)."""
    from benchmarks.records import RunDir

    out: dict[str, str] = {}
    for run in run_dirs:
        manifest = RunDir(run).manifest_file()
        if not manifest:
            raise ValueError(f"--filter-runs {run}: no manifest.json (not a run directory)")
        if manifest.get("method") != "no_memory":
            raise ValueError(f"--filter-runs {run}: method is {manifest.get('method')!r}, expected 'no_memory' "
                             f"(the filter drops what the repository and the model alone solve)")
        for res in RunDir(run).results():
            for t in res.get("tasks", []):
                if t.get("passed") and t.get("namespace"):
                    out[t["namespace"]] = str(run)
    return out


def generate(opts: Options) -> dict[str, Any]:
    """Screen, compose and write the set; returns its statistics."""
    from benchmarks.deveval.evaluate import run_body
    from benchmarks.deveval.tasks import default_data_path, env_spec_for, load_manifest, load_tasks
    from benchmarks.sandbox import build_executor
    from reconmem.platform.downloads import cache_root

    t0 = time.monotonic()
    manifest = load_manifest(opts.manifest)
    data_path = Path(opts.deveval_data) if opts.deveval_data else default_data_path()
    records = {r["namespace"]: r for r in (json.loads(ln) for ln in
                                            data_path.read_text(encoding="utf-8").splitlines() if ln.strip())}
    tasks = {t.namespace: t for t in load_tasks(data_path)}
    solved = solved_by(opts.filter_runs)
    entries = []
    for entry in manifest.select(opts.projects):
        usable = sorted(loc.namespace for loc in entry.tasks if loc.usable and loc.namespace in tasks)
        if len(usable) < opts.min_usable:
            log(f"{entry.project_path}: {len(usable)} usable task(s) < --min-usable {opts.min_usable}: skipped")
            continue
        random.Random(f"{opts.seed}:{entry.project_path}").shuffle(usable)
        entries.append((entry, usable))
    executor = None if opts.static_only or opts.outcome else \
        build_executor({"name": "local", "timeout_s": opts.timeout})
    cache = OutcomeCache((Path(opts.cache_dir) if opts.cache_dir else cache_root() / SET_NAME) / "outcomes.jsonl")
    screening: dict[str, dict[str, Any]] = {}
    projects: dict[str, Project] = {}
    queues: dict[str, list[str]] = {e.project_path: list(u) for e, u in entries}
    kept_by_project: dict[str, list[Candidate]] = {e.project_path: [] for e, _ in entries}
    envs: dict[str, Any] = {}

    def next_candidate(entry: Any) -> Candidate | None:
        """The project's next candidate that passes the static filters (None: none left)."""
        queue = queues[entry.project_path]
        while queue:
            ns = queue.pop(0)
            if ns in solved:
                screening[ns] = {"status": "filtered", "notes": [f"solved by no_memory in {solved[ns]}"]}
                continue
            try:
                cand, _ = prepare(projects[entry.project_path], tasks[ns], records[ns])
            except Exception as exc:  # noqa: BLE001 - recorded in screening.json
                screening[ns] = {"status": "static_drop", "notes": [f"prepare failed: {type(exc).__name__}: {exc}"]}
                continue
            screening[ns] = cand.summary()
            if cand.status != "static_drop":
                return cand
        return None

    def runner(cand: Candidate):
        entry = manifest.project(cand.project_path)
        scope = f"{entry.project_path}@{entry.version}"

        def run(body: str) -> str:
            if opts.outcome is not None:
                return opts.outcome(tasks[cand.namespace], projects[cand.project_path].root, body)
            hit = cache.get(scope, cand.namespace, body)
            if hit is not None:
                return hit
            out, _ = run_body(tasks[cand.namespace], projects[cand.project_path].root, body,
                              env=envs[cand.project_path], executor=executor, hint=entry.task(cand.namespace))
            cache.put(scope, cand.namespace, body, out.outcome)
            log(f"  ran {cand.namespace}: {out.outcome} ({out.seconds:.1f}s)")
            return out.outcome
        return run

    active = [e for e, _ in entries]
    for entry in list(active):
        try:
            projects[entry.project_path] = Project(entry, manifest)
            if executor is not None:
                envs[entry.project_path] = env_spec_for(entry)
                executor.prepare(envs[entry.project_path])
        except Exception as exc:  # noqa: BLE001 - a project that cannot be prepared is skipped, and said so
            log(f"{entry.project_path}: cannot prepare ({type(exc).__name__}: {exc}): skipped")
            active.remove(entry)
    if opts.static_only:
        return _static_report(active, next_candidate, screening)

    def n_usable() -> int:
        return len(capped([c for e, _ in entries for c in kept_by_project[e.project_path]]))

    while active and n_usable() < opts.tasks:
        batch = []
        for entry in list(active):
            if len(kept_by_project[entry.project_path]) >= opts.max_per_project:
                active.remove(entry)
                continue
            cand = next_candidate(entry)
            if cand is None:
                active.remove(entry)
                continue
            batch.append(cand)
        for cand in run_pool(batch, lambda c: test_screen(c, runner(c)), workers=max(1, opts.workers), progress=False,
                             raise_errors=True):
            screening[cand.namespace] = cand.summary()
            if cand.status == "kept":
                kept_by_project[cand.project_path].append(cand)
        log(f"round: {n_usable()} usable task(s), {len(active)} project(s) with candidates left")

    ordered = [c for e, _ in entries for c in kept_by_project[e.project_path]]
    used = capped(ordered)
    for c in ordered:
        if c.namespace not in used:
            screening[c.namespace]["status"] = "dropped"
            screening[c.namespace]["notes"].append("comparison share: task dropped")
        else:
            c.kept = used[c.namespace]
    samples, verification, used_records = compose_all(
        [(e, [c for c in kept_by_project[e.project_path] if c.namespace in used]) for e, _ in entries],
        projects, opts.seed)
    stats = set_statistics(samples, verification)
    write_set(opts, samples, verification, used_records, screening, stats, entries, data_path, time.monotonic() - t0,
              {k: p.root for k, p in projects.items()})
    return stats


def _static_report(active: list[Any], next_candidate: Any, screening: dict[str, Any]) -> dict[str, Any]:
    """Per project: candidates that pass the static filters (no test run, nothing written)."""
    out = {}
    for entry in active:
        n = 0
        while next_candidate(entry) is not None:
            n += 1
        out[entry.project_path] = n
        log(f"{entry.project_path}: {n} candidate(s) pass the static filters")
    reasons: dict[str, int] = {}
    for s in screening.values():
        if s["status"] == "static_drop":
            key = s["notes"][-1].split(":")[0] if s["notes"] else "?"
            key = "sibling" if key.startswith("sibling") else ("too few facts" if "fact option" in key else key)
            reasons[key] = reasons.get(key, 0) + 1
    return {"static_candidates": out, "total": sum(out.values()), "screened": len(screening), "dropped": reasons}


def compose_all(groups: list[tuple[Any, list[Candidate]]], projects: dict[str, Project],
                seed: int) -> tuple[list[dict], list[dict], list[dict]]:
    """Samples, verification rows and DevEval records of every project's kept tasks."""
    plans = []
    for entry, kept in groups:
        if kept:
            plans.append([entry, kept, plan_sizes(len(kept), random.Random(f"{seed}:{entry.project_path}:sizes"))])
    if sum(len(p[2]) for p in plans) % 2:  # an even number of samples: split one sample of the largest project
        plan = max((p for p in plans if any(s > 1 for s in p[2])), key=lambda p: (len(p[2]), p[0].project_path),
                   default=None)
        if plan is not None:
            i = max(range(len(plan[2])), key=lambda k: plan[2][k])
            plan[2][i:i + 1] = [plan[2][i] - 1, 1]
    samples, verification, used = [], [], []
    counts = {"single-hop": 0, "multi-hop": 0}
    for entry, kept, sizes in plans:
        symbols = repository_symbols(projects[entry.project_path].root, {c.ref["file"] for c in kept})
        pos = 0
        for k, size in enumerate(sizes, 1):
            group, pos = kept[pos:pos + size], pos + size
            subset = "single-hop" if counts["single-hop"] <= counts["multi-hop"] else "multi-hop"
            counts[subset] += 1
            sid = f"{entry.pypi_name.lower()}-{k:02d}-{'sh' if subset == 'single-hop' else 'mh'}"
            sample, ver = compose_sample(sid, subset, entry, group, symbols, random.Random(f"{seed}:{sid}"))
            samples.append(sample)
            verification.extend(ver)
            used.extend(c.record for c in group)
    return samples, verification, used


def licence_of(root: Path) -> str | None:
    """The licence an sdist declares in PKG-INFO (``License:``, else its licence classifiers)."""
    info = root / "PKG-INFO"
    if not info.is_file():
        return None
    lines = info.read_text(encoding="utf-8", errors="replace").split("\n\n", 1)[0].splitlines()
    field = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("License:")), "")
    classifiers = [ln.split("::")[-1].strip() for ln in lines if ln.startswith("Classifier: License ::")]
    if field and field.upper() != "UNKNOWN" and len(field) <= 80:
        return field
    return "; ".join(classifiers) or (field[:80] if field else None)


def write_set(opts: Options, samples: list[dict], verification: list[dict], records: list[dict],
              screening: dict[str, Any], stats: dict[str, Any], entries: list[tuple[Any, list[str]]],
              data_path: Path, seconds: float, roots: dict[str, Path]) -> None:
    """The set's five files in ``opts.out_dir`` (each written atomically)."""
    from benchmarks.locoeval.loader import dump_samples
    from benchmarks.records import atomic_write_json, write_jsonl

    out = Path(opts.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dump_samples(samples, out / "samples.jsonl")
    write_jsonl(out / "samples.verification.jsonl", verification)
    write_jsonl(out / "deveval_tasks.jsonl", records)
    atomic_write_json(out / "screening.json", dict(sorted(screening.items())))
    used = {s["project_path"] for s in samples}
    atomic_write_json(out / "generation.json", {
        "set": SET_NAME, "seed": opts.seed, "target_tasks": opts.tasks, "min_usable": opts.min_usable,
        "max_per_project": opts.max_per_project, "filter_runs": [str(p) for p in opts.filter_runs],
        "deveval_data_sha256": hashlib.sha256(data_path.read_bytes()).hexdigest(),
        "projects": [{"project_path": e.project_path, "pypi_name": e.pypi_name, "version": e.version,
                      "usable": len(u), "in_set": e.project_path in used,
                      "licence": licence_of(roots[e.project_path]) if e.project_path in roots else None}
                     for e, u in entries],
        "statistics": stats, "seconds": round(seconds, 1)})
