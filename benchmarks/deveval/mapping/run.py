"""Mapping many DevEval projects (``python -m scripts.map_deveval``): largest first (or in the
order ``--projects`` names them), the base manifest's projects kept as they are, each project's
progress in a state file under ``<out>/projects/`` (a stopped run resumes), and after every
project the report (``<out>/report.json``, ``<out>/report.md``) and the manifest rewritten.

``remap``: a project whose finished state is not mapped, or mapped to a release uploaded after the
cut-off, or named in ``--projects``, is mapped again; its old state moves to
``<out>/projects/superseded/`` and, when it was mapped, its old entry to the superseded manifest
(:func:`benchmarks.deveval.tasks.superseded_path`), where sets pinned at its version still find it.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.deveval.mapping import report, trees
from benchmarks.deveval.mapping.names import index_names
from benchmarks.deveval.mapping.project import COLLECTED, CUTOFF, ProjectJob, docker_agreement, load_state, map_project
from benchmarks.deveval.tasks import SHIPPED_MANIFEST, load_tasks, superseded_path
from benchmarks.records import atomic_write_json, atomic_write_text
from benchmarks.sandbox import build_executor


@dataclass
class MappingOptions:
    """The command's options (see ``scripts/map_deveval.py``)."""

    data: Path | None = None
    projects: list[str] | None = None
    min_tasks: int = 1
    out: Path = Path("results/deveval/mapping")
    manifest_out: Path = SHIPPED_MANIFEST
    base_manifest: Path = SHIPPED_MANIFEST
    workers: int = 2
    timeout: float = 60.0
    docker: bool = False
    docker_only: bool = False
    report_only: bool = False
    remap: bool = False
    install_os_packages: bool = False
    archive: str | None = None            # archive route: DevEval's Source_Code archive (URL, file or directory)
    git: bool = False                     # git route: the repositories in git_sources
    git_sources: Path | None = None


def _slug(project_path: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", project_path)


def map_projects(opts: MappingOptions) -> dict:
    """Map the selected projects (unless ``report_only``) and publish; returns the report's summary.
    Raises ``ValueError`` naming ``--projects`` for a project not in the DevEval data."""
    tasks = load_tasks(opts.data)
    counts = Counter(t.project_path for t in tasks)
    state_dir = opts.out / "projects"
    owned = set(report.load_states(state_dir))          # projects this mapping run has a state for
    base = [e for e in (json.loads(opts.base_manifest.read_text()) if opts.base_manifest.exists() else [])
            if e["project_path"] not in owned]
    shipped = {e["project_path"]: e for e in base}
    wanted = [p for p, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
              if n >= opts.min_tasks and p not in shipped]
    if opts.projects:
        names = {x.lower() for x in opts.projects}
        unknown = names - {n.lower() for p in counts for n in (p, p.split("/")[-1])}
        if unknown:
            raise ValueError(f"--projects: {sorted(unknown)} not in {opts.data or 'the DevEval data'}")
        order = [x.lower() for x in opts.projects]
        wanted = sorted((p for p in wanted if {p.lower(), p.split("/")[-1].lower()} & names),
                        key=lambda p: min(order.index(n) for n in (p.lower(), p.split("/")[-1].lower()) if n in order))
    git_sources = trees.load_git_sources(opts.git_sources) if opts.git else {}
    if opts.git:
        wanted = [p for p in wanted if p in git_sources]
    if opts.remap and not opts.report_only:
        for project in wanted:
            _supersede_if_due(state_dir, project, named=bool(opts.projects))

    def publish() -> dict:
        states = report.load_states(state_dir)
        previous = {p: st for p, st in report.load_states(state_dir / "superseded").items() if st.get("status") != "mapped"}
        rows = report.rows(states, dict(counts), shipped, previous)
        summ = {**report.summary(rows), **report.build_stats(states)}
        atomic_write_json(opts.out / "report.json", {"summary": summ, "rows": rows})
        (opts.out / "report.md").write_text(report.markdown(rows, summ))
        current = report.assemble_manifest(base, states)
        atomic_write_text(opts.manifest_out, json.dumps(current, indent=1))
        old_path = superseded_path(opts.manifest_out)
        before = json.loads(old_path.read_text()) if old_path.exists() else []
        if not old_path.exists() and superseded_path(opts.base_manifest).exists():
            before = json.loads(superseded_path(opts.base_manifest).read_text())
        kept = report.superseded_manifest(before, report.load_states(state_dir / "superseded"), current)
        if kept:
            atomic_write_text(old_path, json.dumps(kept, indent=1))
        return summ

    if not opts.report_only:
        local = build_executor({"name": "local", "timeout_s": opts.timeout})
        docker = build_executor({"name": "docker", "timeout_s": opts.timeout}) \
            if opts.docker or opts.docker_only else None
        done = report.load_states(state_dir)
        by_project: dict[str, list] = {}
        for t in tasks:
            by_project.setdefault(t.project_path, []).append(t)
        if opts.docker_only:
            wanted = [p for p in wanted if done.get(p, {}).get("status") == "mapped"]
        for i, project in enumerate(wanted, 1):
            print(f"[{i}/{len(wanted)}] {project} ({counts[project]} tasks)", flush=True)
            names = index_names(project)
            job = ProjectJob(project, names[0], by_project[project], state_dir / f"{_slug(project)}.json",
                             local, workers=opts.workers, log=lambda m: print(m, flush=True), other_names=names[1:],
                             install_os_packages=opts.install_os_packages,
                             route="archive" if opts.archive else "git" if opts.git else "sdist",
                             archive=opts.archive, git_source=git_sources.get(project))
            try:
                map_project(job)
                if docker is not None:
                    print(f"  docker: {docker_agreement(job, docker)}", flush=True)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # noqa: BLE001 - one project's failure must not stop the rest
                print(f"  {project}: mapping stopped with {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            publish()
    return publish()


def _supersede_if_due(state_dir: Path, project: str, *, named: bool) -> bool:
    """Move a finished state aside when the project is to be mapped again (see the module docstring)."""
    path = state_dir / f"{_slug(project)}.json"
    st = load_state(path)
    if not st.get("done"):
        return False
    late = st.get("status") == "mapped" and (st.get("chosen") or {}).get("upload_time", "")[:10] > CUTOFF
    if not (named or st.get("status") != "mapped" or late):
        return False
    version = (st.get("chosen") or {}).get("version") or st.get("status")
    dest_dir = state_dir / "superseded"
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest, i = dest_dir / f"{_slug(project)}@{_slug(str(version))}.json", 1
    while dest.exists():
        i += 1
        dest = dest_dir / f"{_slug(project)}@{_slug(str(version))}.{i}.json"
    atomic_write_json(dest, {**st, "superseded_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    path.unlink()
    print(f"{project}: previous state ({st.get('status')}, {version}) moved to {dest}", flush=True)
    search = st.get("search") or {}
    if search.get("cutoff") == CUTOFF and search.get("collected") == COLLECTED and st.get("versions_compared"):
        # comparing a release is deterministic: the new run starts from the same comparisons
        atomic_write_json(path, {"versions_compared": st["versions_compared"], "too_large": st.get("too_large", [])})
    return True
