"""Check a scripted LoCoEval sample set against its verification file: oracle checks (test runs),
grounding / stated / revised, and the validity figures (what a method could guess).

    python -m scripts.validate_locoeval --samples PATH [--verification PATH] [--deveval-data PATH]
                                        [--manifest PATH] [--workers 1] [--executor local] [--static-only]
                                        [--figures-only] [--ids SAMPLE_ID ...] [--resume FILE]

Prints one ``FAIL <sample>/<req> <namespace>: <check>: <problem>`` line per failing check, the
validity figures per fact kind, then the summary line; exit status 1 on any failure, 2 on unusable
input. The checks are described in ``benchmarks/locoeval/verified/validate.py`` and docs/locoeval.md.

A fork set (a ``forks.jsonl`` beside the samples, or ``--forks``) gets the fork set's checks instead
(``benchmarks.locoeval.fork.validate_set``: the fork body passes twice with the sample's
other forks in place, the public, blank, constant (``return None``, ``return False``, ...) and
distractor-following bodies fail, an alternative-shaped
fork body passes, no fork fragment in the indexed snapshot, every test file the fork fails hidden).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reconmem.platform.offline_env import set_offline_env

set_offline_env()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.validate_locoeval", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", required=True, type=Path, help="samples .jsonl/.json")
    ap.add_argument("--verification", type=Path, default=None, help="default: <dir>/<stem>.verification.jsonl")
    ap.add_argument("--deveval-data", type=Path, default=None,
                    help="DevEval records (default: deveval_tasks.jsonl beside the samples, else the fetched data.jsonl)")
    ap.add_argument("--manifest", type=Path, default=None,
                    help="pypi_sources.json (default: a fork set's sources.json beside forks.jsonl, else the shipped one)")
    ap.add_argument("--executor", choices=["local", "docker"], default="local")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test run")
    ap.add_argument("--static-only", action="store_true", help="skip the test runs")
    ap.add_argument("--figures-only", action="store_true",
                    help="report the validity checks (literal, docstring, sibling, edit, compare-share) without "
                         "counting them as failures (e.g. for the first verified set)")
    ap.add_argument("--ids", nargs="*", default=None, help="check only these sample ids")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    ap.add_argument("--forks", type=Path, default=None,
                    help="fork records: validate a fork set (default: forks.jsonl beside the samples, when present)")
    ap.add_argument("--resume", type=Path, default=None,
                    help="append-only outcome file (JSONL): pass / fail outcomes recorded there are not run again, "
                         "so an interrupted validation continues where it stopped")
    args = ap.parse_args(argv)

    from benchmarks.locoeval.verified.validate import ValidateOptions, validate, verification_path

    if not args.samples.is_file():
        print(f"error: --samples {args.samples} does not exist", file=sys.stderr)
        return 2
    vpath = args.verification or verification_path(args.samples)
    if not vpath.is_file():
        print(f"error: verification file {vpath} does not exist (--verification)", file=sys.stderr)
        return 2
    forks = args.forks or (args.samples.parent / "forks.jsonl")
    if args.forks and not forks.is_file():
        print(f"error: --forks {forks} does not exist", file=sys.stderr)
        return 2
    opts = ValidateOptions(samples=args.samples, verification=vpath, deveval_data=args.deveval_data,
                           manifest=args.manifest, executor=args.executor, workers=args.workers,
                           timeout=args.timeout, static_only=args.static_only,
                           enforce_validity=not args.figures_only, ids=args.ids, quiet=args.quiet, resume=args.resume,
                           forks=forks if forks.is_file() else None)
    if opts.forks is not None:
        from benchmarks.locoeval.fork.validate_set import validate_set

        return _print_report(validate_set, opts)
    return _print_report(validate, opts)


def _print_report(check: Callable[[Any], tuple[list[str], int]], opts: Any) -> int:
    """Run ``check(opts)`` and print its report lines; a bad input is one error line (status 2)."""
    try:
        lines, status = check(opts)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main())
