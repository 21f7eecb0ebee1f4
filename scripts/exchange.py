"""The exchange: what an exchange run waits for, and taking the answers back (docs/exchange.md).

    python -m scripts.exchange status RUN [--paths]       # waiting requests per run and sample
    python -m scripts.exchange import RUN [FILE|DIR]      # answers: Batch output JSONL, or <id>.md files
    python -m scripts.exchange submit RUN --backbone NAME # to the provider's batch API (scripts/exchange_batch.py)
    python -m scripts.exchange collect RUN [--wait]       # poll the batches, import the finished ones' answers
    python -m scripts.exchange pack RUN --out DIR [--samples FILE] [--seed N]   # packets for several answerers
    python -m scripts.exchange unpack REPLY --packets DIR --packet NAME          # one answerer's reply -> answers/

``pack`` deals the waiting requests into packets with at most one request per repository (the
samples file's ``project_path``; without ``--samples``, per sample), so a task's floor and ceiling
prompts and two tasks of one repository never reach the same answerer (benchmarks/exchange_packets.py).

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
from benchmarks.exchange_packets import PACKETS_INDEX, pack, unpack  # noqa: E402
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


def _pack(args: argparse.Namespace) -> int:
    packets = pack(args.run, args.out, samples_file=args.samples, seed=args.seed)
    for p in packets:
        print(f"{args.out / (p.name + '.md')}: {len(p.requests)} request(s) from {len(p.groups)} group(s)")
    print(f"{sum(len(p.requests) for p in packets)} request(s) in {len(packets)} packet(s); index {args.out / PACKETS_INDEX}")
    return 0


def _unpack(args: argparse.Namespace) -> int:
    written = unpack(args.reply, args.packets, args.packet)
    print(f"{args.reply}: {len(written)} answer(s) written; then: python -m scripts.exchange import RUN")
    return 0


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
    pk = sub.add_parser("pack", help="deal the waiting requests into packets, one request per repository each")
    pk.add_argument("run", type=Path, help="a run directory or a directory above several")
    pk.add_argument("--out", type=Path, required=True, help="directory for the packet files and packets.json")
    pk.add_argument("--samples", type=Path, default=None, help="samples JSONL: groups by each sample's project_path")
    pk.add_argument("--seed", type=int, default=0, help="seed of the dealing order")
    pk.set_defaults(func=_pack)
    up = sub.add_parser("unpack", help="split one answerer's reply (<<<ANSWER id ... ANSWER>>> blocks) into answers/")
    up.add_argument("reply", type=Path, help="the answerer's reply file")
    up.add_argument("--packets", type=Path, required=True, help="the directory `pack` wrote")
    up.add_argument("--packet", required=True, help="the packet the reply answers (e.g. packet_01)")
    up.set_defaults(func=_unpack, run=None)
    from scripts import exchange_batch  # submit / collect: provider batch APIs

    exchange_batch.add_parsers(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    path = args.run if args.run is not None else args.reply
    if not path.exists():
        print(f"exchange: {path}: no such file or directory", file=sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except RecordError as exc:
        print(f"exchange: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
