"""Prompt and memory tokens of every method on one identical scripted conversation.

The bench itself is :mod:`benchmarks.perf.method_tokens`.
"""

from __future__ import annotations

import argparse
import sys

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.perf.method_tokens import CONVERSATION, METHODS, REPO_ROOT, run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    argv = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--tokens"]
    parser = argparse.ArgumentParser(prog="python -m scripts.bench methods --tokens", description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma list (default: {','.join(METHODS)})")
    parser.add_argument("--turns", type=int, default=len(CONVERSATION), help="turns of the scripted conversation (max 20)")
    parser.add_argument("--backbone", default=str(REPO_ROOT / "conf" / "backbone" / "local.yaml"), help="backbone config file")
    parser.add_argument("--repo-context-k", type=int, default=10, help="unified repository adaptation (LoCoEval: 10; 0 = off)")
    parser.add_argument("--no-cache", action="store_true", help="do not use the LLM response cache")
    parser.add_argument("--out", default=None, help="also write the rows as JSON to this file")
    args = parser.parse_args(argv)
    if not 1 <= args.turns <= len(CONVERSATION):
        parser.error(f"--turns must be in 1..{len(CONVERSATION)}")

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
