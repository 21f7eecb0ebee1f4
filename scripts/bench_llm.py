"""``python -m scripts.bench llm``: generation speed of a backbone and the response-cache speed-up.

The bench itself is :mod:`benchmarks.perf.llm`.
"""

from __future__ import annotations

import argparse

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.perf.llm import run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench llm", description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="local", help="conf/backbone/<name>.yaml or a YAML path (default: local)")
    parser.add_argument("--max-tokens", type=int, default=128, help="output tokens to generate (default 128)")
    parser.add_argument("--threads", default=None, help="override backbone.local.threads (an integer or auto)")
    parser.add_argument("--n-ctx", type=int, default=None, help="override backbone.local.n_ctx")
    args = parser.parse_args(argv)

    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
