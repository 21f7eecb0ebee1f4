"""The other releases of a fork task's project: does any of them already hold the fork's value?

A fork change must be a decision no release of the project made (``catalogue`` docstring). The
screening checks the snapshot; this module checks the project's other sdists on the package index
(the JSON API ``$RECONMEM_PYPI_JSON``, default ``https://pypi.org/pypi``).

Which releases (:data:`RULE`): the snapshot's release; the last release of every ``major.minor``
series; every release after the snapshot's version (pre-releases too). At most
:data:`MAX_RELEASES` releases and :data:`MAX_PROJECT_MB` of sdists per project: past either cap the
after-snapshot releases go first, oldest first, then the oldest series; what was left out is listed in
the row (``releases_skipped``). One sdist per version (``.tar.gz`` before ``.zip``; yanked files left out).

How a release is checked: its sdist is downloaded once into ``<cache>/locoeval_fork/releases/<name>/``
(sha256 checked against the index's digest; a finished file is reused, so an interrupted run resumes)
and read in place with ``tarfile`` / ``zipfile`` (only the members needed). The target file is the
snapshot's path under the archive's top directory, else the path from the package's own directory
(``src/`` layouts come and go); when that file does not define the function, every ``.py`` member
defining the function's last name is searched (a moved function). The function is found by its
qualified name (the namespace's parts after the module; methods, decorated and conditional
definitions, all definitions of that name), with ``ast`` or, for a file this Python cannot parse
(Python 2), by indentation. A change's **fork fragment** (for ``order``: its fork text, the swapped
statements) is looked for in the function's source, both sides normalised by :func:`fragment_key`
(whitespace removed, quotes folded, a trailing comma before a bracket dropped); so is its public
fragment, which the snapshot's release must hold (``snapshot.public_missing`` otherwise: the check is
then unsound for that task and the row is not ``ok``).

One JSON line per task (``namespace``, ``changes_sha256`` (:func:`changes_digest`), ``project_path``,
``pypi_name``, ``snapshot``, ``releases_checked``, ``releases_missing_function``, ``releases_moved``,
``releases_skipped``, ``fork_hits`` / ``public_hits``: change key -> versions whose function holds the
fragment, ``file_hits``: versions whose file holding the function (else the target file) holds the fork
fragment anywhere -- for review, it does not decide ``ok`` --, ``ok``, ``rule``) is appended to the results
file once its project is done. A task already there (same namespace and ``changes_sha256``) is skipped; a
task re-screened with other changes is checked again (the latest row counts); a line cut short by a crash
is removed and its task checked again. :func:`release_problems` reads the file for ``ship``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from reconmem.platform import pyast
from reconmem.platform.downloads import DownloadError, cache_root, download_url
from reconmem.platform.jsonfiles import iter_json_records

MAX_RELEASES = 400
MAX_PROJECT_MB = 2000.0


def rule_text(max_releases: int = MAX_RELEASES, max_mb: float = MAX_PROJECT_MB) -> str:
    """The release rule as recorded in every row."""
    return (f"the snapshot's release + the last release of every major.minor series + every release after the "
            f"snapshot's version; at most {max_releases} releases and {max_mb:.0f} MB of sdists per project (over a "
            f"cap the oldest after-snapshot releases, then the oldest series, are skipped); one sdist per version; "
            f"fork fragment (order: fork text) searched in the function's source, whitespace removed, quotes folded")


RULE = rule_text()


class ReleaseCheckError(ValueError):
    """Bad input or a download that must not be trusted (one line naming the file / release)."""


def fragment_key(s: str) -> str:
    """A code fragment as compared: whitespace removed, ``"`` folded to ``'``, ``,)`` -> ``)``."""
    out = re.sub(r"\s+", "", s).replace('"', "'")
    return re.sub(r",([)\]}])", r"\1", out)


def change_needle(change: dict[str, Any]) -> str:
    """What a release must not hold for a change: its fork fragment (``order``: the fork text)."""
    return change["fork_text"] if change["kind"] == "order" else change["fork_fragment"]


# ---------------------------------------------------------------- inputs

