"""Build LoCoEval-format samples from DevEval tasks: ``python -m scripts.build_locoeval [options] [overrides]``.

Example (the builder LLM is any backbone config; the Pass@1 filter runs the sandbox executor)::

    python -m scripts.build_locoeval --projects Utilities/boltons --max-samples 4 \\
        --out data/locoeval/samples.jsonl backbone=gpt5_mini executor=local

Options are argparse flags; trailing ``key=value`` words are Hydra overrides of conf/config.yaml
(backbone, executor, cache ...). See benchmarks/locoeval/builder.py for the pipeline.
Deterministic given --seed and the LLM response cache.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")


def _default_manifest() -> str:
    shipped = Path(__file__).resolve().parents[1] / "benchmarks" / "deveval" / "data" / "pypi_sources.json"
    return os.environ.get("DEVEVAL_SOURCES", str(shipped))


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(prog="python -m scripts.build_locoeval", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--deveval-data", default=os.environ.get("DEVEVAL_DATA", "data/deveval/data.jsonl"),
                   help="DevEval data.jsonl (env DEVEVAL_DATA)")
    p.add_argument("--sources-manifest", default=_default_manifest(), help="pypi_sources.json (env DEVEVAL_SOURCES)")
    p.add_argument("--projects", nargs="*", default=None, help="project_path or PyPI name; default: all in the manifest")
    p.add_argument("--out", default="data/locoeval/samples.jsonl")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--subsets", nargs="+", default=["single-hop", "multi-hop"], choices=["single-hop", "multi-hop"])
    p.add_argument("--max-samples", type=int, default=None, help="per project")
    p.add_argument("--max-tasks", type=int, default=None, help="usable tasks per project considered (sorted by namespace)")
    p.add_argument("--distractor-rate", type=float, default=0.3)
    p.add_argument("--no-filter", action="store_true", help="skip the retrieval-only Pass@1 filter")
    p.add_argument("--filter-k", type=int, default=10, help="repository functions in the retrieval-only prompt")
    p.add_argument("--allow-shared-tasks", action="store_true",
                   help="turn every task group into one sample per subset (the subsets then share tasks); "
                        "default: groups alternate between the subsets, a task is in at most one sample")
    return p.parse_known_args(argv)


def main(argv: list[str] | None = None) -> int:
    args, overrides = parse_args(sys.argv[1:] if argv is None else argv)
    from hydra import compose, initialize_config_dir

    from benchmarks import harness
    from benchmarks.locoeval import builder
    from benchmarks.locoeval.loader import dump_samples
    from benchmarks.locoeval.repo import blanked_copy, snapshot_root
    from reconmem.platform.llm import UsageLedger

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    for label, path in (("--deveval-data", args.deveval_data), ("--sources-manifest", args.sources_manifest)):
        if not Path(path).is_file():
            print(f"error: {label} {path} does not exist", file=sys.stderr)
            return 2
    deveval = builder.load_deveval(args.deveval_data)
    manifest = json.loads(Path(args.sources_manifest).read_text(encoding="utf-8"))
    entries = [e for e in manifest if not args.projects or e["project_path"] in args.projects or e["pypi_name"] in args.projects]
    if not entries:
        print(f"error: no manifest entry matches --projects {args.projects}", file=sys.stderr)
        return 2

    ledger = UsageLedger()
    llm = harness.build_llm(cfg.backbone, cfg, ledger)
    cache_dir = Path(str(cfg.cache.dir)).expanduser()
    all_samples = []
    for entry in entries:
        repo = builder.repo_spec_for(entry)
        root = snapshot_root(repo)
        names = builder.usable_namespaces(entry)
        if args.max_tasks:
            names = sorted(names)[: args.max_tasks]
        tasks = [builder.read_task(root, deveval[n], repo) for n in names if n in deveval]
        solves = None
        if not args.no_filter:
            solves = _make_filter(cfg, args, llm, root, tasks, cache_dir, entry["project_path"], blanked_copy)
        topics = builder.repository_functions(root, exclude=[t.namespace for t in tasks])
        samples = builder.build_project_samples(llm, tasks, seed=args.seed, subsets=args.subsets, solves=solves,
                                                parallel_topics=topics, distractor_rate=args.distractor_rate,
                                                max_samples=args.max_samples, log=lambda m: print(m, file=sys.stderr),
                                                allow_shared_tasks=args.allow_shared_tasks)
        print(f"{entry['project_path']}: {len(tasks)} usable tasks -> {len(samples)} samples", file=sys.stderr)
        all_samples.extend(samples)
    shared = builder.shared_tasks(all_samples)
    if shared and not args.allow_shared_tasks:
        print(f"error: tasks used in more than one sample: {shared}", file=sys.stderr)
        return 1
    dump_samples(all_samples, args.out)
    totals = ledger.totals(by=("purpose",))
    print(json.dumps({"out": args.out, "samples": len(all_samples), "shared_tasks": len(shared), "llm": totals},
                     indent=2, default=str))
    return 0


def _make_filter(cfg, args, llm, root, tasks, cache_dir, project_path, blanked_copy):
    """The retrieval-only Pass@1 filter over a blanked copy holding every candidate task."""
    from benchmarks import harness
    from benchmarks.deveval.evaluate import evaluate_completion
    from benchmarks.locoeval.builder import retrieval_only_solves
    from benchmarks.sandbox import build_executor
    from reconmem.platform.code import RepositoryIndex

    blanked = blanked_copy(root, [(t.namespace, t.completion_path) for t in tasks], cache_dir=cache_dir,
                           project_path=project_path,
                           hidden_files=sorted({test.split("::", 1)[0] for t in tasks for test in t.tests}))
    index = RepositoryIndex.build(blanked)
    embedder = harness.build_embedder(cfg)
    executor = build_executor(cfg.executor)

    def solves(task) -> bool:
        return retrieval_only_solves(
            task, llm=llm, index=index, embedder=embedder, k=args.filter_k,
            evaluate=lambda ns, text: evaluate_completion(ns, text, repo_spec=task.repo, executor=executor,
                                                          manifest=args.sources_manifest))

    return solves


if __name__ == "__main__":
    sys.exit(main())
