"""Oracle validation of DevEval tasks (``python -m scripts.deveval_oracle``): the reference body must
pass and a blank body must fail.

The manifest (default: the copy shipped in benchmarks/deveval/data/) is any file in the
``pypi_sources.json`` format; everything project-specific comes from its fields. By default the
tasks the manifest records as usable are run (``all_located`` runs every located task). The JSON
report lists every task's outcome, the tasks that fail the oracle (the exclusion list, never to be
counted), and the agreement with the manifest's recorded oracle fields. ``archive`` takes every
project's tree from DevEval's Source_Code archive (a URL, ``file://`` included) instead of its
sdist: the environment still comes from the manifest entry, the functions are located by DevEval's
own positions. Last line printed:
``oracle: <pass>/<n> reference pass, <blankfail>/<n> blank fail, <seconds> s``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.deveval.evaluate import NEEDS_NETWORK_FIELD, needs_network, oracle_task
from benchmarks.deveval.providers import archive_snapshot, get_snapshot
from benchmarks.deveval.tasks import (DevEvalTask, Manifest, ProjectEntry, TaskDataError, TaskLocation, env_spec_for,
                                      load_manifest, load_tasks)
from benchmarks.records import append_jsonl, atomic_write_text, read_jsonl
from benchmarks.runs import run_pool
from benchmarks.sandbox import build_executor


@dataclass
class OracleOptions:
    """What to run and how (the command's options)."""

    out: Path = Path("results/deveval/oracle_report.json")
    manifest: Path | None = None
    projects: list[str] | None = None
    executor: str = "local"
    workers: int = 2
    data: Path | None = None
    all_located: bool = False
    limit: int | None = None
    namespaces: list[str] | None = None
    reference: Path | None = None
    archive: str | None = None
    archive_sha256: str | None = None
    timeout: float = 60.0
    memory_mb: int = 5120
    resume: bool = False
    quiet: bool = False


def select_jobs(manifest: Manifest, tasks_by_ns: dict[str, DevEvalTask], projects: list[str] | None, *,
                all_located: bool, limit: int | None, exclude: dict[str, str] | None = None,
                namespaces: list[str] | None = None) -> list[tuple[ProjectEntry, DevEvalTask, TaskLocation]]:
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


def finished_results(partial: Path, executor: str, source: str) -> dict[str, dict]:
    """Results of an earlier run of the same executor and source, by namespace (later lines win)."""
    out = {}
    if partial.exists():
        for row in read_jsonl(partial, strict=False):
            if row.get("executor") == executor and row.get("source") == source:
                out[row["namespace"]] = {k: v for k, v in row.items() if k not in ("executor", "source")}
    return out


def run_oracle(opts: OracleOptions) -> int:
    """Run the oracle over the selected tasks, write the report to ``opts.out`` and print its lines;
    returns the exit status (1 when a project could not be set up)."""
    t0 = time.monotonic()
    manifest = load_manifest(opts.manifest)
    tasks_by_ns = {t.namespace: t for t in load_tasks(opts.data)}
    excluded_network = {}
    if opts.executor == "docker":      # tests that need the network cannot be judged with it disabled
        excluded_network = {ns: NEEDS_NETWORK_FIELD for e in manifest.select(opts.projects) for ns in needs_network(e)}
    jobs = select_jobs(manifest, tasks_by_ns, opts.projects, all_located=opts.all_located, limit=opts.limit,
                       exclude=excluded_network, namespaces=opts.namespaces)
    if opts.namespaces:
        unknown = set(opts.namespaces) - {t.namespace for _, t, _ in jobs}
        if unknown:
            raise TaskDataError(f"--namespaces: {sorted(unknown)[:3]} not among the selected tasks")
    executor = build_executor({"name": opts.executor, "timeout_s": opts.timeout, "memory_mb": opts.memory_mb})
    for ns in sorted(excluded_network):
        print(f"EXCLUDED under docker: {ns} (manifest field {NEEDS_NETWORK_FIELD})", flush=True)

    # Every finished task is appended to the partial file, so a stopped run resumes (resume=True).
    partial = opts.out.with_name(opts.out.name + ".partial.jsonl")
    source = "deveval_archive" if opts.archive else "pypi"
    finished = finished_results(partial, opts.executor, source) if opts.resume else {}
    if not opts.resume:
        partial.unlink(missing_ok=True)
    resumed = [finished[t.namespace] for _, t, _ in jobs if t.namespace in finished]
    jobs = [j for j in jobs if j[1].namespace not in finished]
    if resumed:
        print(f"resumed: {len(resumed)} task(s) from {partial}", flush=True)

    # Snapshots and environments first (one per project, in parallel; each is cached on disk).
    entries = list({e.project_path: e for e, _, _ in jobs}.values())
    prepared, setup_errors = {}, {}

    def setup(entry):
        if opts.archive:
            root = archive_snapshot(entry.project_path, url=opts.archive, sha256=opts.archive_sha256)
        else:
            root = get_snapshot(entry.repo_spec(), manifest=manifest)
        env = env_spec_for(entry)
        executor.prepare(env)
        return root, env

    def set_up(i: int, res: Any) -> None:
        project = entries[i].project_path
        if isinstance(res, Exception):  # reported per project
            setup_errors[project] = str(res)
            print(f"setup failed for {project}: {res}", file=sys.stderr, flush=True)
        else:
            prepared[project] = res

    run_pool(entries, setup, workers=max(1, opts.workers), progress=False, on_result=set_up)
    setup_seconds = time.monotonic() - t0

    lock, done = threading.Lock(), [0]

    def one(job):
        entry, task, loc = job
        if entry.project_path in setup_errors:
            return {"namespace": task.namespace, "project_path": entry.project_path, "usable": False,
                    "ref": None, "blank": None, "error": setup_errors[entry.project_path], "seconds": 0.0}
        root, env = prepared[entry.project_path]
        res = oracle_task(task, root, env=env, executor=executor, hint=None if opts.archive else loc)
        res["manifest_usable"] = loc.usable
        res["agrees"] = res["usable"] == loc.usable
        with lock:
            append_jsonl(partial, {**res, "executor": opts.executor, "source": source})
            done[0] += 1
            if not opts.quiet:
                ref = res["ref"]["outcome"] if res.get("ref") else "-"
                blank = res["blank"]["outcome"] if res.get("blank") else "-"
                print(f"[{done[0]}/{len(jobs)}] {task.namespace}: ref={ref} blank={blank} "
                      f"{res['seconds']:.1f}s{'' if res['agrees'] else '  DISAGREES WITH MANIFEST'}", flush=True)
        return res

    t_run = time.monotonic()
    ran = run_pool(jobs, one, workers=max(1, opts.workers), progress=False, raise_errors=True)
    results = [*resumed, *ran]
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
        "manifest": str(manifest.path), "executor": opts.executor, "workers": opts.workers,
        "source": source,
        "executor_record": describe() if describe else {"name": opts.executor},
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
    atomic_write_text(opts.out, json.dumps(report, indent=1))
    if opts.reference and opts.executor == "docker":
        from benchmarks.deveval.agreement import record_needs_network

        found = record_needs_network(manifest.path, json.loads(opts.reference.read_text()), report)
        print(f"needs_network: {len(found)} task(s) recorded in {manifest.path}{': ' if found else ''}"
              f"{', '.join(found)}")
    for r in report["disagreements"]:
        ref = r["ref"]["outcome"] if r.get("ref") else r.get("error")
        blank = r["blank"]["outcome"] if r.get("blank") else "-"
        print(f"FAILS ORACLE: {r['namespace']} (ref={ref}, blank={blank}, manifest usable={r.get('manifest_usable')})")
    print(f"report: {opts.out} ({len(excluded)} excluded, agreement {agree}/{n}, "
          f"{report['tasks_per_minute']} tasks/min"
          f"{f', {len(excluded_network)} not run: {NEEDS_NETWORK_FIELD}' if excluded_network else ''})")
    print(f"oracle: {ref_pass}/{n} reference pass, {blank_fail}/{n} blank fail, {seconds:.0f} s", flush=True)
    return 0 if not setup_errors else 1


def deveval_way(opts: OracleOptions) -> int:
    """Run the selected tasks DevEval's way, for a throughput baseline (same venvs, no sandbox)."""
    import shutil
    import subprocess

    from benchmarks.deveval.providers import locate_function, task_file
    from benchmarks.deveval.splice import BLANK_BODY, splice_body
    from benchmarks.sandbox.local import LocalExecutor

    t0 = time.monotonic()
    manifest = load_manifest(opts.manifest)
    tasks_by_ns = {t.namespace: t for t in load_tasks(opts.data)}
    jobs = select_jobs(manifest, tasks_by_ns, opts.projects, all_located=opts.all_located, limit=opts.limit)
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
                                            capture_output=True, timeout=opts.timeout).returncode
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
            if not opts.quiet:
                print(f"{task.namespace}: ref={'pass' if ref_ok else 'fail'} blank={'pass' if blank_ok else 'fail'}",
                      flush=True)
    seconds = time.monotonic() - t0
    print(f"deveval-way: {n_ok}/{len(jobs)} usable, {seconds:.0f} s, {len(jobs) / seconds * 60:.2f} tasks/min")
    return 0