def validated_rows(screens: Iterable[Path]) -> list[dict[str, Any]]:
    """The validated rows of screening files (latest row per namespace of each file's newest version;
    a later file overrides an earlier one)."""
    from benchmarks.locoeval.fork.ship import latest_validated

    rows: dict[str, dict[str, Any]] = {}
    for path in screens:
        if not Path(path).is_file():
            raise ReleaseCheckError(f"screening file {path} not found (option --screen)")
        got, _ = latest_validated(Path(path))
        for row in got:
            for key in ("namespace", "project_path", "version", "file", "changes"):
                if key not in row:
                    raise ReleaseCheckError(f"{path}: validated row {row.get('namespace')!r} lacks field {key!r}")
            rows[row["namespace"]] = row
    return sorted(rows.values(), key=lambda r: (r["project_path"], r["namespace"]))


def module_path(namespace: str, file: str) -> tuple[str, str]:
    """``(path from the package's top directory, qualified name)`` of a task's function.

    ``src/jinja2/utils.py`` + ``jinja2.utils.object_type_repr`` -> ``("jinja2/utils.py",
    "object_type_repr")``; a method keeps its class (``IMAPClient.enable``)."""
    parts = file.split("/")
    ns = namespace.split(".")
    pkg = parts[parts.index(ns[0]):] if ns[0] in parts else parts
    mod = "/".join(pkg)[:-3].split("/") if file.endswith(".py") else pkg
    if mod and mod[-1] == "__init__":
        mod = mod[:-1]
    if ns[:len(mod)] == mod and len(ns) > len(mod):
        return "/".join(pkg), ".".join(ns[len(mod):])
    return "/".join(pkg), ns[-1]


@dataclass
class TaskCheck:
    """One task's accumulating result."""

    row: dict[str, Any]
    pkg_path: str
    qualname: str
    checked: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    moved: dict[str, list[str]] = field(default_factory=dict)
    fork_hits: dict[str, list[str]] = field(default_factory=dict)
    public_hits: dict[str, list[str]] = field(default_factory=dict)
    file_hits: dict[str, list[str]] = field(default_factory=dict)


# ---------------------------------------------------------------- release selection

def _version(v: str) -> Version | None:
    try:
        return Version(v)
    except InvalidVersion:
        return None


def select_releases(releases: list[Any], snapshot: str, *, max_releases: int = MAX_RELEASES,
                    max_mb: float = MAX_PROJECT_MB) -> tuple[list[Any], list[str]]:
    """The releases to check (:data:`RULE`) and the versions left out by the caps.

    ``releases``: :class:`benchmarks.deveval.mapping.pypi.SdistRelease` (or anything with ``version``,
    ``filename``, ``size``)."""
    one: dict[str, Any] = {}
    for r in releases:
        if r.version not in one or (one[r.version].filename.endswith(".zip") and r.filename.endswith(".tar.gz")):
            one[r.version] = r
    snap_v = _version(snapshot)
    series: dict[Any, Any] = {}
    for r in one.values():
        v = _version(r.version)
        key = (v.release + (0,))[:2] if v else r.version
        if key not in series or (v and _version(series[key].version) and v > _version(series[key].version)):
            series[key] = r
    after = sorted((r for r in one.values() if snap_v and _version(r.version) and _version(r.version) > snap_v),
                   key=lambda r: _version(r.version), reverse=True)
    by_age = sorted(series.values(), key=lambda r: (_version(r.version) is not None,
                                                   _version(r.version) or Version("0")), reverse=True)
    ordered: list[Any] = [one[snapshot]] if snapshot in one else []
    for r in list(after) + by_age:     # newest first: the caps cut the oldest of each group
        if r not in ordered:
            ordered.append(r)
    # priority: the snapshot, then series' last releases, then the other after-snapshot releases
    series_set = {id(r) for r in series.values()}
    priority = ordered[:1] + [r for r in ordered[1:] if id(r) in series_set] + \
        [r for r in ordered[1:] if id(r) not in series_set]
    chosen, skipped, total = [], [], 0.0
    for r in priority:
        mb = (r.size or 0) / 1e6
        if len(chosen) >= max_releases or (chosen and total + mb > max_mb):
            skipped.append(r.version)
            continue
        chosen.append(r)
        total += mb
    return chosen, sorted(skipped, key=lambda v: (_version(v) is not None, _version(v) or Version("0")))


