"""Build the fork set (verified set v3): screen DevEval tasks into fork tasks, count the losses.

    python -m scripts.build_fork_set screen [--projects NAME ...] [--limit N] [--out FILE] [--timeout 120]
                                            [--v2-only] [--max-changes 3] [--max-tries 8] [--retry-errors]
                                            [--namespaces-file FILE]
    python -m scripts.build_fork_set sites [--projects NAME ...] [--limit N] [--out FILE]
    python -m scripts.build_fork_set counts [--out FILE]
    python -m scripts.build_fork_set show NAMESPACE [--out FILE]
    python -m scripts.build_fork_set ship --screen FILE [--set-dir DIR] [--deveval-data FILE] [--releases FILE]
    python -m scripts.build_fork_set compose --screen FILE [--seed N] [--set-dir DIR] [--deveval-data FILE] [--no-check]
    python -m scripts.build_fork_set releases --screen FILE [--screen FILE2] --out FILE [--projects NAME ...]

``screen`` appends one JSON line per task to ``--out`` (default ``<cache>/locoeval_fork/screen.jsonl``)
and skips the tasks already there, so an interrupted screening resumes by running the same command.
Candidates: the tasks of the verified set v2 with a consequential site first, then every usable
task of the selected manifest projects (their DevEval records from v2's shipped copy, and from
DevEval's data.jsonl -- ``--deveval-data`` or ``$RECONMEM_DEVEVAL_DATA`` -- when present).
A new catalogue or derivation version carries a task's row forward without a test run when nothing it
depends on changed (``benchmarks.locoeval.fork.screen``, "Carry-forward"). ``sites`` is the dry
estimate (no test run): how many candidates have a catalogue change that passes the static filters,
per kind and repository, and how many the next ``screen`` would carry forward or screen.
``counts`` prints how many tasks reached each step and why the others were lost; ``show`` prints a
task's latest row for review: its changes with the user's statements, the test diffs, the checks.
``ship`` writes the validated tasks of a results file into the set directory (default
``benchmarks/locoeval/fork/set/``): ``forks.jsonl``, ``deveval_tasks.jsonl``, ``SOURCE.md``
(``benchmarks/locoeval/fork/ship.py``).
``compose`` writes the conversations of those tasks into the set directory: ``samples.jsonl``,
``samples.verification.jsonl``, ``generation.json`` (seeded, deterministic; a counterfactual distractor
whose body passes the fork's tests is left out unless ``--no-check``; ``benchmarks/locoeval/fork/compose.py``).
``releases`` checks the validated tasks' fork fragments against the project's other releases on the index
(``$RECONMEM_PYPI_JSON``) and appends one row per task to ``--out`` (resumable;
``benchmarks/locoeval/fork/releases.py``).
What, how and what remains: ``benchmarks/locoeval/fork/__init__.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from reconmem.platform.offline_env import set_offline_env

set_offline_env()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.build_fork_set", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    sc = sub.add_parser("screen", help="screen tasks into fork tasks (resumable)")
    sc.add_argument("--projects", nargs="*", default=None, help="project paths or names (default: every mapped one)")
    sc.add_argument("--limit", type=int, default=None, help="screen at most this many new tasks")
    sc.add_argument("--namespaces-file", type=Path, default=None,
                    help="screen only these tasks, in this order (one namespace per line; '#' comments)")
    sc.add_argument("--out", type=Path, default=None, help="results file (append-only JSONL)")
    sc.add_argument("--timeout", type=float, default=120.0, help="seconds per test run")
    sc.add_argument("--manifest", type=Path, default=None, help="pypi_sources.json (default: the shipped one)")
    sc.add_argument("--deveval-data", type=Path, default=os.environ.get("RECONMEM_DEVEVAL_DATA"),
                    help="DevEval data.jsonl for tasks outside v2 (default: $RECONMEM_DEVEVAL_DATA or the fetched copy)")
    sc.add_argument("--v2-only", action="store_true", help="only the tasks with a v2 site")
    sc.add_argument("--max-changes", type=int, default=3, help="fork changes per task at most")
    sc.add_argument("--max-tries", type=int, default=8, help="single-change test runs per task at most")
    sc.add_argument("--retry-errors", action="store_true", help="screen again the tasks that errored")
    sc.add_argument("--work-root", type=Path, default=None, help="where the test runs' temporary trees go")
    si = sub.add_parser("sites", help="dry estimate: tasks with a catalogue site past the static filters (no test run)")
    si.add_argument("--projects", nargs="*", default=None, help="project paths or names (default: every mapped one)")
    si.add_argument("--limit", type=int, default=None, help="locate at most this many tasks")
    si.add_argument("--out", type=Path, default=None, help="results file (for what the next screen would carry)")
    si.add_argument("--manifest", type=Path, default=None, help="pypi_sources.json (default: the shipped one)")
    si.add_argument("--deveval-data", type=Path, default=os.environ.get("RECONMEM_DEVEVAL_DATA"),
                    help="DevEval data.jsonl (default: $RECONMEM_DEVEVAL_DATA or the fetched copy)")
    si.add_argument("--v2-only", action="store_true", help="only the tasks with a v2 site")
    co = sub.add_parser("counts", help="print the loss counts of a results file")
    co.add_argument("--out", type=Path, default=None, help="results file")
    sh = sub.add_parser("show", help="print a task's latest row: changes, statements, test diffs, checks")
    sh.add_argument("namespace")
    sh.add_argument("--out", type=Path, default=None, help="results file")
    sp = sub.add_parser("ship", help="write the validated tasks' fork data into the set directory")
    sp.add_argument("--screen", type=Path, required=True, help="results file of the screening")
    sp.add_argument("--set-dir", type=Path, default=None, help="default: benchmarks/locoeval/fork/set/")
    sp.add_argument("--deveval-data", type=Path, default=os.environ.get("RECONMEM_DEVEVAL_DATA"),
                    help="DevEval data.jsonl for tasks outside v2 (default: $RECONMEM_DEVEVAL_DATA)")
    sp.add_argument("--manifest", type=Path, default=None, help="pypi_sources.json (default: the shipped one)")
    sp.add_argument("--releases", type=Path, default=None,
                    help="results of `releases`: tasks another release holds the fork of, or not checked, are left out")
    cp = sub.add_parser("compose", help="compose the validated tasks into the set's samples (seeded)")
    cp.add_argument("--screen", type=Path, required=True, help="results file of the screening")
    cp.add_argument("--seed", type=int, default=0, help="composition seed (default 0)")
    cp.add_argument("--set-dir", type=Path, default=None, help="default: benchmarks/locoeval/fork/set/")
    cp.add_argument("--deveval-data", type=Path, default=os.environ.get("RECONMEM_DEVEVAL_DATA"),
                    help="DevEval data.jsonl for tasks outside v2 (default: $RECONMEM_DEVEVAL_DATA)")
    cp.add_argument("--manifest", type=Path, default=None, help="pypi_sources.json (default: the shipped one)")
    cp.add_argument("--no-check", action="store_true",
                    help="do not run the counterfactual distractors' bodies against the fork's tests")
    rl = sub.add_parser("releases", help="check the fork fragments against the project's other releases (resumable)")
    rl.add_argument("--screen", type=Path, action="append", required=True, help="screening results file (repeatable)")
    rl.add_argument("--out", type=Path, required=True, help="results file (append-only JSONL)")
    rl.add_argument("--projects", nargs="*", default=None, help="project paths or names (default: every one)")
    rl.add_argument("--manifest", type=Path, default=None, help="pypi_sources.json (default: the shipped one)")
    rl.add_argument("--max-releases", type=int, default=None, help="releases per project at most")
    args = ap.parse_args(argv)
    if args.command == "ship":
        return ship_command(args)
    if args.command == "compose":
        return compose_command(args)
    if args.command == "releases":
        return releases_command(args)

    from benchmarks.locoeval.fork.screen import (ScreenOptions, default_results_path, loss_counts, read_results,
                                                 screen, site_counts)

    out = args.out or default_results_path()
    if args.command in ("counts", "show") and not out.is_file():
        print(f"error: results file {out} not found (option --out)", file=sys.stderr)
        return 2
    if args.command == "counts":
        print(json.dumps(loss_counts(out), indent=1))
        return 0
    if args.command == "show":
        rows = [r for r in read_results(out) if r.get("namespace") == args.namespace]
        if not rows:
            print(f"error: no row for {args.namespace!r} in {out}", file=sys.stderr)
            return 2
        print(render_row(rows[-1]))
        return 0
    if args.command == "sites":
        opts = ScreenOptions(out=out, projects=args.projects, limit=args.limit, manifest=args.manifest,
                             deveval_data=args.deveval_data, v2_only=args.v2_only)
        try:
            print(json.dumps(site_counts(opts), indent=1))
        except (ValueError, FileNotFoundError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.max_changes < 1 or args.max_tries < 1:
        print("error: --max-changes and --max-tries must be at least 1", file=sys.stderr)
        return 2
    namespaces = None
    if args.namespaces_file is not None:
        if not args.namespaces_file.is_file():
            print(f"error: namespaces file {args.namespaces_file} not found (option --namespaces-file)", file=sys.stderr)
            return 2
        namespaces = [ln.split("#", 1)[0].strip() for ln in args.namespaces_file.read_text(encoding="utf-8").splitlines()]
        namespaces = [ns for ns in namespaces if ns]
    opts = ScreenOptions(out=out, projects=args.projects, limit=args.limit, timeout=args.timeout, namespaces=namespaces,
                         manifest=args.manifest, deveval_data=args.deveval_data, v2_only=args.v2_only,
                         max_changes=args.max_changes, max_tries=args.max_tries, retry_errors=args.retry_errors,
                         work_root=args.work_root)
    # SIGTERM unwinds like Ctrl-C: the running test's process group is killed and its work dir removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        counts = screen(opts)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"this_run": dict(counts), **loss_counts(out)}, indent=1))
    return 0


def ship_command(args: argparse.Namespace) -> int:
    """``ship``: the set directory's fork data from a results file."""
    from benchmarks.locoeval.fork.ship import SET_DIR, ForkDataError, ship, summary

    if not args.screen.is_file():
        print(f"error: results file {args.screen} not found (option --screen)", file=sys.stderr)
        return 2
    try:
        if args.releases is not None and not args.releases.is_file():
            print(f"error: releases file {args.releases} not found (option --releases)", file=sys.stderr)
            return 2
        skip_for = None
        if args.releases is not None:
            from functools import partial

            from benchmarks.locoeval.fork.releases import release_skips
            skip_for = partial(release_skips, args.releases)
        result = ship(args.screen, args.set_dir or SET_DIR, deveval_data=args.deveval_data, manifest=args.manifest,
                      skip_for=skip_for)
    except (ForkDataError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary(result), indent=1))
    return 0


