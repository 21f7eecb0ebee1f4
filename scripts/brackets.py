"""``make brackets``: the floor and ceiling of memory on any LoCoEval-format set, in one command.

    python -m scripts.brackets backbone=gpt5_mini                                  # the verified set
    python -m scripts.brackets backbone=deepseek_v32 benchmark=locoeval benchmark.samples=PATH
    python -m scripts.brackets backbone=qwen3_235b run.dry_run=true                # the cost, no call

Runs ``no_memory`` (floor) and ``oracle_context`` (ceiling) through the one run loop, exactly as
``python -m scripts.run method=<bracket> ...`` would (records under
``results/<benchmark>/<backbone>/<bracket>/<run_id>``, run id ``brackets`` unless given; a second
invocation resumes), then prints floor, ceiling and memory headroom per subset from the records
(:mod:`benchmarks.analysis.brackets`; only the samples each run selected: records left in a run directory
by an earlier ``run.ids`` are named in a note and left out). Both skip the preparation replies: one model call per task.
Extra arguments are Hydra overrides applied to both runs; the benchmark defaults to
``locoeval_fork`` (the fork set, issue 34). With ``run.repeat=K`` each bracket runs K times (run ids ``<run_id>-r<i>``)
and the table pairs repeat i of the floor with repeat i of the ceiling. With ``run.dry_run=true`` it
prints each bracket's estimate and their sum (over the repeats too).
Exit status: 0, 1 when a sample errored, 2 on a configuration or data problem.
"""

from __future__ import annotations

import sys

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

DEFAULTS = ("benchmark=locoeval_fork", "run.run_id=brackets")


def overrides_for(argv: list[str]) -> list[str]:
    """The user's overrides with the defaults of a bracket run in front of those not given."""
    given = {a.split("=", 1)[0].lstrip("+~") for a in argv if "=" in a}
    return [d for d in DEFAULTS if d.split("=", 1)[0] not in given] + list(argv)


def run_summaries(summary: dict) -> list[dict]:
    """The summaries of a run's directories: each repeat's for ``run.repeat=K``, else the summary itself."""
    return list(summary.get("repeats") or [summary])


def format_total(estimates: list[dict]) -> str:
    """One line summing the brackets' dry-run estimates (None when one is uncalibrated)."""
    if any(e.get("cost_usd") is None for e in estimates):
        return "both brackets: no total (a bracket has no calibration run; see its lines above)"
    calls = sum(e["calls"] for e in estimates)
    tin, tout = sum(e["input_tokens"] for e in estimates), sum(e["output_tokens"] for e in estimates)
    cost = sum(e["cost_usd"] for e in estimates)
    return f"both brackets: {calls:.1f} calls, {tin:,} input tokens, {tout:,} output tokens, {cost:.4f} USD"


def main(argv: list[str] | None = None) -> int:
    from hydra import compose, initialize_config_dir

    from benchmarks.analysis import brackets
    from benchmarks.analysis.records import load_runs
    from benchmarks.analysis.run_records import SCRIPTED_MARK
    from benchmarks.errors import ConfigError
    from scripts.run import CONFIG_DIR, precheck, run

    base = overrides_for(list(sys.argv[1:] if argv is None else argv))
    summaries = {}
    for method in brackets.BRACKETS:
        problem = precheck([*base, f"method={method}"])
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        for method in brackets.BRACKETS:
            cfg = compose("config", overrides=[*base, f"method={method}"])
            print(f"brackets: {method} on {cfg.benchmark.name} with backbone={cfg.backbone.name} "
                  f"(run id {cfg.run.run_id})", flush=True)
            try:
                summaries[method] = run(cfg)
            except ConfigError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            benchmark = str(cfg.benchmark.name)
    dirs = [s for summary in summaries.values() for s in run_summaries(summary)]
    if any(s.get("dry_run") for s in dirs):
        print(format_total([s["estimate"] for s in dirs]))
        return 0
    runs = load_runs([s["run_dir"] for s in dirs])
    table = brackets.brackets_table(runs.tasks_frame(benchmark), names=runs.labels,
                                    outside=runs.outside_selection_frame(benchmark))
    if runs.scripted_runs:
        table.mark(SCRIPTED_MARK)
    print()
    print(table.to_markdown())
    for method, summary in summaries.items():
        for s in run_summaries(summary):
            pending = (f"; {s['n_pending']} pending, counted as failed until answered: python -m scripts.exchange "
                       f"status {s.get('run_dir')}" if s.get("n_pending") else "")
            print(f"{method}: {s.get('run_dir')} ({s.get('n_errored', 0)} errored sample(s){pending})")
    return 1 if any(s.get("n_errored") for s in dirs) else 0


if __name__ == "__main__":
    sys.exit(main())