# ---------------------------------------------------------------- downloads and archives

def releases_cache() -> Path:
    return cache_root() / "locoeval_fork" / "releases"


def download(rel: Any, cache: Path) -> tuple[Path, bool]:
    """``(archive, newly downloaded)``: the sdist in ``cache/<name>/`` (sha256 checked)."""
    dest = cache / rel.name / rel.filename
    fresh = not dest.is_file()
    if not rel.sha256:
        raise ReleaseCheckError(f"{rel.name} {rel.version}: the index gives no sha256 for {rel.filename}")
    try:
        download_url(rel.url, dest, sha256=rel.sha256, progress=False)
    except DownloadError as exc:
        if "sha256 mismatch" in str(exc):
            raise ReleaseCheckError(f"{rel.name} {rel.version}: {rel.filename} from {rel.url} does not match the "
                                    f"index's sha256 {rel.sha256} (file {dest}; not used)") from None
        raise
    return dest, fresh


def archive_members(archive: Path, wanted: Callable[[str], bool]) -> Iterator[tuple[str, str]]:
    """``(path under the top directory, text)`` of the ``.py`` members ``wanted`` accepts, read in place."""
    def strip(name: str) -> str:
        return name.split("/", 1)[1] if "/" in name else name

    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                rel = strip(info.filename)
                if not info.is_dir() and rel.endswith(".py") and wanted(rel):
                    yield rel, zf.read(info).decode("utf-8", errors="replace")
        return
    with tarfile.open(archive, "r:*") as tf:
        for m in tf:
            rel = strip(m.name)
            if m.isfile() and rel.endswith(".py") and wanted(rel):
                fh = tf.extractfile(m)
                if fh is not None:
                    yield rel, fh.read().decode("utf-8", errors="replace")


# ---------------------------------------------------------------- finding the function

def _defs(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, ast.AST]]:
    """``(qualified name, node)`` of every class and function, also inside if / try / with blocks."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            q = prefix + node.name
            yield q, node
            yield from _defs(node.body, q + ".")
        else:
            for name in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(node, name, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], (ast.stmt, ast.excepthandler)):
                    yield from _defs(sub, prefix)


def function_sources(text: str, qualname: str) -> list[str]:
    """The source of every definition of ``qualname`` in a module (decorators included)."""
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError):
        return _function_sources_by_indent(text, qualname)
    lines = text.splitlines()
    out = []
    for q, node in _defs(tree.body, ""):
        if q == qualname and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out.append("\n".join(lines[first - 1:node.end_lineno]))
    return out


def _block_end(lines: list[str], start: int, stop: int) -> int:
    """The line after the indented block that opens at ``lines[start]``."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    i = start + 1
    while i < stop:
        s = lines[i]
        if s.strip() and not s.lstrip().startswith("#") and len(s) - len(s.lstrip()) <= indent:
            break
        i += 1
    return i


def _function_sources_by_indent(text: str, qualname: str) -> list[str]:
    """:func:`function_sources` for a module this Python cannot parse: blocks found by indentation."""
    lines = text.expandtabs(8).splitlines()
    ranges = [(0, len(lines), -1)]
    parts = qualname.split(".")
    for k, part in enumerate(parts):
        kw = r"(?:async\s+)?def" if k == len(parts) - 1 else r"(?:class|(?:async\s+)?def)"
        pat = re.compile(rf"^(\s*){kw}\s+{re.escape(part)}\b")
        found = []
        for lo, hi, outer in ranges:
            for i in range(lo, hi):
                m = pat.match(lines[i])
                if m and len(m.group(1)) > outer and _nearest_opener(lines, i, lo) == lo - 1:
                    found.append((i + 1, _block_end(lines, i, hi), len(m.group(1))))
        ranges = found
    return ["\n".join(lines[lo - 1:hi]) for lo, hi, _ in ranges]


