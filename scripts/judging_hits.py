"""Count task-phase contexts that contained a judging test, per LoCoEval run.

    python -m scripts.judging_hits RUN_DIR [RUN_DIR ...] [--samples PATH] [--json]

A RUN_DIR is ``results/<benchmark>/<backbone>/<method>/<run_id>``; a context *hits* when one of its
code items is, contains or lies inside a test that judges the sample's tasks (``own``: the task
being generated; ``any``: any task of the sample). The samples come from the run's ``config.yaml``
(``benchmark.samples``) unless ``--samples`` is given. How: :mod:`benchmarks.analysis.judging_hits`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.analysis.judging_hits import count_run, load_samples_by_id, run_config, table_lines  # noqa: E402
from benchmarks.records import RunDir  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.judging_hits", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, help="LoCoEval run directories")
    parser.add_argument("--samples", help="sample file (default: benchmark.samples of each run's config.yaml)")
    parser.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    args = parser.parse_args(argv)
    rows = []
    cache: dict[str, dict[str, Any]] = {}
    for run in args.run_dirs:
        if not RunDir(run).samples_path.is_dir():
            print(f"judging_hits: {run}: not a run directory (no samples/)", file=sys.stderr)
            return 2
        spec = args.samples or str(((run_config(run).get("benchmark") or {}).get("samples")) or "")
        if not spec:
            print(f"judging_hits: {run}: no benchmark.samples in config.yaml; pass --samples", file=sys.stderr)
            return 2
        if spec not in cache:
            cache[spec] = load_samples_by_id(spec)
        rows.append(count_run(run, cache[spec]))
    print(json.dumps(rows, indent=1) if args.json else "\n".join(table_lines(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
