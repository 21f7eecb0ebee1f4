"""Repository snapshots for DevEval projects, and locating a task's function inside one.

Providers, tried in the configured order by :class:`ProviderChain`:
``local`` (a Source_Code directory), ``deveval_archive`` (DevEval's Source_Code.tar.gz: downloaded
once with a progress bar, sha256-verified, unpacked to the cache), ``pypi`` (an sdist at a pinned
version, verified and unpacked; ``path_prefix_in_sdist`` maps it) and ``git`` (a URL at a commit).

Cached snapshots are never modified: executors copy them per run. Snapshots the harness unpacked
itself get their write bits removed and a fingerprint (relative path, size, mtime of every file);
:func:`get_snapshot` checks the fingerprint once per process and refuses a modified snapshot.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from reconmem.platform import pyast

from .tasks import DevEvalTask, Manifest, ProjectEntry, TaskLocation, load_manifest

# The official snapshot archive (Hugging Face Hub, dataset LJ0815/DevEval). Override with the
# provider option `url` / `sha256` or RECONMEM_DEVEVAL_ARCHIVE_URL / _SHA256.
DEFAULT_ARCHIVE_URL = "https://huggingface.co/datasets/LJ0815/DevEval/resolve/main/Source_Code.tar.gz"
FINGERPRINT_NAME = ".reconmem-snapshot.json"


class SnapshotError(RuntimeError):
    """A snapshot cannot be provided (or was modified); the message says which and why."""


class LocateError(LookupError):
    """A task's function cannot be found in a snapshot file."""


# ------------------------------------------------------------------------------ snapshot guard

_verified: set[str] = set()
_verify_lock = threading.Lock()