def _nearest_opener(lines: list[str], i: int, lo: int) -> int:
    """The index of the line whose block directly holds line ``i`` (``lo - 1``: the enclosing one)."""
    indent = len(lines[i]) - len(lines[i].lstrip())
    for j in range(i - 1, lo - 1, -1):
        s = lines[j]
        if s.strip() and len(s) - len(s.lstrip()) < indent and re.match(r"\s*(class|def|async\s+def)\b", s):
            return j
    return lo - 1


@dataclass
class Located:
    """A task's function in one release: its definitions per file (empty: not found) and the text of the
    files it was found in (else of the target file, when the release has one)."""

    sources: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)


def find_functions(archive: Path, tasks: list[tuple[str, str, str]]) -> list[Located]:
    """Per task ``(file, pkg_path, qualname)``: where ``qualname`` is defined in a release.

    The snapshot's path first, else the path from the package directory (shortest match), else every
    ``.py`` member defining the function's last name. One pass over the archive reads the candidate
    files of every task; a second pass (only when a task's function was not there) reads the ``.py``
    members that define one of the missing names."""
    def candidate(rel: str) -> bool:
        return any(rel == file or rel == pkg or rel.endswith("/" + pkg) for file, pkg, _ in tasks)

    files = dict(archive_members(archive, candidate))
    out: list[Located] = []
    for file, pkg, qualname in tasks:
        order = [file] if file in files else sorted((p for p in files if p == pkg or p.endswith("/" + pkg)),
                                                    key=lambda p: (len(p), p))
        loc = Located(files={p: files[p] for p in order[:1]})
        for path in order:
            srcs = function_sources(files[path], qualname)
            if srcs:
                loc = Located({path: srcs}, {path: files[path]})
                break
        out.append(loc)
    lost = [i for i, loc in enumerate(out) if not loc.sources]
    if lost:
        names = {tasks[i][2].rsplit(".", 1)[-1] for i in lost}
        needle = re.compile(r"\bdef\s+(" + "|".join(map(re.escape, sorted(names))) + r")\b")
        defining = [(p, t) for p, t in archive_members(archive, lambda rel: True) if needle.search(t)]
        for i in lost:
            for path, text in defining:
                srcs = function_sources(text, tasks[i][2])
                if srcs:
                    if not out[i].sources:
                        out[i] = Located()
                    out[i].sources[path], out[i].files[path] = srcs, text
    return out


# ---------------------------------------------------------------- the check

@dataclass
class RunStats:
    tasks: int = 0
    tasks_with_hit: int = 0
    tasks_not_ok: int = 0
    releases_checked: int = 0
    downloaded: int = 0
    downloaded_mb: float = 0.0
    skipped_done: int = 0
    projects_failed: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        return (f"{self.tasks} tasks checked ({self.skipped_done} already done), {self.tasks_with_hit} with a fork "
                f"fragment in another release, {self.tasks_not_ok} not ok; {self.releases_checked} releases read, "
                f"{self.downloaded} downloaded ({self.downloaded_mb:.1f} MB)"
                + (f"; projects failed: {self.projects_failed}" if self.projects_failed else ""))


def changes_digest(row: dict[str, Any]) -> str:
    """sha256 of what a task's check depends on: snapshot, file, and per change its key and both fragments."""
    what = [row["project_path"], row["version"], row["file"],
            sorted((ch["key"], change_needle(ch), ch["fragment"]) for ch in row["changes"])]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()


def done_tasks(out: Path, log: Callable[[str], None] = print) -> set[tuple[str, str]]:
    """``(namespace, changes_sha256)`` of the rows already in the results file (a task re-screened with
    other changes is checked again). Lines a crash cut short are removed from the file (rewritten
    atomically with every complete row), so that the file stays well-formed for readers."""
    if not out.is_file():
        return set()
    done, keep, cut = set(), [], 0
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            done.add((row["namespace"], row.get("changes_sha256")))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            cut += 1
            continue
        keep.append(line)
    if cut:
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in keep), encoding="utf-8")
        os.replace(tmp, out)
        log(f"{out}: {cut} line(s) cut short by an interrupted run removed; their tasks are checked again")
    return done


