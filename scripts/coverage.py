"""Judge GT-item coverage of ReConMem's task contexts (paper §4.4) and write ``coverage.json`` per sample.

    python -m scripts.coverage --runs results/locoeval --judge-backbone gemini_25_flash   # the paper's judge
    python -m scripts.coverage --runs results/locoeval cache.dir=/tmp/cache      # extra Hydra overrides

For every ok sample of the selected LoCoEval(-format) runs (default: method ``reconmem``) and every
task, the original-query, dual-query and combined views of the recorded task context are judged
by ``judge_backbone`` (one call per view, purpose ``coverage_judge``, SQLite-cached like every call).
GT items come from the sample file named in the run's ``config.yaml`` (``benchmark.samples``) or
``--samples``. The judge prompt has eight synthetic examples as in the paper (``--prompt-version 2``, default;
``--prompt-version 1`` = the earlier two-example prompt, byte-identical, so its cached judgments
replay). Samples already judged with the same judge model, prompt version and views version are skipped
(``--overwrite`` re-judges; re-judging unchanged views costs nothing, the judge calls are cached).
How: :mod:`benchmarks.locoeval.coverage_judge` (a scorer step over finished runs). Afterwards ``make report``
draws Figure 6 from the written ``coverage.json`` files.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

CONFIG_DIR = Path(__file__).resolve().parents[1] / "conf"


def compose(judge_backbone: str | None, overrides: list[str]) -> Any:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    extra = ([f"backbone@judge_backbone={judge_backbone}"] if judge_backbone else []) + overrides
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return hydra_compose("config", overrides=extra)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.coverage", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", required=True, help="results roots or run directories")
    parser.add_argument("--judge-backbone", default=None, help="a conf/backbone name (default: the config's judge_backbone)")
    parser.add_argument("--methods", nargs="+", default=["reconmem"], help="methods to judge (default: reconmem)")
    parser.add_argument("--samples", default=None, help="LoCoEval samples JSONL (default: each run's benchmark.samples)")
    parser.add_argument("--overwrite", action="store_true", help="re-judge samples that already have coverage.json")
    parser.add_argument("--limit", type=int, default=None, help="judge at most N samples (smoke runs)")
    parser.add_argument("--prompt-version", default=None, choices=["1", "2"],
                        help="judge prompt: 2 = eight synthetic examples as in the paper (default), 1 = the earlier two")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. cache.dir=/tmp/c judge_backbone.max_output_tokens=2048")
    args = parser.parse_args(argv)
    # `--runs a b key=value`: the greedy --runs list swallows trailing Hydra overrides; hand them back.
    moved = [r for r in args.runs if "=" in r and not Path(r).exists()]
    args.runs = [r for r in args.runs if r not in moved]
    args.overrides = [*moved, *args.overrides]
    if not args.runs:
        parser.error("--runs needs at least one results directory")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")

    from benchmarks.clients import RoleClients
    from benchmarks.errors import ConfigError
    from benchmarks.locoeval.coverage_judge import PROMPT_VERSION, CoverageJudge, check_judge, judge_runs
    from benchmarks.records import RecordError
    from reconmem.platform.llm import UsageLedger

    try:
        cfg = compose(args.judge_backbone, args.overrides)
        judge_model = str(cfg.judge_backbone.model)
        check_judge(cfg)
        ledger = UsageLedger()
        llm = RoleClients(cfg, ledger).judge
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # hydra composition errors: keep one line
        print(f"error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
        return 2
    prompt_version = f"coverage-v{args.prompt_version}" if args.prompt_version else PROMPT_VERSION
    judge = CoverageJudge(llm, max_tokens=int(cfg.judge_backbone.max_output_tokens), prompt_version=prompt_version)
    try:
        counts = judge_runs(judge, ledger, args.runs, judge_model=judge_model, judge_name=str(cfg.judge_backbone.name),
                            methods=args.methods, samples=args.samples, overwrite=args.overwrite, limit=args.limit)
    except (RecordError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"coverage: judged {counts.judged} sample(s), skipped {counts.skipped} already judged, {counts.failed} failed")
    return 1 if counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
