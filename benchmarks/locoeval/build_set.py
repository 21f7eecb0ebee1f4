"""A LoCoEval-format sample set from DevEval tasks over a manifest's projects
(``python -m scripts.build_locoeval``): per project, the :mod:`benchmarks.locoeval.builder`
pipeline over its usable tasks, with the retrieval-only Pass@1 filter run in the sandbox executor.
Deterministic given the seed and the LLM response cache.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from benchmarks import harness
from benchmarks.locoeval import builder
from benchmarks.locoeval.repo import blanked_copy, snapshot_root


@dataclass
class BuildOptions:
    """The command's options (see ``scripts/build_locoeval.py``)."""

    deveval_data: str
    sources_manifest: str
    projects: list[str] | None = None
    seed: int = 0
    subsets: list[str] = field(default_factory=lambda: ["single-hop", "multi-hop"])
    max_samples: int | None = None
    max_tasks: int | None = None
    distractor_rate: float = 0.3
    no_filter: bool = False
    filter_k: int = 10
    allow_shared_tasks: bool = False


def manifest_entries(manifest_path: str | Path, projects: list[str] | None) -> list[dict[str, Any]]:
    """The manifest's entries whose ``project_path`` or ``pypi_name`` is in ``projects`` (all when None)."""
    manifest = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    return [e for e in manifest if not projects or e["project_path"] in projects or e["pypi_name"] in projects]


def build_samples(cfg: Any, opts: BuildOptions, entries: list[dict[str, Any]], llm: Any,
                  log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> list[Any]:
    """Every entry's samples, in manifest order (``llm``: the builder backbone's client)."""
    deveval = builder.load_deveval(opts.deveval_data)
    cache_dir = Path(str(cfg.cache.dir)).expanduser()
    all_samples = []
    for entry in entries:
        repo = builder.repo_spec_for(entry)
        root = snapshot_root(repo)
        names = builder.usable_namespaces(entry)
        if opts.max_tasks:
            names = sorted(names)[: opts.max_tasks]
        tasks = [builder.read_task(root, deveval[n], repo) for n in names if n in deveval]
        solves = None
        if not opts.no_filter:
            solves = pass_at_1_filter(cfg, opts, llm, root, tasks, cache_dir, entry["project_path"])
        topics = builder.repository_functions(root, exclude=[t.namespace for t in tasks])
        samples = builder.build_project_samples(llm, tasks, seed=opts.seed, subsets=opts.subsets, solves=solves,
                                                parallel_topics=topics, distractor_rate=opts.distractor_rate,
                                                max_samples=opts.max_samples, log=log,
                                                allow_shared_tasks=opts.allow_shared_tasks)
        log(f"{entry['project_path']}: {len(tasks)} usable tasks -> {len(samples)} samples")
        all_samples.extend(samples)
    return all_samples


def pass_at_1_filter(cfg: Any, opts: BuildOptions, llm: Any, root: Path, tasks: list[Any], cache_dir: Path,
                     project_path: str) -> Callable[[Any], bool]:
    """The retrieval-only Pass@1 filter over a blanked copy holding every candidate task."""
    from benchmarks.deveval.evaluate import evaluate_completion
    from benchmarks.sandbox import build_executor
    from reconmem.platform.code import RepositoryIndex

    blanked = blanked_copy(root, [(t.namespace, t.completion_path) for t in tasks], cache_dir=cache_dir,
                           project_path=project_path,
                           hidden_files=sorted({test.split("::", 1)[0] for t in tasks for test in t.tests}))
    index = RepositoryIndex.build(blanked)
    embedder = harness.build_embedder(cfg)
    executor = build_executor(cfg.executor)

    def solves(task) -> bool:
        return builder.retrieval_only_solves(
            task, llm=llm, index=index, embedder=embedder, k=opts.filter_k,
            evaluate=lambda ns, text: evaluate_completion(ns, text, repo_spec=task.repo, executor=executor,
                                                          manifest=opts.sources_manifest))

    return solves
