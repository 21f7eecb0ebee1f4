"""``make demo``: ReConMem and Full History on a demo conversation with the offline model.

Runs both methods through the same entry point as ``python -m scripts.run experiment=demo_one_task``
(one single-hop conversation over boltons, 4 scripted turns, one DevEval task; records under
``results/demo_one_task/<backbone>/<method>/demo``; a second invocation resumes from the records and
the LLM cache), then prints Pass@1, CR and tokens per method, the time split and the machine's load.
``--quick`` runs ``experiment=demo_quick`` (two conversations, one per subset, 4 tasks, 8 turns
each); ``--full`` (``make demo-full``) ``experiment=demo`` (all three demo samples, 12 turns each).
Other arguments are Hydra overrides, e.g. ``python -m scripts.demo backbone=local_1_5b``.
"""

from __future__ import annotations

import os
import sys
import time

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

METHODS = ("full", "reconmem")  # Full first: ReConMem's CR needs the Full run's input tokens
DEFAULT_EXPERIMENT = "demo_one_task"  # conf/experiment/<name>.yaml
EXPERIMENTS = {"--quick": "demo_quick", "--full": "demo"}  # flag -> experiment


def main(argv: list[str] | None = None) -> int:
    from hydra import compose, initialize_config_dir

    from benchmarks.analysis.demo_summary import summary_lines, time_split
    from benchmarks.errors import ConfigError
    from scripts.run import CONFIG_DIR, precheck, run

    overrides = list(sys.argv[1:] if argv is None else argv)
    flags = [o for o in overrides if o in EXPERIMENTS]
    experiment = EXPERIMENTS[flags[-1]] if flags else DEFAULT_EXPERIMENT
    overrides = [o for o in overrides if o not in EXPERIMENTS]
    base = [f"experiment={experiment}", *overrides]  # conf/experiment/: demo samples, local model, budgets
    problem = precheck(base)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    summaries: dict[str, dict] = {}
    t0 = time.perf_counter()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        for method in METHODS:
            cfg = compose("config", overrides=[*base, f"method={method}"])
            print(f"demo: running {method} on {cfg.benchmark.name} with backbone={cfg.backbone.name}", flush=True)
            try:
                summaries[method] = run(cfg)
            except ConfigError as exc:  # config / data problem: one line, as scripts.run
                print(f"error: {exc}", file=sys.stderr)
                return 2
    wall = time.perf_counter() - t0
    full_dir = summaries["full"]["run_dir"]
    print()
    print("\n".join(summary_lines(summaries, METHODS)))
    print()
    for method in METHODS:
        print(time_split(method, summaries[method]["run_dir"]))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\ndemo: wall time {wall:.0f} s ({experiment}; load average {load} on {os.cpu_count()} cores); records in {os.path.dirname(os.path.dirname(full_dir))}/<method>/demo")
    return 0 if all(not s.get("errors") for s in summaries.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