def compose_command(args: argparse.Namespace) -> int:
    """``compose``: the set's samples from a results file."""
    from benchmarks.locoeval.fork.compose import SET_DIR, ComposeError, build

    try:
        gen = build(args.screen, seed=args.seed, out_dir=args.set_dir or SET_DIR, manifest=args.manifest,
                    deveval_data=args.deveval_data, check=not args.no_check)
    except (ComposeError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({k: gen[k] for k in ("validated", "composed", "distractor_modes", "counterfactuals_rejected",
                                          "statistics")}, indent=1))
    return 0


def releases_command(args: argparse.Namespace) -> int:
    """``releases``: the validated tasks' fork fragments checked against the project's other releases."""
    from benchmarks.deveval.tasks import TaskDataError
    from benchmarks.locoeval.fork.releases import MAX_RELEASES, ReleaseCheckError, check_releases

    try:
        stats = check_releases(args.screen, args.out, projects=args.projects, manifest=args.manifest,
                               max_releases=args.max_releases or MAX_RELEASES)
    except (ReleaseCheckError, TaskDataError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(stats.line())
    return 1 if stats.projects_failed else 0


def render_row(row: dict) -> str:
    """A results row as text for review."""
    lines = [f"{row['namespace']} ({row.get('project_path')} {row.get('version')}): {row.get('status')}, "
             f"stage {row.get('stage')}" + (f" -- {row['reason']}" if row.get("reason") else "")]
    for ch in row.get("changes", []):
        lines += [f"  [{ch['kind']}] {ch['fragment']}  ->  {ch['fork_fragment']}",
                  f"    statement: {ch['statement']}", f"    public:    {ch['public_statement']}",
                  f"    revision:  {ch['revision']}"]
    for name, check in (row.get("checks") or {}).items():
        lines.append(f"  check {name}: {'ok' if check['ok'] else 'FAILED'} {json.dumps(check['detail'])}")
    for path, diff in ((row.get("derivation") or {}).get("diffs") or {}).items():
        lines += [f"  diff of {path}:", diff.rstrip("\n")]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