def compare_executors(opts: OracleOptions, out_dir: Path) -> dict:
    """The oracle with both executors on the same tasks, one after the other (reports
    ``<out_dir>/oracle_<executor>.json``); prints each executor's throughput and the image builds,
    returns :func:`benchmarks.deveval.agreement.compare`'s result (also written to ``comparison.json``)."""
    import statistics
    from dataclasses import replace

    from benchmarks.deveval.agreement import compare

    out_dir.mkdir(parents=True, exist_ok=True)
    reports = {}
    for kind in ("local", "docker"):
        out = out_dir / f"oracle_{kind}.json"
        run_oracle(replace(opts, executor=kind, out=out))
        reports[kind] = json.loads(out.read_text())
    for kind, rep in reports.items():
        print(f"{kind}: {rep['n']} tasks, {rep['usable']} usable, {rep['tasks_per_minute']} tasks/min "
              f"(run {rep['run_seconds']} s, setup {rep['setup_seconds']} s, {rep['workers']} workers)")
    images = (reports["docker"].get("executor_record") or {}).get("images", {})
    built = [v["build_seconds"] for v in images.values() if v.get("built_now")]
    if built:
        print(f"docker images built in this run: {len(built)}, {sum(built):.0f} s total, "
              f"median {statistics.median(built):.0f} s")
    res = compare(reports["local"], reports["docker"], load_manifest(opts.manifest))
    (out_dir / "comparison.json").write_text(json.dumps(res, indent=1))
    return res
