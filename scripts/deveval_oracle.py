"""Oracle validation of DevEval tasks: the reference body must pass and a blank body must fail.

    python -m scripts.deveval_oracle [--manifest PATH] [--projects boltons jinja2 ...]
                                     [--executor local|docker] [--workers N] [--out REPORT.json]
                                     [--namespaces NS ...] [--reference LOCAL_REPORT.json]
                                     [--archive URL [--archive-sha256 HEX]]

The manifest (default: the copy shipped in benchmarks/deveval/data/) is any file in the
``pypi_sources.json`` format; everything project-specific comes from its fields. By default the
tasks the manifest records as usable are run (``--all-located`` runs every located task). The JSON
report lists every task's outcome, the tasks that fail the oracle (the exclusion list, never to be
counted), and the agreement with the manifest's recorded oracle fields. ``--archive`` takes every
project's tree from DevEval's Source_Code archive (a URL, ``file://`` included) instead of its
sdist: the environment still comes from the manifest entry, the functions are located by DevEval's
own positions. Last line printed:
``oracle: <pass>/<n> reference pass, <blankfail>/<n> blank fail, <seconds> s``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from benchmarks.deveval.evaluate import NEEDS_NETWORK_FIELD, needs_network, oracle_task
from benchmarks.deveval.providers import SnapshotError, archive_snapshot, get_snapshot
from benchmarks.deveval.tasks import TaskDataError, env_spec_for, load_manifest, load_tasks
from benchmarks.records import append_jsonl, read_jsonl
from benchmarks.sandbox import build_executor


def write_json_atomic(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def select_jobs(manifest, tasks_by_ns, projects, *, all_located: bool, limit: int | None,
                exclude: dict[str, str] | None = None, namespaces: list[str] | None = None):
    """[(entry, task, location)] for the selected projects; raises on manifest tasks missing from the data.

    ``exclude``: ``{namespace: reason}`` left out (filled with the reason by the caller's report);
    ``namespaces``: only these (each must be among the selected tasks).
    """
    jobs, missing = [], []
    exclude = {} if exclude is None else exclude
    for entry in manifest.select(projects):
        chosen = [loc for loc in entry.tasks if loc.located and (all_located or loc.oracle_pass is None or loc.usable)]
        chosen = [loc for loc in chosen if loc.namespace not in exclude]
        if namespaces:
            chosen = [loc for loc in chosen if loc.namespace in set(namespaces)]
        for loc in chosen[: limit or None]:
            task = tasks_by_ns.get(loc.namespace)
            if task is None:
                missing.append(loc.namespace)
                continue
            jobs.append((entry, task, loc))
    if missing:
        raise TaskDataError(f"{len(missing)} manifest task(s) are not in the DevEval data file, e.g. {missing[:3]}")
    return jobs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", type=Path, default=None, help="manifest JSON (default: shipped copy)")
    ap.add_argument("--projects", nargs="*", default=None, help="project paths, names or PyPI names")
    ap.add_argument("--executor", choices=["local", "docker"], default="local")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data", type=Path, default=None, help="DevEval data.jsonl (default: fetched copy in the cache)")
    ap.add_argument("--out", type=Path, default=Path("results/deveval/oracle_report.json"))
    ap.add_argument("--all-located", action="store_true", help="also run tasks the manifest records as unusable")
    ap.add_argument("--limit", type=int, default=None, help="at most N tasks per project")
    ap.add_argument("--namespaces", nargs="*", default=None, help="only these task namespaces")
    ap.add_argument("--reference", type=Path, default=None,
                    help="a local oracle report: with --executor docker, tasks usable there that fail here "
                         f"with a network error get the manifest field {NEEDS_NETWORK_FIELD}")
    ap.add_argument("--archive", default=None, help="DevEval's Source_Code.tar.gz (URL or file://) as every tree's source")
    ap.add_argument("--archive-sha256", default=None, help="the archive's sha256 (checked after download)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test run")
    ap.add_argument("--memory-mb", type=int, default=5120)
    ap.add_argument("--resume", action="store_true",
                    help="keep the tasks already finished in <out>.partial.jsonl (same executor and source)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--deveval-way", action="store_true",
                    help="throughput baseline: DevEval's way (one `python -m pytest <id>` process per test id, "
                         "sequentially, editing one tree in place) instead of the executor")
    args = ap.parse_args(argv)
    if args.deveval_way:
        return deveval_way(args)

    t0 = time.monotonic()
    manifest = load_manifest(args.manifest)
    tasks_by_ns = {t.namespace: t for t in load_tasks(args.data)}
    excluded_network = {}
    if args.executor == "docker":      # tests that need the network cannot be judged with it disabled
        excluded_network = {ns: NEEDS_NETWORK_FIELD for e in manifest.select(args.projects) for ns in needs_network(e)}
    jobs = select_jobs(manifest, tasks_by_ns, args.projects, all_located=args.all_located, limit=args.limit,
                       exclude=excluded_network, namespaces=args.namespaces)
    if args.namespaces:
        unknown = set(args.namespaces) - {t.namespace for _, t, _ in jobs}
        if unknown:
            raise TaskDataError(f"--namespaces: {sorted(unknown)[:3]} not among the selected tasks")
    executor = build_executor({"name": args.executor, "timeout_s": args.timeout, "memory_mb": args.memory_mb})
    for ns in sorted(excluded_network):
        print(f"EXCLUDED under docker: {ns} (manifest field {NEEDS_NETWORK_FIELD})", flush=True)

    # Every finished task is appended to the partial file, so a stopped run resumes (--resume).
    partial = args.out.with_name(args.out.name + ".partial.jsonl")
    source = "deveval_archive" if args.archive else "pypi"
    finished = _finished(partial, args.executor, source) if args.resume else {}
    if not args.resume:
        partial.unlink(missing_ok=True)
    resumed = [finished[t.namespace] for _, t, _ in jobs if t.namespace in finished]
    jobs = [j for j in jobs if j[1].namespace not in finished]
    if resumed:
        print(f"resumed: {len(resumed)} task(s) from {partial}", flush=True)

    # Snapshots and environments first (one per project, in parallel; each is cached on disk).
    entries = {e.project_path: e for e, _, _ in jobs}
    prepared, setup_errors = {}, {}

    def setup(entry):
        if args.archive:
            root = archive_snapshot(entry.project_path, url=args.archive, sha256=args.archive_sha256)
        else:
            root = get_snapshot(entry.repo_spec(), manifest=manifest)
        env = env_spec_for(entry)
        executor.prepare(env)
        return root, env

    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        futs = {pool.submit(setup, e): p for p, e in entries.items()}
        for fut in as_completed(futs):
            try:
                prepared[futs[fut]] = fut.result()
            except (SnapshotError, Exception) as exc:  # noqa: BLE001 - reported per project
                setup_errors[futs[fut]] = str(exc)
                print(f"setup failed for {futs[fut]}: {exc}", file=sys.stderr, flush=True)
    setup_seconds = time.monotonic() - t0

    results, lock, done = list(resumed), threading.Lock(), [0]

    def one(entry, task, loc):
        if entry.project_path in setup_errors:
            return {"namespace": task.namespace, "project_path": entry.project_path, "usable": False,
                    "ref": None, "blank": None, "error": setup_errors[entry.project_path], "seconds": 0.0}
        root, env = prepared[entry.project_path]
        res = oracle_task(task, root, env=env, executor=executor, hint=None if args.archive else loc)
        res["manifest_usable"] = loc.usable
        res["agrees"] = res["usable"] == loc.usable
        with lock:
            append_jsonl(partial, {**res, "executor": args.executor, "source": source})
            done[0] += 1
            if not args.quiet:
                ref = res["ref"]["outcome"] if res.get("ref") else "-"
                blank = res["blank"]["outcome"] if res.get("blank") else "-"
                print(f"[{done[0]}/{len(jobs)}] {task.namespace}: ref={ref} blank={blank} "
                      f"{res['seconds']:.1f}s{'' if res['agrees'] else '  DISAGREES WITH MANIFEST'}", flush=True)
        return res

    t_run = time.monotonic()
    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        for fut in as_completed([pool.submit(one, *j) for j in jobs]):
            results.append(fut.result())
    run_seconds = time.monotonic() - t_run
    seconds = time.monotonic() - t0

    n = len(results)
    ref_pass = sum(1 for r in results if r.get("ref") and r["ref"]["outcome"] == "pass")
    blank_fail = sum(1 for r in results if r.get("blank") and r["blank"]["outcome"] != "pass")
    agree = sum(1 for r in results if r.get("agrees"))
    excluded = sorted(r["namespace"] for r in results if not r["usable"])
    per_project = {}
    for r in results:
        p = per_project.setdefault(r["project_path"], {"n": 0, "usable": 0, "agree": 0})
        p["n"] += 1
        p["usable"] += bool(r["usable"])
        p["agree"] += bool(r.get("agrees"))
    describe = getattr(executor, "describe", None)
    report = {
        "manifest": str(manifest.path), "executor": args.executor, "workers": args.workers,
        "source": "deveval_archive" if args.archive else "pypi",
        "executor_record": describe() if describe else {"name": args.executor},
        "n": n, "reference_pass": ref_pass, "blank_fail": blank_fail,
        "usable": sum(1 for r in results if r["usable"]), "agree_with_manifest": agree,
        "agreement": round(agree / n, 4) if n else None,
        "seconds": round(seconds, 1), "setup_seconds": round(setup_seconds, 1), "run_seconds": round(run_seconds, 1),
        "tasks_per_minute": round(n / run_seconds * 60, 2) if run_seconds > 0 else None,
        "setup_errors": setup_errors, "per_project": per_project,
        "excluded": excluded, "excluded_by_manifest": excluded_network,
        "disagreements": [r for r in results if not r.get("agrees")],
        "results": sorted(results, key=lambda r: (r["project_path"], r["namespace"])),
    }
    write_json_atomic(args.out, report)
    if args.reference and args.executor == "docker":
        from benchmarks.deveval.agreement import record_needs_network

        found = record_needs_network(manifest.path, json.loads(args.reference.read_text()), report)
        print(f"needs_network: {len(found)} task(s) recorded in {manifest.path}{': ' if found else ''}"
              f"{', '.join(found)}")
    for r in report["disagreements"]:
        ref = r["ref"]["outcome"] if r.get("ref") else r.get("error")
        blank = r["blank"]["outcome"] if r.get("blank") else "-"
        print(f"FAILS ORACLE: {r['namespace']} (ref={ref}, blank={blank}, manifest usable={r.get('manifest_usable')})")
    print(f"report: {args.out} ({len(excluded)} excluded, agreement {agree}/{n}, "
          f"{report['tasks_per_minute']} tasks/min"
          f"{f', {len(excluded_network)} not run: {NEEDS_NETWORK_FIELD}' if excluded_network else ''})")
    print(f"oracle: {ref_pass}/{n} reference pass, {blank_fail}/{n} blank fail, {seconds:.0f} s", flush=True)
    return 0 if not setup_errors else 1


def _finished(partial: Path, executor: str, source: str) -> dict[str, dict]:
    """Results of an earlier run of the same executor and source, by namespace (later lines win)."""
    out = {}
    if partial.exists():
        for row in read_jsonl(partial, strict=False):
            if row.get("executor") == executor and row.get("source") == source:
                out[row["namespace"]] = {k: v for k, v in row.items() if k not in ("executor", "source")}
    return out


def deveval_way(args) -> int:
    """Run the selected tasks DevEval's way, for a throughput baseline (same venvs, no sandbox)."""
    import shutil
    import subprocess

    from benchmarks.deveval.providers import locate_function, task_file
    from benchmarks.deveval.splice import BLANK_BODY, splice_body
    from benchmarks.sandbox.local import LocalExecutor

    t0 = time.monotonic()
    manifest = load_manifest(args.manifest)
    tasks_by_ns = {t.namespace: t for t in load_tasks(args.data)}
    jobs = select_jobs(manifest, tasks_by_ns, args.projects, all_located=args.all_located, limit=args.limit)
    venvs = LocalExecutor().venvs
    trees, n_ok = {}, 0
    with tempfile.TemporaryDirectory(prefix="deveval-way-") as tmp:
        for entry, task, loc in jobs:
            if entry.project_path not in trees:
                src = get_snapshot(entry.repo_spec(), manifest=manifest)
                dst = Path(tmp) / entry.pypi_name
                shutil.copytree(src, dst)
                for p in dst.rglob("*"):
                    if p.is_file():
                        p.chmod(0o644)
                trees[entry.project_path] = (dst, venvs.ensure(env_spec_for(entry)))
            tree, python = trees[entry.project_path]
            env = {**os.environ, "PYTHONPATH": str(tree / entry.pythonpath_in_tree), "PYTHONDONTWRITEBYTECODE": "1"}
            path = task_file(tree, task)
            original = path.read_text()
            location = locate_function(path, task, loc)

            def run_all() -> bool:
                ok = True
                for test_id in task.tests:
                    try:
                        rc = subprocess.run([str(python), "-m", "pytest", test_id], cwd=tree, env=env,
                                            capture_output=True, timeout=args.timeout).returncode
                    except subprocess.TimeoutExpired:
                        rc = -1
                    ok = ok and rc == 0
                return ok

            ref_ok = run_all()
            path.write_text(splice_body(original, location.body_start, location.body_end, BLANK_BODY,
                                        location.indent))
            blank_ok = run_all()
            path.write_text(original)
            n_ok += ref_ok and not blank_ok
            if not args.quiet:
                print(f"{task.namespace}: ref={'pass' if ref_ok else 'fail'} blank={'pass' if blank_ok else 'fail'}",
                      flush=True)
    seconds = time.monotonic() - t0
    print(f"deveval-way: {n_ok}/{len(jobs)} usable, {seconds:.0f} s, {len(jobs) / seconds * 60:.2f} tasks/min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
