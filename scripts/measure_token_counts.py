"""Measure how far the client's token counts are off per backbone family, on the harness's real prompts.

    python -m scripts.measure_token_counts [--out results/reference/token_counts.json] [--limit N]

Compares litellm's count (what the client uses) with each family's own tokenizer where one is
available offline (qwen, deepseek, openai; "other" bounded by cl100k_base) over LoCoEval
conversations, CAB maintainer requests, the methods' memory prompts and whole boltons modules, and
derives each family's reserve. Prompts and method: :mod:`benchmarks.token_counts`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.token_counts import ROOT, measure, report_lines  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "results" / "reference" / "token_counts.json"))
    parser.add_argument("--limit", type=int, default=None, help="LoCoEval samples to use (default: all 48)")
    args = parser.parse_args(argv)
    report = measure(args.limit)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print("\n".join(report_lines(report)))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