def _fingerprint(root: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            if name == FINGERPRINT_NAME:
                continue
            st = os.lstat(p)
            h.update(f"{os.path.relpath(p, root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _make_read_only(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:          # files only: the directory can still be deleted to re-fetch
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if not stat.S_ISLNK(st.st_mode):
                os.chmod(p, st.st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def guard_snapshot(unpacked: Path) -> None:
    """Seal a harness-owned snapshot on first use; afterwards refuse it if anything changed."""
    key = str(unpacked.resolve())
    with _verify_lock:
        if key in _verified:
            return
        fp_file = unpacked / FINGERPRINT_NAME
        if fp_file.exists():
            recorded = json.loads(fp_file.read_text())["fingerprint"]
            if recorded != _fingerprint(unpacked):
                raise SnapshotError(f"cached snapshot {unpacked} was modified since it was unpacked; "
                                    f"delete it to have it fetched again")
        else:
            fp_file.write_text(json.dumps({"fingerprint": _fingerprint(unpacked)}))
            _make_read_only(unpacked)
        _verified.add(key)


# ------------------------------------------------------------------------------ providers

def _single_top_dir(path: Path) -> Path:
    entries = [p for p in path.iterdir() if p.name != FINGERPRINT_NAME]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else path


def _cache_root() -> Path:
    from reconmem.platform.downloads import cache_root

    return cache_root()


def pypi_snapshot(name: str, version: str, sha256: str | None = None, path_prefix: str | None = None) -> Path:
    """Unpacked sdist of ``name==version`` (verified); the project root is ``<unpacked>/<path_prefix>``."""
    from reconmem.platform.downloads import DownloadError, fetch_pypi_source

    try:
        unpacked = fetch_pypi_source(name, version, sha256=sha256)
    except DownloadError as exc:
        raise SnapshotError(f"pypi provider: {exc}") from exc
    guard_snapshot(unpacked)
    root = unpacked / path_prefix if path_prefix else _single_top_dir(unpacked)
    if not root.is_dir():
        raise SnapshotError(f"pypi provider: {name}=={version} has no directory {path_prefix!r} "
                            f"(field path_prefix_in_sdist)")
    return root


def _archive_location(url: str | None) -> tuple[str, str]:
    """``(url, cache name)`` of an archive given as a URL or a local file path (default: the official one)."""
    url = url or os.environ.get("RECONMEM_DEVEVAL_ARCHIVE_URL") or DEFAULT_ARCHIVE_URL
    if "://" not in url and Path(url).expanduser().is_file():
        url = Path(url).expanduser().resolve().as_uri()
    # the official archive keeps its own name; any other URL gets a directory of its own
    name = "Source_Code" if url == DEFAULT_ARCHIVE_URL else f"Source_Code-{hashlib.sha256(url.encode()).hexdigest()[:12]}"
    return url, name


def archive_file(url: str | None = None) -> Path:
    """Where the archive at ``url`` (a URL or a file path) is kept once downloaded."""
    return _cache_root() / "deveval" / f"{_archive_location(url)[1]}.tar.gz"


def archive_snapshot(project_path: str, *, url: str | None = None, sha256: str | None = None) -> Path:
    """DevEval's Source_Code archive (downloaded and unpacked once); returns ``<Source_Code>/<project_path>``.
    ``url`` may be a URL, an archive file's path, or an unpacked Source_Code directory."""
    from reconmem.platform.downloads import DownloadError, download_url, unpack_archive

    if url and "://" not in url and Path(url).expanduser().is_dir():
        return local_snapshot(url, project_path)
    sha256 = sha256 or os.environ.get("RECONMEM_DEVEVAL_ARCHIVE_SHA256")
    url, name = _archive_location(url)
    base = _cache_root() / "deveval"
    base.mkdir(parents=True, exist_ok=True)
    try:
        with open(base / f"{name}.lock", "w") as lock:      # one download and unpack across threads and processes
            fcntl.flock(lock, fcntl.LOCK_EX)
            archive = download_url(url, base / f"{name}.tar.gz", sha256=sha256, progress=True)
            unpacked = unpack_archive(archive, base / name)
    except DownloadError as exc:
        raise SnapshotError(f"deveval_archive provider: {exc}") from exc
    guard_snapshot(unpacked)
    source_code = unpacked / "Source_Code" if (unpacked / "Source_Code").is_dir() else _single_top_dir(unpacked)
    root = source_code / project_path
    if not root.is_dir():
        raise SnapshotError(f"deveval_archive provider: {project_path!r} not in {source_code}")
    return root


def local_snapshot(path: str | Path, project_path: str | None = None) -> Path:
    """A user's directory: either a Source_Code root (then ``project_path`` is appended) or a project root."""
    base = Path(path).expanduser()
    if project_path and (base / project_path).is_dir():
        return base / project_path
    if base.is_dir():
        return base
    raise SnapshotError(f"local provider: {base} (with project {project_path!r}) is not a directory")


def git_snapshot(url: str, commit: str, subdir: str | None = None) -> Path:
    """A git checkout of ``url`` at ``commit`` in the cache (shallow fetch of that commit)."""
    key = hashlib.sha256(url.encode()).hexdigest()[:12]
    dest = _cache_root() / "git" / f"{key}-{commit[:12]}"
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=dest.name + ".tmp"))
        try:
            for cmd in (["git", "init", "-q"], ["git", "remote", "add", "origin", url],
                        ["git", "fetch", "-q", "--depth", "1", "origin", commit],
                        ["git", "checkout", "-q", "FETCH_HEAD"]):
                proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=900)
                if proc.returncode != 0:
                    raise SnapshotError(f"git provider: {' '.join(cmd)} failed for {url}@{commit}: "
                                        f"{proc.stderr.strip()[-500:]}")
            shutil.rmtree(tmp / ".git")
            os.replace(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    guard_snapshot(dest)
    root = dest / subdir if subdir else dest
    if not root.is_dir():
        raise SnapshotError(f"git provider: {subdir!r} not in {url}@{commit}")
    return root


def get_snapshot(repo_spec: dict, *, manifest: Manifest | None = None) -> Path:
    """The pristine project root for a provider spec (never modify it; copy first).

    Specs: ``{"provider": "pypi", "name", "version", "sha256"?, "path_prefix"?}`` (the prefix is
    taken from the manifest entry when omitted), ``{"provider": "local", "path", "project_path"?}``,
    ``{"provider": "git", "url", "commit", "subdir"?}``, ``{"provider": "deveval_archive",
    "project_path", "url"?, "sha256"?}``.
    """
    if not isinstance(repo_spec, dict) or "provider" not in repo_spec:
        raise SnapshotError(f"repo spec must be a dict with a 'provider' field, got {repo_spec!r}")
    kind = repo_spec["provider"]
    try:
        if kind == "pypi":
            prefix = repo_spec.get("path_prefix")
            sha = repo_spec.get("sha256")
            if prefix is None or sha is None:
                entry = (manifest or load_manifest()).for_repo_spec(repo_spec)
                if entry is not None and entry.version == repo_spec.get("version"):
                    prefix = entry.path_prefix_in_sdist if prefix is None else prefix
                    sha = sha or entry.sdist_sha256
            return pypi_snapshot(repo_spec["name"], repo_spec["version"], sha, prefix)
        if kind == "local":
            return local_snapshot(repo_spec["path"], repo_spec.get("project_path"))
        if kind == "git":
            return git_snapshot(repo_spec["url"], repo_spec["commit"], repo_spec.get("subdir"))
        if kind == "deveval_archive":
            return archive_snapshot(repo_spec["project_path"], url=repo_spec.get("url"),
                                    sha256=repo_spec.get("sha256"))
    except KeyError as exc:
        raise SnapshotError(f"repo spec {repo_spec!r} lacks field {exc.args[0]!r}") from None
    raise SnapshotError(f"unknown provider {kind!r} in repo spec (known: pypi, local, git, deveval_archive)")


@dataclass
class Snapshot:
    """A resolved project snapshot: its root, the provider that gave it, the manifest entry if any."""

    root: Path
    provider: str
    entry: ProjectEntry | None = None


class ProviderChain:
    """Try providers in order for a project path. ``providers`` is a list of names or dicts:
    ``[{"name": "local", "path": ".../Source_Code"}, {"name": "deveval_archive", "url": ..., "sha256": ...},
    "pypi", {"name": "git", "sources": {"Topic/Project": {"url": ..., "commit": ...}}}]``.
    """

    def __init__(self, providers: list | None = None, *, manifest: Manifest | None = None):
        self.providers = [p if isinstance(p, dict) else {"name": p} for p in (providers or ["pypi"])]
        self.manifest = manifest or load_manifest()
        for p in self.providers:
            if p.get("name") not in ("local", "deveval_archive", "pypi", "git"):
                raise ValueError(f"unknown provider {p.get('name')!r} in provider chain")

    def resolve(self, project_path: str) -> Snapshot:
        errors = []
        for p in self.providers:
            name = p["name"]
            try:
                if name == "local":
                    if not p.get("path"):
                        raise SnapshotError("no 'path' configured")
                    return Snapshot(local_snapshot(p["path"], project_path), name)
                if name == "deveval_archive":
                    return Snapshot(archive_snapshot(project_path, url=p.get("url"), sha256=p.get("sha256")), name)
                if name == "pypi":
                    entry = self.manifest.project(project_path)
                    if entry is None:
                        raise SnapshotError(f"{project_path} is not in the manifest")
                    return Snapshot(get_snapshot(entry.repo_spec(), manifest=self.manifest), name, entry)
                if name == "git":
                    src = (p.get("sources") or {}).get(project_path)
                    if not src:
                        raise SnapshotError(f"no git source configured for {project_path}")
                    return Snapshot(git_snapshot(src["url"], src["commit"], src.get("subdir")), name)
            except (SnapshotError, OSError) as exc:
                errors.append(f"{name}: {exc}")
        raise SnapshotError(f"no provider could supply {project_path}: " + "; ".join(errors))


# ------------------------------------------------------------------------------ locating functions

@dataclass(frozen=True)
class FunctionLocation:
    """1-based line numbers of a task's function in a snapshot file."""

    file: Path
    signature_line: int        # the `def` line
    body_start: int
    body_end: int
    located_by: str            # "manifest" | "position" | "name" | "name_recomputed"
    indent: int                # indentation of the body


def _defs_by_qualname(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = f"{prefix}{child.name}"
                out.append((q, child))
                walk(child, q + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def _body_start(node) -> int:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str) and len(body) > 1:
        return body[0].end_lineno + 1
    return body[0].lineno


def definitions_for(tree, namespace: str) -> list[ast.AST]:
    """The definitions whose qualified name is the longest suffix of ``namespace`` (``Class.method`` or ``func``)."""
    best, best_len = [], 0
    for qual, node in _defs_by_qualname(tree):
        if namespace == qual or namespace.endswith("." + qual):
            n = qual.count(".")
            if n > best_len or not best:
                best, best_len = [node], n
            elif n == best_len:
                best.append(node)
    return best


def locate_function(file: Path, task: DevEvalTask, hint: TaskLocation | None = None) -> FunctionLocation:
    """Find the task's function in ``file``: the manifest's lines when given (checked), else DevEval's
    positions, else by qualified name with the same span (lines shifted), else the only definition of
    that name (body lines recomputed from the syntax tree)."""
    text = file.read_text(encoding="utf-8")
    lines = text.splitlines()
    name = task.function_name
    if hint is not None and hint.located:
        sig = lines[hint.signature_line - 1] if hint.signature_line and hint.signature_line <= len(lines) else ""
        if f"def {name}" in sig and hint.body_end <= len(lines):
            return FunctionLocation(file, hint.signature_line, hint.body_start, hint.body_end, "manifest",
                                    task.indent)
    try:
        tree = pyast.parse(text)
    except SyntaxError as exc:
        raise LocateError(f"{file}: cannot parse ({exc})") from None
    nodes = definitions_for(tree, task.namespace)
    if not nodes:
        raise LocateError(f"{file}: no definition of {task.namespace}")
    sig0, (b0, b1) = task.signature_position[0], task.body_position
    for node in nodes:
        if node.lineno == sig0 and node.end_lineno == b1:
            return FunctionLocation(file, sig0, b0, b1, "position", task.indent)
    span = b1 - sig0
    same = [n for n in nodes if n.end_lineno - n.lineno == span]
    if len(same) == 1:
        off = same[0].lineno - sig0
        return FunctionLocation(file, sig0 + off, b0 + off, b1 + off, "name", task.indent)
    if len(nodes) == 1:
        node = nodes[0]
        start = _body_start(node)
        indent = len(lines[start - 1]) - len(lines[start - 1].lstrip())
        return FunctionLocation(file, node.lineno, start, node.end_lineno, "name_recomputed", indent)
    raise LocateError(f"{file}: {len(nodes)} definitions of {task.namespace}, none at DevEval's position")


def task_file(snapshot_root: Path, task: DevEvalTask) -> Path:
    path = snapshot_root / task.file_in_project
    if not path.is_file():
        raise LocateError(f"{task.namespace}: file {task.file_in_project} not in snapshot {snapshot_root}")
    return path


def reference_function(snapshot_root: Path, task: DevEvalTask, hint: TaskLocation | None = None) -> dict:
    """The reference implementation of a task in a snapshot.

    Returns ``{"file", "signature_line", "body_start", "body_end", "located_by", "indent",
    "signature"  (the def line(s) up to the colon, with decorators excluded),
    "header" (signature_line .. body_start-1: signature plus docstring/comments),
    "body" (the body lines as in the file), "function" (decorators + header + body),
    "decorators"}``.
    """
    path = task_file(snapshot_root, task)
    loc = locate_function(path, task, hint)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[loc.signature_line - 1:loc.body_start - 1]
    body = lines[loc.body_start - 1:loc.body_end]
    signature = _signature_lines(header)
    deco_start = loc.signature_line - 1
    while deco_start > 0 and lines[deco_start - 1].lstrip().startswith("@"):
        deco_start -= 1
    decorators = lines[deco_start:loc.signature_line - 1]
    return {"file": task.file_in_project, "signature_line": loc.signature_line, "body_start": loc.body_start,
            "body_end": loc.body_end, "located_by": loc.located_by, "indent": loc.indent,
            "signature": "\n".join(signature), "header": "\n".join(header), "body": "\n".join(body),
            "decorators": "\n".join(decorators), "function": "\n".join(decorators + header + body)}


def _signature_lines(header: list[str]) -> list[str]:
    """The def line(s) up to the line whose code ends with ':' and parses as a complete header."""
    import textwrap

    for i in range(len(header)):
        chunk = textwrap.dedent("\n".join(header[: i + 1]))
        try:
            pyast.parse(chunk + "\n    pass\n")
            return header[: i + 1]
        except SyntaxError:
            continue
    return header[:1]
