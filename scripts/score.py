"""Re-score a finished run without re-running it: one named scorer over its records.

    python -m scripts.score RUN_DIR [RUN_DIR ...] --scorer pass_at_1
    python -m scripts.score results/locoeval/gpt5_mini/reconmem/main --scorer coverage_judge \\
        backbone@judge_backbone=gemini_25_flash
    python -m scripts.score RUN_DIR --scorer my_scorers.py:answer_length --option min_chars=10
    python -m scripts.score --list

A scorer is a registered name (``--list``), ``package.module:function`` or ``path/to/file.py:function``
(:mod:`benchmarks.scoring`); its result goes to ``RUN_DIR/scores/<name>.json``. Trailing
``key=value`` arguments are Hydra overrides of the config a model-calling scorer builds its clients
from (``conf/config.yaml``). Exit 0 when every run was scored, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

CONFIG_DIR = Path(__file__).resolve().parents[1] / "conf"


def compose(overrides: list[str]) -> Any:
    """``conf/config.yaml`` with ``overrides``."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return hydra_compose("config", overrides=overrides)


def _options(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option {pair}: expected key=value")
        out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.score", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", help="run directories, then Hydra overrides (key=value)")
    parser.add_argument("--scorer", help="a registered name, module:function or path/to/file.py:function")
    parser.add_argument("--option", action="append", default=[], help="key=value handed to the scorer (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the registered scorers")
    args = parser.parse_intermixed_args(argv)

    from benchmarks.errors import ConfigError
    from benchmarks.records import RecordError
    from benchmarks.scoring import SCORERS, score_run

    if args.list:
        for name, target in sorted(SCORERS.items()):
            print(f"{name}\t{target}")
        return 0
    overrides = [r for r in args.runs if "=" in r and not Path(r).exists()]
    runs = [r for r in args.runs if r not in overrides]
    if not runs or not args.scorer:
        parser.error("give at least one RUN_DIR and --scorer NAME (or --list)")
    try:
        options = _options(args.option)
        cfg = compose(overrides)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # hydra composition errors: keep one line
        print(f"error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
        return 2
    for run in runs:
        try:
            payload = score_run(run, args.scorer, options=options, cfg=cfg)
        except (ConfigError, RecordError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"{Path(run) / 'scores' / (payload['scorer'] + '.json')}: {json.dumps(payload['result'], default=str)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
