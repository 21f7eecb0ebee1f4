"""Map one DevEval project onto a PyPI sdist, end to end, resumable through a per-project state file.

Steps: candidate sdists (every release uploaded up to the cut-off, under every name the project
was published as, nearest the collection date first) -> task matching -> test requirements
resolved and pinned -> environment built (a failed install is retried with the OS packages its
log names, then without the optional test extras) -> a probe of a few reference runs whose logs
suggest missing plugins, modules, commands or an obsolete pinned test runner (at most
:data:`FIX_ROUNDS` rebuilds) -> the oracle on every matched task (reference passes, blank fails)
-> a re-run sample. The result is a manifest entry in ``pypi_sources.json`` format, or a reason
with the numbers behind it.

Which release: the most fully matching tasks, then the most matched at DevEval's own lines
(``position``), then the upload nearest :data:`COLLECTED`. The search visits releases nearest
:data:`COLLECTED` first and stops only at a release matching every task at DevEval's lines (no
release farther away can beat it); otherwise it compares every release up to :data:`CUTOFF`.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from benchmarks.deveval.agreement import NETWORK_ERROR
from benchmarks.deveval.evaluate import oracle_task
from benchmarks.deveval.tasks import DevEvalTask, TaskLocation
from benchmarks.records import atomic_write_json
from benchmarks.runs import run_pool
from benchmarks.sandbox.base import EnvSpec, Executor
from reconmem.platform.downloads import DownloadError

from . import match, pypi, trees
from .requirements import (PYTEST_SPEC, ResolveError, declared_requirements, fixes_from_log, heavy,
                           imported_modules, install_os_packages, local_modules, missing_os_packages,
                           named_commands, failed_builds, module_level_test_imports, optional_heavy,
                           package_imports, relax_pins, shims_from_log, obsolete_runner,
                           os_packages_from_build_log, resolve, third_party, unpin_runner, without_dists)

# DevEval's release: arXiv 2405.19856 v1 (2024-05-30; the data went up on GitHub on 2024-06-20).
# No release uploaded after it is chosen.
CUTOFF = "2024-05-30"
# The snapshots' collection date, an estimate: the pipeline was described in arXiv 2401.06401
# (2024-01-12) before the ACL 2024 submission (2024-02-15). Ties among equally matching releases go
# to the upload nearest it, and dependencies are pinned as the index stood then (or at the chosen
# release's upload, if later).
COLLECTED = "2024-01-01"
EXCLUDE_NEWER = CUTOFF           # the fallback index date when the derived one does not resolve
FIX_ROUNDS = 3
PROBE_TASKS = 4
RERUN_SAMPLE = 8
MAX_SDIST_MB = 60

REASONS = {
    "not_on_pypi": "the index has no project of that name",
    "no_sdist": "no sdist uploaded before the cut-off",
    "sdist_too_large": "every candidate sdist is larger than the limit",
    "no_tests_in_sdist": "no candidate sdist ships the test files the tasks name",
    "no_version_matches": "test files exist, but no version has the functions at DevEval's lines",
    "deps_do_not_resolve": "the test requirements do not resolve on Python 3.11",
    "deps_do_not_install": "the pinned requirements do not install on Python 3.11",
    "needs_os_packages": "the pinned requirements need Debian packages that are not installed",
    "not_in_archive": "the archive has no tree for the project",
    "no_git_source": "no repository URL for the project (git_sources.json)",
    "git_unreachable": "the project's repository cannot be cloned or the commit fetched",
    "no_tests_in_history": "no commit up to the cut-off has the test files the tasks name",
    "too_heavy": "the environment needs a GPU / deep-learning stack",
    "needs_network": "the reference tests fail for lack of network access",
    "reference_fails": "the reference tests fail in the environment",
    "blank_passes": "the tests pass with a blank body too",
}
_ERROR_LINE = re.compile(r"^E\s+(\w+(?:\.\w+)*(?:Error|Exception|Warning)\b.*)$|^(\w+Error: .*)$", re.M)


@dataclass
class ProjectJob:
    """What :func:`map_project` needs for one project."""

    project_path: str
    pypi_name: str
    tasks: list[DevEvalTask]
    state_path: Path
    executor: Executor
    workers: int = 2
    cutoff: str = CUTOFF
    collected: str = COLLECTED
    exclude_newer: str | None = None       # None: the later of `collected` and the chosen release's upload
    log: callable = print
    state: dict = field(default_factory=dict)
    other_names: tuple[str, ...] = ()      # further names the project was published under
    install_os_packages: bool = False      # apt-get install the Debian packages a failed build names (root)
    route: str = "sdist"                   # "sdist" | "archive" | "git" (see :mod:`.trees`)
    archive: str | None = None             # archive route: DevEval's Source_Code archive (URL, file or directory)
    git_source: dict | None = None         # git route: {"url", "subdir"?}

    @property
    def names(self) -> tuple[str, ...]:
        return (self.pypi_name, *[n for n in self.other_names if n != self.pypi_name])


def _save(job: ProjectJob) -> None:
    atomic_write_json(job.state_path, job.state)


def load_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _finish(job: ProjectJob, status: str, reason: str | None = None, **numbers) -> dict:
    job.state.update(status=status, reason=reason, reason_text=REASONS.get(reason), numbers=numbers, done=True)
    _save(job)
    job.log(f"{job.project_path}: {status}{f' ({reason})' if reason else ''} {numbers}")
    return job.state


def map_project(job: ProjectJob) -> dict:
    """Run (or resume) the mapping of one project; returns its final state."""
    job.state = load_state(job.state_path)
    if job.state.get("done"):
        if _refresh_network_rows(job):
            _save(job)
        return job.state
    job.state.update(project_path=job.project_path, pypi_name=job.pypi_name, n_tasks=len(job.tasks))
    t0 = time.monotonic()
    chosen = {"sdist": _choose_version, "archive": _choose_archive, "git": _choose_commit}[job.route](job)
    if chosen is None:
        return job.state
    rel, prefix, root, matches = chosen
    matched = [m for m in matches if m.matched]
    built = _build_environment(job, rel, root, matched)
    if built is None:
        return job.state
    env, spec_info = built
    results = _oracle(job, root, env, matched)
    usable = [ns for ns, r in results.items() if r.get("usable")]
    rerun = _rerun_sample(job, root, env, matched, results)
    entry = _entry(job, rel, prefix, env, spec_info, matches, results, rerun)
    job.state["entry"] = entry
    job.state["seconds_total"] = round(time.monotonic() - t0 + job.state.get("seconds_before_resume", 0), 1)
    if usable:
        return _finish(job, "mapped", None, n_tasks=len(job.tasks), n_matched=len(matched), n_usable=len(usable))
    return _finish(job, "not_mapped", _failure_reason(results), n_tasks=len(job.tasks), n_matched=len(matched),
                   n_usable=0, example_error=_dominant_error(results))


# ----------------------------------------------------------------------------------------- versions

def _choose_version(job: ProjectJob):
    """The best-matching sdist: ``(release, prefix, root, matches)``, or None after recording a reason."""
    try:
        releases = pypi.sdist_releases_for(job.names)
    except pypi.NotOnIndex:
        _finish(job, "not_mapped", "not_on_pypi", n_tasks=len(job.tasks), names=list(job.names))
        return None
    before = [r for r in releases if r.upload_time[:10] <= job.cutoff]
    by_version: dict[tuple[str, str], pypi.SdistRelease] = {}
    for r in before:                              # one sdist per version (a .tar.gz over a .zip)
        key = (r.name, r.version)
        if key not in by_version or r.filename.endswith(".tar.gz"):
            by_version[key] = r
    ordered = sorted(by_version.values(), key=lambda r: (match.days_between(r.upload_time, job.collected),
                                                         r.upload_time))
    if not ordered:
        _finish(job, "not_mapped", "no_sdist", n_tasks=len(job.tasks), sdists_total=len(releases),
                after_cutoff=len(releases) - len(before), names=list(job.names))
        return None
    compared = job.state.setdefault("versions_compared", {})
    too_large = job.state.setdefault("too_large", [])
    by_file = {r.filename: r for r in ordered}

    def best_so_far() -> str | None:
        return match.best_version({k: v for k, v in compared.items() if k in by_file}, job.collected)

    n = len(job.tasks)
    stopped_early = False
    for rel in ordered:
        best = best_so_far()
        if best is not None and compared[best]["full_match"] == n and compared[best]["by_position"] == n:
            stopped_early = True                  # every task at DevEval's lines: nothing farther can win
            break
        if rel.filename in compared or rel.filename in too_large:
            continue
        if rel.size > MAX_SDIST_MB * 1e6:
            too_large.append(rel.filename)
            continue
        try:
            _, unpacked = pypi.fetch_release(rel)
        except (DownloadError, OSError, tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
            job.log(f"{job.project_path}: {rel.filename}: {exc}")
            compared[rel.filename] = {"by_position": 0, "by_name": 0, "tests_exist": 0, "full_match": 0,
                                      "upload_time": rel.upload_time, "version": rel.version,
                                      "unreadable": str(exc)[:200]}
            continue
        prefix, root = match.project_root_in(unpacked, job.tasks)
        counts, _ = match.match_version(root, job.tasks)
        compared[rel.filename] = {**counts, "upload_time": rel.upload_time, "version": rel.version}
        now_best = best_so_far()
        for loser in {rel.filename, best} - {now_best, None}:    # keep only the best tree on disk
            pypi.drop_release(by_file[loser])
        _save(job)
    job.state["search"] = {"names": list(job.names), "releases_up_to_cutoff": len(ordered),
                           "after_cutoff": len(releases) - len(before), "compared": len(compared),
                           "stopped_at_full_position_match": stopped_early, "cutoff": job.cutoff,
                           "collected": job.collected}
    best = best_so_far()
    if best is None:
        if not compared and too_large:
            _finish(job, "not_mapped", "sdist_too_large", n_tasks=n, limit_mb=MAX_SDIST_MB)
        elif all(c["tests_exist"] == 0 for c in compared.values()):
            _finish(job, "not_mapped", "no_tests_in_sdist", n_tasks=n, versions=len(compared),
                    names=list(job.names))
        else:
            _finish(job, "not_mapped", "no_version_matches", n_tasks=n, versions=len(compared),
                    best_tests_exist=max(c["tests_exist"] for c in compared.values()),
                    best_located=max(c["by_position"] + c["by_name"] for c in compared.values()))
        return None
    rel = by_file[best]
    _, unpacked = pypi.fetch_release(rel)
    prefix, root = match.project_root_in(unpacked, job.tasks)
    _, matches = match.match_version(root, job.tasks)
    job.state["chosen"] = rel.to_dict()
    _save(job)
    return rel, prefix, root, matches


def _choose_archive(job: ProjectJob):
    """The project's tree in DevEval's archive: ``(tree, prefix, root, matches)`` or None after a reason."""
    from benchmarks.deveval.providers import SnapshotError

    try:
        tree, root = trees.archive_tree(job.project_path, job.archive, job.pypi_name, job.collected)
    except SnapshotError as exc:
        _finish(job, "not_mapped", "not_in_archive", n_tasks=len(job.tasks), error=str(exc)[-300:])
        return None
    counts, matches = match.match_version(root, job.tasks)
    job.state["versions_compared"] = {"deveval-archive": counts}
    if counts["full_match"] == 0:
        _finish(job, "not_mapped", "no_tests_in_sdist" if counts["tests_exist"] == 0 else "no_version_matches",
                n_tasks=len(job.tasks), **counts)
        return None
    job.state["chosen"] = tree.to_dict()
    _save(job)
    return tree, "", root, matches


def _choose_commit(job: ProjectJob):
    """The best-matching commit of the project's repository (same ranking and search order as the
    sdist releases): ``(tree, prefix, root, matches)`` or None after a reason."""
    from reconmem.platform.downloads import cache_root

    src = job.git_source or {}
    if not src.get("url"):
        _finish(job, "not_mapped", "no_git_source", n_tasks=len(job.tasks))
        return None
    url, subdir = src["url"], src.get("subdir")
    try:
        repo = trees.history_clone(url, cache_root())
        paths = trees.relevant_paths(job.tasks)
        commits = trees.candidate_commits(repo, paths, job.cutoff, subdir)
    except (trees.GitError, OSError, subprocess.TimeoutExpired) as exc:
        _finish(job, "not_mapped", "git_unreachable", n_tasks=len(job.tasks), url=url, error=str(exc)[-300:])
        return None
    ordered = sorted(commits, key=lambda cd: (match.days_between(cd[1], job.collected), cd[1]))
    compared = job.state.setdefault("versions_compared", {})
    n = len(job.tasks)
    scratch = Path(tempfile.mkdtemp(prefix="reconmem-gitmatch-"))
    try:
        for commit, when in ordered:
            best = match.best_version(compared, job.collected)
            if best is not None and compared[best]["full_match"] == n and compared[best]["by_position"] == n:
                break
            if commit in compared:
                continue
            root = trees.files_at(repo, commit, paths, scratch / "tree", subdir)
            counts, _ = match.match_version(root, job.tasks)
            compared[commit] = {**counts, "upload_time": when}
            if len(compared) % 20 == 0:
                _save(job)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    job.state["search"] = {"url": url, "commits_touching_task_or_test_files": len(ordered),
                           "compared": len(compared), "cutoff": job.cutoff, "collected": job.collected}
    best = match.best_version(compared, job.collected)
    if best is None:
        reason = "no_tests_in_history" if all(c["tests_exist"] == 0 for c in compared.values()) else "no_version_matches"
        _finish(job, "not_mapped", reason, n_tasks=n, commits=len(compared),
                best_tests_exist=max((c["tests_exist"] for c in compared.values()), default=0),
                best_located=max((c["by_position"] + c["by_name"] for c in compared.values()), default=0))
        return None
    try:
        tree, root = trees.git_tree(url, best, compared[best]["upload_time"], job.pypi_name, subdir)
    except trees.GitError as exc:
        _finish(job, "not_mapped", "git_unreachable", n_tasks=n, url=url, error=str(exc)[-300:])
        return None
    _, matches = match.match_version(root, job.tasks)
    job.state["chosen"] = tree.to_dict()
    _save(job)
    return tree, "", root, matches


def _chosen_tree(job: ProjectJob) -> tuple[Path, Path | None]:
    """``(project root, project sdist or None)`` of the chosen tree, from the state (for the Docker pass)."""
    chosen = job.state["chosen"]
    if chosen.get("route") == "archive":
        return trees.archive_tree(job.project_path, job.archive, job.pypi_name, job.collected)[1], None
    if chosen.get("route") == "git":
        prov = chosen["provenance"]
        return trees.git_tree(prov["url"], prov["commit"], prov["commit_date"], job.pypi_name, prov.get("subdir"))[1], None
    archive, unpacked = pypi.fetch_release(pypi.SdistRelease(**chosen))
    prefix = (job.state.get("entry") or {}).get("path_prefix_in_sdist", "")
    return (unpacked / prefix if prefix else unpacked), archive


# ------------------------------------------------------------------------------------- environment

def _env_for(job: ProjectJob, pins: list[str], pythonpath: str, os_reqs: list[str],
             sdist: Path | None, shims: list[str] | tuple[str, ...] = ()) -> EnvSpec:
    return EnvSpec(name=job.project_path, python="3.11", pip_specs=tuple(pins), pip_no_deps=True,
                   pythonpath=(pythonpath,), os_requirements=tuple(sorted(os_reqs)), compat_shims=tuple(shims),
                   project_sdist=str(sdist) if sdist else None,
                   project_sdist_sha256=job.state["chosen"]["sha256"] if sdist else None)


def _exclude_newer(job: ProjectJob, rel) -> str:
    """The index date the requirements are pinned at: the later of the collection date and the day
    after the release's upload (``job.exclude_newer`` when set)."""
    if job.exclude_newer:
        return job.exclude_newer
    day_after = (date.fromisoformat(rel.upload_time[:10]) + timedelta(days=1)).isoformat()
    return max(job.collected, day_after)


