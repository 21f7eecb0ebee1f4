"""The exchange: what an exchange run waits for, and taking the answers back (docs/exchange.md).

    python -m scripts.exchange status RUN [--paths]       # waiting requests per run and sample
    python -m scripts.exchange import RUN [FILE|DIR]      # answers: Batch output JSONL, or <id>.md files
    python -m scripts.exchange submit RUN --backbone NAME # to the provider's batch API (scripts/exchange_batch.py)
    python -m scripts.exchange collect RUN [--wait]       # poll the batches, import the finished ones' answers

RUN is a run directory (``results/<benchmark>/<backbone>/<method>/<run_id>``) or a directory above
several (every run with an exchange folder below it). ``import`` without FILE|DIR reads each run's
own ``exchange/answers/``. After an import, re-run the same ``scripts.run`` / ``scripts.brackets``
command: each pending sample continues from the cache. Exit status: 0; 1 when an answer was
rejected (one ``error:`` line each, naming the file and line; the other answers are imported);
2 on a bad path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.exchange import import_into, import_lines, status_lines, waiting  # noqa: E402
from benchmarks.records.files import RecordError  # noqa: E402


def _status(args: argparse.Namespace) -> int:
    print("\n".join(status_lines(waiting(args.run), paths=args.paths)))
    return 0


def _import(args: argparse.Namespace) -> int:
    if args.source is not None and not args.source.exists():
        print(f"exchange: {args.source}: no such file or directory", file=sys.stderr)
        return 2
    reports = import_into(args.run, args.source)
    print("\n".join(import_lines(reports)))
    return 1 if any(report.errors for _, report in reports) else 0


def parser() -> argparse.ArgumentParser:
    """The command line (subcommands: status, import, submit, collect)."""
    p = argparse.ArgumentParser(prog="python -m scripts.exchange", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    status = sub.add_parser("status", help="what waits for an answer, per run and sample")
    status.add_argument("run", type=Path, help="a run directory or a directory above several")
    status.add_argument("--paths", action="store_true", help="print only the markdown path of each waiting request")
    status.set_defaults(func=_status)
    imp = sub.add_parser("import", help="import answers (Batch output JSONL, or <id>.md files)")
    imp.add_argument("run", type=Path, help="a run directory or a directory above several")
    imp.add_argument("source", type=Path, nargs="?", default=None,
                     help="a Batch output JSONL file, a directory of <id>.md files or one such file "
                          "(default: each run's exchange/answers/)")
    imp.set_defaults(func=_import)
    from scripts import exchange_batch  # submit / collect: provider batch APIs

    exchange_batch.add_parsers(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.run.exists():
        print(f"exchange: {args.run}: no such file or directory", file=sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except RecordError as exc:
        print(f"exchange: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
