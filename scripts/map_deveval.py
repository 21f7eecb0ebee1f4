"""Map DevEval projects onto PyPI sdists with oracle-validated test environments (resumable).

    python -m scripts.map_deveval [--data data.jsonl] [--projects NAME ...] [--min-tasks N]
                                  [--out results/deveval/mapping] [--manifest-out PATH]
                                  [--workers 2] [--docker] [--report-only]

Projects are taken largest first; the shipped manifest's projects are kept as they are. Each
project's progress is a state file under ``<out>/projects/``, so a stopped run resumes where it
was. After every project the report (``<out>/report.json``, ``<out>/report.md``: one row per DevEval
project, mapped or the reason it is not) and the manifest (``--manifest-out``, default the shipped
``benchmarks/deveval/data/pypi_sources.json``) are rewritten. ``--docker`` also re-runs each mapped
project's usable tasks in Docker and records the agreement in its entry.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

from benchmarks.deveval.mapping import report
from benchmarks.deveval.mapping.names import index_name
from benchmarks.deveval.mapping.project import ProjectJob, docker_agreement, map_project
from benchmarks.deveval.tasks import SHIPPED_MANIFEST, load_tasks
from benchmarks.records import atomic_write_json, atomic_write_text
from benchmarks.sandbox import build_executor


def _slug(project_path: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", project_path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None, help="DevEval data.jsonl (default: the fetched copy)")
    ap.add_argument("--projects", nargs="*", default=None, help="project paths or names (default: all)")
    ap.add_argument("--min-tasks", type=int, default=1, help="only projects with at least N DevEval tasks")
    ap.add_argument("--out", type=Path, default=Path("results/deveval/mapping"))
    ap.add_argument("--manifest-out", type=Path, default=SHIPPED_MANIFEST)
    ap.add_argument("--base-manifest", type=Path, default=SHIPPED_MANIFEST,
                    help="entries kept as they are, except projects with a state file under --out "
                         "(default: the shipped manifest)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test run")
    ap.add_argument("--docker", action="store_true", help="also run each mapped project's usable tasks in Docker")
    ap.add_argument("--docker-only", action="store_true",
                    help="only the Docker pass, over projects whose local mapping is done")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report and manifest from the state files")
    args = ap.parse_args(argv)

    tasks = load_tasks(args.data)
    counts = Counter(t.project_path for t in tasks)
    state_dir = args.out / "projects"
    owned = set(report.load_states(state_dir))          # projects this mapping run has a state for
    base = [e for e in (json.loads(args.base_manifest.read_text()) if args.base_manifest.exists() else [])
            if e["project_path"] not in owned]
    shipped = {e["project_path"]: e for e in base}
    wanted = [p for p, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
              if n >= args.min_tasks and p not in shipped]
    if args.projects:
        names = {x.lower() for x in args.projects}
        unknown = names - {n.lower() for p in counts for n in (p, p.split("/")[-1])}
        if unknown:
            ap.error(f"--projects: {sorted(unknown)} not in {args.data or 'the DevEval data'}")
        wanted = [p for p in wanted if {p.lower(), p.split("/")[-1].lower()} & names]

    def publish() -> dict:
        states = report.load_states(state_dir)
        rows = report.rows(states, dict(counts), shipped)
        summ = {**report.summary(rows), **report.build_stats(states)}
        atomic_write_json(args.out / "report.json", {"summary": summ, "rows": rows})
        (args.out / "report.md").write_text(report.markdown(rows, summ))
        atomic_write_text(args.manifest_out, json.dumps(report.assemble_manifest(base, states), indent=1))
        return summ

    if not args.report_only:
        local = build_executor({"name": "local", "timeout_s": args.timeout})
        docker = build_executor({"name": "docker", "timeout_s": args.timeout}) \
            if args.docker or args.docker_only else None
        done = report.load_states(state_dir)
        by_project: dict[str, list] = {}
        for t in tasks:
            by_project.setdefault(t.project_path, []).append(t)
        if args.docker_only:
            wanted = [p for p in wanted if done.get(p, {}).get("status") == "mapped"]
        for i, project in enumerate(wanted, 1):
            print(f"[{i}/{len(wanted)}] {project} ({counts[project]} tasks)", flush=True)
            job = ProjectJob(project, index_name(project), by_project[project], state_dir / f"{_slug(project)}.json",
                             local, workers=args.workers, log=lambda m: print(m, flush=True))
            try:
                map_project(job)
                if docker is not None:
                    print(f"  docker: {docker_agreement(job, docker)}", flush=True)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # noqa: BLE001 - one project's failure must not stop the rest
                print(f"  {project}: mapping stopped with {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            publish()
    summ = publish()
    print(f"mapping: {summ['mapped']}/{summ['projects']} projects mapped, {summ['usable_tasks']} usable tasks; "
          f"not mapped: {summ['not_mapped_by_reason']}; report {args.out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