def check_project(pypi_name: str, snapshot: str, rows: list[dict[str, Any]], *, cache: Path,
                  stats: RunStats, max_releases: int = MAX_RELEASES, max_mb: float = MAX_PROJECT_MB,
                  log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """The result rows of one project's tasks (all from the snapshot ``snapshot``)."""
    from benchmarks.deveval.mapping.pypi import NotOnIndex, sdist_releases

    try:
        listed = sdist_releases(pypi_name)
    except NotOnIndex as exc:
        listed, note = [], str(exc)
    else:
        note = ""
    chosen, skipped = select_releases(listed, snapshot, max_releases=max_releases, max_mb=max_mb)
    checks = []
    for row in rows:
        pkg, qual = module_path(row["namespace"], row["file"])
        checks.append(TaskCheck(row, pkg, qual))
    snap_public: dict[str, list[str]] = {c.row["namespace"]: [] for c in checks}
    for rel in chosen:
        archive, fresh = download(rel, cache)
        if fresh:
            stats.downloaded += 1
            stats.downloaded_mb += archive.stat().st_size / 1e6
        stats.releases_checked += 1
        try:
            founds = find_functions(archive, [(c.row["file"], c.pkg_path, c.qualname) for c in checks])
        except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ReleaseCheckError(f"{pypi_name} {rel.version}: cannot read {archive}: {exc}") from None
        for c, loc in zip(checks, founds):
            whole = fragment_key("\n".join(loc.files.values()))
            for ch in c.row["changes"]:
                if fragment_key(change_needle(ch)) in whole:
                    c.file_hits.setdefault(ch["key"], []).append(rel.version)
            found = loc.sources
            if not found:
                c.missing.append(rel.version)
                continue
            c.checked.append(rel.version)
            if list(found) != [c.row["file"]]:
                c.moved[rel.version] = sorted(found)
            source = fragment_key("\n".join(s for srcs in found.values() for s in srcs))
            for ch in c.row["changes"]:
                if fragment_key(change_needle(ch)) in source:
                    c.fork_hits.setdefault(ch["key"], []).append(rel.version)
                public = ch["public_text"] if ch["kind"] == "order" else ch["fragment"]
                if fragment_key(public) in source:
                    c.public_hits.setdefault(ch["key"], []).append(rel.version)
    on_index = any(r.version == snapshot for r in chosen)
    order = {r.version: i for i, r in enumerate(sorted(chosen, key=lambda r: (_version(r.version) is not None,
                                                                             _version(r.version) or Version("0"))))}
    for c in checks:
        for lst in [c.checked, c.missing, *c.fork_hits.values(), *c.public_hits.values(),
                    *c.file_hits.values()]:
            lst.sort(key=order.__getitem__)
    out = []
    for c in checks:
        keys = [ch["key"] for ch in c.row["changes"]]
        public_missing = [k for k in keys if on_index and snapshot not in c.public_hits.get(k, [])]
        ok = not c.fork_hits and not public_missing
        out.append({"namespace": c.row["namespace"], "changes_sha256": changes_digest(c.row),
                    "project_path": c.row["project_path"], "pypi_name": pypi_name,
                    "qualname": c.qualname, "file": c.row["file"],
                    "snapshot": {"version": snapshot, "on_index": on_index, "public_missing": public_missing},
                    "releases_listed": len({r.version for r in listed}), "releases_checked": c.checked,
                    "releases_missing_function": c.missing, "releases_moved": c.moved,
                    "releases_skipped": skipped, "fork_hits": c.fork_hits, "public_hits": c.public_hits,
                    "file_hits": c.file_hits,
                    "fork_needles": {ch["key"]: change_needle(ch) for ch in c.row["changes"]},
                    "ok": ok, "rule": rule_text(max_releases, max_mb), **({"note": note} if note else {})})
        log(f"  {c.row['namespace']}: {len(c.checked)} releases, {len(c.missing)} without the function, "
            f"fork hits {c.fork_hits or 'none'}" + (f", public fragment missing in the snapshot {public_missing}"
                                                   if public_missing else ""))
    return out


def check_releases(screens: list[Path], out: Path, *, projects: list[str] | None = None,
                   manifest: Any = None, cache: Path | None = None, max_releases: int = MAX_RELEASES,
                   max_mb: float = MAX_PROJECT_MB, log: Callable[[str], None] = print) -> RunStats:
    """Check every validated task of the screening files not yet in ``out``; one row per task appended
    when its project is done."""
    from benchmarks.deveval.tasks import load_manifest
    from benchmarks.locoeval.fork.screen import append_result

    man = manifest if manifest is not None and not isinstance(manifest, (str, Path)) else load_manifest(manifest)
    rows = validated_rows(screens)
    if projects:
        wanted = {e.project_path for e in man.select(projects)}
        rows = [r for r in rows if r["project_path"] in wanted]
    done = done_tasks(out, log)
    stats = RunStats(skipped_done=sum((r["namespace"], changes_digest(r)) in done for r in rows))
    by_project: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if (r["namespace"], changes_digest(r)) not in done:
            by_project.setdefault((r["project_path"], r["version"]), []).append(r)
    cache = cache or releases_cache()
    for (project_path, version), todo in by_project.items():
        entry = man.project(project_path)
        if entry is None:
            raise ReleaseCheckError(f"no manifest entry for {project_path} (task {todo[0]['namespace']})")
        log(f"{project_path} ({entry.pypi_name} {version}): {len(todo)} tasks")
        try:
            results = check_project(entry.pypi_name, version, todo, cache=cache, stats=stats,
                                    max_releases=max_releases, max_mb=max_mb, log=log)
        except DownloadError as exc:      # the network: the project's tasks stay undone for the next run
            stats.projects_failed[project_path] = str(exc)[:300]
            log(f"  failed: {exc}")
            continue
        for res in results:
            append_result(out, res)
            stats.tasks += 1
            stats.tasks_with_hit += bool(res["fork_hits"])
            stats.tasks_not_ok += not res["ok"]
    return stats


def release_problems(path: Path, rows: dict[str, dict[str, Any]] | None = None) -> dict[str, str]:
    """``namespace -> why the fork is dropped`` for every task whose row in a results file is not ok
    (the latest row of a namespace counts; ``rows``: the file's :func:`release_rows`, when read)."""
    out = {}
    for ns, row in (release_rows(path) if rows is None else rows).items():
        if row["ok"]:
            continue
        needles = row.get("fork_needles") or {}
        why = [f"fork fragment `{needles.get(key, key)}` in release{'s' if len(vs) > 1 else ''} {', '.join(vs)}"
               for key, vs in row["fork_hits"].items()]
        missing = (row.get("snapshot") or {}).get("public_missing") or []
        if missing:
            why.append(f"release check unsound: public fragment of {', '.join(missing)} not found in the "
                       f"snapshot's release {row['snapshot'].get('version')}")
        out[ns] = "; ".join(why) or "not ok"
    return out


def release_skips(path: Path, namespaces: Iterable[str]) -> dict[str, str]:
    """The tasks of ``namespaces`` to leave out of the set, with why: another release holds the fork
    (``release_problems``) or the check did not cover the task."""
    rows = release_rows(path)
    problems = release_problems(path, rows)
    out = {}
    for ns in namespaces:
        if ns in problems:
            out[ns] = f"other releases: {problems[ns]}"
        elif ns not in rows:
            out[ns] = f"other releases: not checked in {path}"
    return out


def release_rows(path: Path) -> dict[str, dict[str, Any]]:
    """The latest row of every namespace in a results file (a bad line: one-line error naming file:line)."""
    latest: dict[str, dict[str, Any]] = {}
    for where, row in iter_json_records(Path(path), error=ReleaseCheckError):
        for key, typ in (("namespace", str), ("ok", bool), ("fork_hits", dict)):
            if not isinstance(row.get(key), typ):
                raise ReleaseCheckError(f"{where}: field {key!r} must be a {typ.__name__}")
        latest[row["namespace"]] = row
    return latest