def _specs(info: dict) -> list[str]:
    """The requirement specs of the current attempt (optional test extras included or not; the
    test runner's pins lifted after an obsolete-runner fix-up)."""
    extra = info["declared_test"] + info["from_imports"] if info["extras"] else info["imports_without_extras"]
    specs = [PYTEST_SPEC] + info["declared_install"] + info.get("from_source_imports", []) + extra + info["fixes"]
    specs = relax_pins(specs, info["relaxed"]) if info.get("relaxed") else specs
    specs = without_dists(specs, info["heavy_left_out"]) if info.get("heavy_left_out") else specs
    return unpin_runner(specs) if info["runner_unpinned"] else specs


def _build_environment(job: ProjectJob, rel, root: Path, matched: list[match.TaskMatch]):
    """Resolve, build and probe the test environment: ``(env, spec_info)`` or None after a reason."""
    tasks = {t.namespace: t for t in job.tasks}
    mtasks = [tasks[m.namespace] for m in matched]
    pythonpath = match.pythonpath_for(mtasks)
    dec = declared_requirements(root)
    test_files = sorted({tid.split("::")[0] for t in mtasks for tid in t.tests})
    own = {re.sub(r"[-_.]+", "-", n).lower() for n in job.names}
    install = [s for s in dec.install if re.sub(r"[-_.]+", "-", re.split(r"[<>=!~;\[ ]", s)[0]).lower() not in own]
    modules = imported_modules(root, test_files)
    local = local_modules(root, pythonpath) | set(job.names)
    source = package_imports(root, sorted({t.file_in_project for t in mtasks}), pythonpath)
    info = job.state.setdefault("requirements", {
        "declared_install": install, "declared_test": dec.test,
        "from_imports": third_party(modules, local, install + dec.test),
        "from_source_imports": third_party(source - modules, local, install + dec.test + list(
            third_party(modules, local, install + dec.test))),
        "sources": dec.sources, "pytest_plugin": dec.pytest_plugin, "fixes": [],
        "os_requirements": named_commands(root, test_files + sorted({t.file_in_project for t in mtasks})),
        "rounds": []})
    info.setdefault("imports_without_extras", third_party(modules, local, install))
    info.setdefault("extras", True)
    info.setdefault("runner_unpinned", False)
    info.setdefault("install_attempts", [])
    info.setdefault("exclude_newer", _exclude_newer(job, rel))
    info.setdefault("module_level_imports", sorted(module_level_test_imports(root, test_files) | source))
    sdist = pypi.fetch_release(rel)[0] if info["pytest_plugin"] and job.route == "sdist" else None
    if info.get("final"):
        env = _env_for(job, info["pins"], pythonpath, info["os_requirements"], sdist, info.get("compat_shims", []))
        job.executor.prepare(env)
        return env, info
    for round_no in range(len(info["rounds"]), FIX_ROUNDS + 1):
        built = _install(job, info, pythonpath, sdist, len(matched))
        if built is None:
            return None
        env, pins, dropped, build_s = built
        specs = _specs(info)
        logs = _probe(job, root, env, mtasks)
        new_specs, new_os, new_shims, runner = [], [], [], False
        shims = info.setdefault("compat_shims", [])
        for log in logs:
            specs_fix, os_fix = fixes_from_log(log)
            new_specs += [s for s in specs_fix if s not in specs and s not in new_specs]
            new_os += [p for p in os_fix if p not in info["os_requirements"] and p not in new_os]
            new_shims += [x for x in shims_from_log(log) if x not in shims and x not in new_shims]
            runner |= obsolete_runner(log) and not info["runner_unpinned"]
        info["rounds"].append({"pins": len(pins), "dropped": dropped, "build_seconds": build_s,
                               "probe_failures": len(logs), "added": new_specs, "added_os": new_os,
                               "added_shims": new_shims, "runner_unpinned": runner})
        info["pins"] = pins
        _save(job)
        if not (new_specs or new_os or new_shims or runner) or round_no == FIX_ROUNDS:
            info["final"] = True
            _save(job)
            return env, info
        info["fixes"] += new_specs
        info["os_requirements"] += new_os
        shims += new_shims
        info["runner_unpinned"] |= runner
        if new_os and job.install_os_packages:
            install_os_packages(new_os)
    raise AssertionError("unreachable: the last round returns")


