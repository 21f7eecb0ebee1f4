"""Build LoCoEval-format samples from DevEval tasks: ``python -m scripts.build_locoeval [options] [overrides]``.

Example (the builder LLM is any backbone config; the Pass@1 filter runs the sandbox executor)::

    python -m scripts.build_locoeval --projects Utilities/boltons --max-samples 4 \\
        --out data/locoeval/samples.jsonl backbone=gpt5_mini executor=local

Options are argparse flags; trailing ``key=value`` words are Hydra overrides of conf/config.yaml
(backbone, executor, cache ...). See benchmarks/locoeval/builder.py for the pipeline and
benchmarks/locoeval/build_set.py for the projects' loop. Deterministic given --seed and the LLM
response cache.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")
SHIPPED_MANIFEST = Path(__file__).resolve().parents[1] / "benchmarks" / "deveval" / "data" / "pypi_sources.json"


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(prog="python -m scripts.build_locoeval", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--deveval-data", default=os.environ.get("DEVEVAL_DATA", "data/deveval/data.jsonl"),
                   help="DevEval data.jsonl (env DEVEVAL_DATA)")
    p.add_argument("--sources-manifest", default=os.environ.get("DEVEVAL_SOURCES", str(SHIPPED_MANIFEST)),
                   help="pypi_sources.json (env DEVEVAL_SOURCES)")
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
    from benchmarks.locoeval.build_set import BuildOptions, build_samples, manifest_entries
    from benchmarks.locoeval.builder import shared_tasks
    from benchmarks.locoeval.loader import dump_samples
    from reconmem.platform.llm import UsageLedger

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    for label, path in (("--deveval-data", args.deveval_data), ("--sources-manifest", args.sources_manifest)):
        if not Path(path).is_file():
            print(f"error: {label} {path} does not exist", file=sys.stderr)
            return 2
    entries = manifest_entries(args.sources_manifest, args.projects)
    if not entries:
        print(f"error: no manifest entry matches --projects {args.projects}", file=sys.stderr)
        return 2
    ledger = UsageLedger()
    opts = BuildOptions(**{k: v for k, v in vars(args).items() if k != "out"})
    all_samples = build_samples(cfg, opts, entries, harness.build_llm(cfg.backbone, cfg, ledger))
    shared = shared_tasks(all_samples)
    if shared and not args.allow_shared_tasks:
        print(f"error: tasks used in more than one sample: {shared}", file=sys.stderr)
        return 1
    dump_samples(all_samples, args.out)
    totals = ledger.totals(by=("purpose",))
    print(json.dumps({"out": args.out, "samples": len(all_samples), "shared_tasks": len(shared), "llm": totals},
                     indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