def _install(job: ProjectJob, info: dict, pythonpath: str, sdist: Path | None, n_matched: int):
    """Resolve and build one environment: ``(env, pins, dropped, build_seconds)``, or None after a reason.

    A failed resolution, or one that pins a GPU / deep-learning stack, is retried without the optional
    test extras; a failed resolution then with the index as it stood at the cut-off; a stack still
    pinned then is left out when the test files import it only inside a test or a ``try``. A failed build is retried with the Debian packages its log names (installed when
    ``job.install_os_packages``), then without the optional test extras. Every attempt is recorded
    in ``install_attempts``.
    """
    attempts = info["install_attempts"]
    while True:
        specs = _specs(info)
        try:
            pins, dropped = resolve(specs, exclude_newer=info["exclude_newer"])
        except (ResolveError, OSError) as exc:
            attempts.append({"failed": "resolve", "extras": info["extras"], "exclude_newer": info["exclude_newer"],
                             "error": str(exc)[-400:]})
            if info["extras"]:
                info["extras"] = False
            elif info["exclude_newer"] != EXCLUDE_NEWER:
                info["exclude_newer"] = EXCLUDE_NEWER
            else:
                _finish(job, "not_mapped", "deps_do_not_resolve", n_tasks=len(job.tasks), n_matched=n_matched,
                        resolver_error=str(exc)[-600:])
                return None
            _save(job)
            continue
        too_heavy = heavy(pins)
        if too_heavy and info["extras"]:           # often an optional test extra pulls the GPU stack in
            attempts.append({"failed": "too_heavy", "extras": True, "heavy": too_heavy[:5]})
            info["extras"] = False
            _save(job)
            continue
        optional = [d for d in optional_heavy(info["imports_without_extras"], set(info.get("module_level_imports", [])))
                    if d not in info.get("heavy_left_out", [])] if too_heavy else []
        if optional:                               # the tests import them only inside a test or `try`
            attempts.append({"failed": "too_heavy", "extras": info["extras"], "heavy": too_heavy[:5],
                             "left_out": optional})
            info.setdefault("heavy_left_out", []).extend(optional)
            _save(job)
            continue
        if too_heavy:
            _finish(job, "not_mapped", "too_heavy", n_tasks=len(job.tasks), n_matched=n_matched,
                    heavy=too_heavy, n_pins=len(pins))
            return None
        env = _env_for(job, pins, pythonpath, info["os_requirements"], sdist, info.get("compat_shims", []))
        t0 = time.monotonic()
        try:
            job.executor.prepare(env)
            return env, pins, dropped, round(time.monotonic() - t0, 1)
        except Exception as exc:  # noqa: BLE001 - the build's own error is the evidence for the next attempt
            err = str(exc)
        named = os_packages_from_build_log(err)
        new = [p for p in named if p not in info["os_requirements"]]
        missing = (install_os_packages(named) if job.install_os_packages else missing_os_packages(named)) if named else []
        attempts.append({"failed": "install", "extras": info["extras"], "n_pins": len(pins),
                         "os_packages_named": named, "os_packages_missing": missing, "error": err[-400:]})
        info["os_requirements"] += new
        _save(job)
        if new and not missing:
            continue                               # the packages the build needs are there now
        if info["extras"]:
            info["extras"] = False
            continue
        pinned = {re.sub(r"[-_.]+", "-", re.split(r"[<>=!~;\[ ]", x, maxsplit=1)[0]).lower()
                  for x in specs if re.search(r"==|<", x)}
        relax = [d for d in failed_builds(err) if d in pinned and d not in info.setdefault("relaxed", [])]
        if relax and not missing:                  # a pinned release that does not build here: a newer one may
            info["relaxed"] += relax
            attempts[-1]["relaxed"] = relax
            _save(job)
            continue
        if missing:
            _finish(job, "not_mapped", "needs_os_packages", n_tasks=len(job.tasks), n_matched=n_matched,
                    os_packages=missing, build_error=err[-600:])
        else:
            _finish(job, "not_mapped", "deps_do_not_install", n_tasks=len(job.tasks), n_matched=n_matched,
                    n_pins=len(pins), build_error=err[-800:])
        return None


def _probe(job: ProjectJob, root: Path, env: EnvSpec, tasks: list[DevEvalTask]) -> list[str]:
    """Logs of failing reference runs on a few tasks spread over different test files."""
    from benchmarks.deveval.evaluate import run_reference

    by_file: dict[str, DevEvalTask] = {}
    for t in tasks:
        by_file.setdefault(t.tests[0].split("::")[0], t)
    sample = list(by_file.values())[:PROBE_TASKS]
    outs = run_pool(sample, lambda t: run_reference(t, root, env=env, executor=job.executor),
                    workers=max(1, job.workers), progress=False, raise_errors=True)
    return [o.log for o in outs if not o.passed]


# ------------------------------------------------------------------------------------------ oracle

def _hint(m: match.TaskMatch) -> TaskLocation:
    return TaskLocation(m.namespace, m.located_by, m.signature_line, m.body_start, m.body_end)


def _oracle(job: ProjectJob, root: Path, env: EnvSpec, matched: list[match.TaskMatch]) -> dict[str, dict]:
    """Reference and blank runs of every matched task (results saved as they finish)."""
    tasks = {t.namespace: t for t in job.tasks}
    results = job.state.setdefault("oracle", {})
    todo = [m for m in matched if m.namespace not in results]

    def one(m):
        return m.namespace, oracle_task(tasks[m.namespace], root, env=env, executor=job.executor, hint=_hint(m))

    finished = [0]

    def save(_: int, out) -> None:
        if isinstance(out, Exception):
            return
        ns, res = out
        results[ns] = res
        finished[0] += 1
        if finished[0] % 5 == 0 or finished[0] == len(todo):
            _save(job)

    run_pool(todo, one, workers=max(1, job.workers), progress=False, on_result=save, raise_errors=True)
    for m in todo:  # in task order, as they were matched
        results[m.namespace] = results.pop(m.namespace)
    return results


def _rerun_sample(job: ProjectJob, root: Path, env: EnvSpec, matched, results) -> dict:
    if "rerun_sample" in job.state:
        return job.state["rerun_sample"]
    usable = [m for m in matched if results.get(m.namespace, {}).get("usable")]
    step = max(1, len(usable) // RERUN_SAMPLE)
    sample = usable[::step][:RERUN_SAMPLE]
    tasks = {t.namespace: t for t in job.tasks}
    again = run_pool(sample, lambda m: oracle_task(tasks[m.namespace], root, env=env, executor=job.executor,
                                                   hint=_hint(m)),
                     workers=max(1, job.workers), progress=False, raise_errors=True)
    job.state["rerun_sample"] = {"n": len(sample), "same_outcome": sum(bool(r["usable"]) for r in again),
                                 "namespaces": [m.namespace for m in sample]}
    _save(job)
    return job.state["rerun_sample"]


def _failure_reason(results: dict[str, dict]) -> str:
    refs = [r for r in results.values() if not (r.get("ref") or {}).get("outcome") == "pass"]
    if results and len(refs) < len(results):
        return "blank_passes"
    net = sum(_needs_network(r) for r in refs)
    return "needs_network" if refs and net * 2 >= len(refs) else "reference_fails"


def _needs_network(result: dict) -> bool:
    """The reference run failed for lack of network (a name lookup, a refused connection, a pip
    install at test time)."""
    ref = result.get("ref") or {}
    return ref.get("outcome") != "pass" and bool(NETWORK_ERROR.search(ref.get("log_tail") or ""))


def _refresh_network_rows(job: ProjectJob) -> bool:
    """Mark a finished entry's failing tasks whose reference log shows a network need as
    ``needs_network`` (rows and the entry's list), from the recorded oracle logs; nothing is re-run
    and the environment is unchanged. Returns whether anything changed."""
    entry, results = job.state.get("entry"), job.state.get("oracle") or {}
    if not entry:
        return False
    found = [row["namespace"] for row in entry.get("tasks", [])
             if row.get("unmatched_reason") == "reference_fails" and _needs_network(results.get(row["namespace"]) or {})]
    for row in entry["tasks"]:
        if row["namespace"] in found:
            row["unmatched_reason"] = "needs_network"
    if found:
        entry["needs_network"] = sorted(set(entry.get("needs_network", [])) | set(found))
    return bool(found)


def _dominant_error(results: dict[str, dict]) -> str | None:
    lines = Counter()
    for r in results.values():
        log = (r.get("ref") or {}).get("log_tail") or r.get("error") or ""
        for a, b in _ERROR_LINE.findall(log):
            lines[(a or b)[:160]] += 1
            break
    return lines.most_common(1)[0][0] if lines else None


# ------------------------------------------------------------------------------------------- entry

def _entry(job: ProjectJob, rel, prefix: str, env: EnvSpec, info: dict,
           matches: list[match.TaskMatch], results: dict, rerun: dict) -> dict:
    rows = []
    for m in matches:
        r = results.get(m.namespace)
        row = {**m.to_dict()}
        if r is not None:
            ref, blank = r.get("ref") or {}, r.get("blank") or {}
            row.update(oracle_pass=ref.get("outcome") == "pass", blank_fails=bool(blank) and blank.get("outcome") != "pass",
                       seconds=round((ref.get("seconds") or 0) + (blank.get("seconds") or 0), 2),
                       rc_ref=ref.get("rc"), rc_blank=blank.get("rc"))
            if not r.get("usable"):
                row["unmatched_reason"] = ("needs_network" if _needs_network(r) else "reference_fails") \
                    if not row["oracle_pass"] else "blank_passes"
        else:
            row.update(oracle_pass=False, blank_fails=False, seconds=0.0)
        rows.append(row)
    pins = list(env.pip_specs)
    n_usable = sum(1 for r in rows if r.get("oracle_pass") and r.get("blank_fails") and r["located_by"])
    build = [r["build_seconds"] for r in info["rounds"]]
    network = [r["namespace"] for r in rows if r.get("unmatched_reason") == "needs_network"]
    exclude_newer = info.get("exclude_newer") or job.exclude_newer
    if job.route == "sdist":
        source = {"route": "sdist", "release": {"name": rel.name, "version": rel.version, "filename": rel.filename,
                                                "upload_time": rel.upload_time, "url": rel.url},
                  "pypi_name": rel.name, "version": rel.version, "sdist_filename": rel.filename,
                  "sdist_sha256": rel.sha256, "sdist_bytes": rel.size}
    else:
        source = {"route": rel.route, rel.route: rel.provenance, "pypi_name": rel.name, "version": rel.version,
                  "sdist_filename": None, "sdist_sha256": None, "sdist_bytes": None}
    entry = {
        "project_path": job.project_path, **source,
        "path_prefix_in_sdist": prefix, "pythonpath_in_tree": env.pythonpath[0],
        "test_requirements": _specs(info),
        "install_notes": f"derived by scripts.map_deveval from {', '.join(info['sources']) or 'test-file imports'}"
                         f"{'' if info['extras'] else ' (optional test extras left out)'}"
                         f"{'; obsolete pinned test runner replaced' if info['runner_unpinned'] else ''}"
                         f"{'; pins relaxed (no build on Python 3.11): ' + ', '.join(info['relaxed']) if info.get('relaxed') else ''}"
                         f"{'; optional GPU / deep-learning imports left out: ' + ', '.join(info['heavy_left_out']) if info.get('heavy_left_out') else ''}; "
                         f"pinned with uv pip compile --exclude-newer {exclude_newer}",
        "pip_freeze": pins, "python": platform.python_version(),
        "versions_compared": {k: {x: v[x] for x in ("by_position", "by_name", "tests_exist", "full_match")}
                              for k, v in job.state["versions_compared"].items()},
        "n_tasks": len(job.tasks), "n_located": sum(m.located_by is not None for m in matches),
        "n_matched": sum(m.matched for m in matches), "n_usable": n_usable, "rerun_sample": rerun,
        "tasks": rows, "env_pip_install": pins, "install_project_from_sdist": bool(env.project_sdist),
        "compat_shims": list(env.compat_shims), "os_requirements": list(env.os_requirements),
        "mapping": {"cutoff": job.cutoff, "collected": job.collected, "exclude_newer": exclude_newer,
                    "resolver": "uv pip compile", "requirement_sources": info["sources"],
                    "optional_test_extras": info["extras"], "runner_unpinned": info["runner_unpinned"],
                    "heavy_left_out": info.get("heavy_left_out", []),
                    "install_attempts": [{k: v for k, v in a.items() if k != "error"} for a in info["install_attempts"]],
                    "search": job.state.get("search"), "fix_rounds": info["rounds"],
                    "build_seconds_median": statistics.median(build) if build else None},
    }
    if network:
        entry["needs_network"] = network
    return entry


# ------------------------------------------------------------------------------------------ docker

def docker_agreement(job: ProjectJob, docker: Executor) -> dict:
    """Re-run the oracle of the project's usable tasks under ``docker`` and record the agreement.

    A disagreement whose log names a missing command adds its Debian package to the entry's
    ``os_requirements`` and is run again once; one that fails with a network error is listed in the
    entry's ``needs_network`` (such tasks are not judged under Docker).
    """
    entry = job.state.get("entry")
    if not entry or job.state.get("status") != "mapped":
        return {}
    tasks = {t.namespace: t for t in job.tasks}
    root, archive = _chosen_tree(job)
    results = job.state.setdefault("docker_oracle", {})
    usable = [r for r in entry["tasks"] if r.get("oracle_pass") and r.get("blank_fails") and r.get("located_by")]

    def run(rows: list[dict]) -> None:
        env = _env_for(job, entry["env_pip_install"], entry["pythonpath_in_tree"], entry["os_requirements"],
                       archive if entry["install_project_from_sdist"] else None, entry.get("compat_shims", []))
        docker.prepare(env)

        def one(row):
            m = match.TaskMatch(row["namespace"], row["located_by"], row["signature_line"], row["body_start"],
                                row["body_end"], True)
            return row["namespace"], oracle_task(tasks[row["namespace"]], root, env=env, executor=docker, hint=_hint(m))

        finished = [0]

        def save(_: int, out) -> None:
            if isinstance(out, Exception):
                return
            ns, res = out
            results[ns] = {"usable": res["usable"], "ref": (res.get("ref") or {}).get("outcome"),
                           "blank": (res.get("blank") or {}).get("outcome"),
                           "log_tail": ((res.get("ref") or {}).get("log_tail") or "")[-1500:]}
            finished[0] += 1
            if finished[0] % 5 == 0 or finished[0] == len(rows):
                _save(job)

        run_pool(rows, one, workers=max(1, job.workers), progress=False, on_result=save, raise_errors=True)
        for row in rows:  # in the manifest's task order
            results[row["namespace"]] = results.pop(row["namespace"])

    run([r for r in usable if r["namespace"] not in results])
    if not job.state.get("docker_fixed"):
        failed = [r for r in usable if not results[r["namespace"]]["usable"]]
        added = []
        for r in failed:
            for pkg in fixes_from_log(results[r["namespace"]]["log_tail"])[1]:
                if pkg not in entry["os_requirements"] and pkg not in added:
                    added.append(pkg)
        job.state["docker_fixed"] = {"os_requirements_added": added}
        if added:
            entry["os_requirements"] = sorted(entry["os_requirements"] + added)
            run(failed)
    disagree = sorted(ns for ns, r in results.items() if not r["usable"])
    network = [ns for ns in disagree if NETWORK_ERROR.search(results[ns]["log_tail"])]
    if network:
        entry["needs_network"] = sorted(set(entry.get("needs_network", [])) | set(network))
    entry["docker_agreement"] = {"n": len(results), "agree": len(results) - len(disagree), "disagree": disagree,
                                 "os_requirements_added": job.state["docker_fixed"]["os_requirements_added"]}
    _save(job)
    return entry["docker_agreement"]
