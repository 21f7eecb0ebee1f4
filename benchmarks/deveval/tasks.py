"""DevEval task records (``data.jsonl``) and the project manifest (``pypi_sources.json`` format).

Both loaders validate their input; errors name the file, the line or entry, and the field.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from reconmem.platform.jsonfiles import iter_json_records, read_json

DATA_DIR = Path(__file__).resolve().parent / "data"
SHIPPED_MANIFEST = DATA_DIR / "pypi_sources.json"
DATA_SHA256_FILE = DATA_DIR / "data.jsonl.sha256"
DATA_ENV_VAR = "RECONMEM_DEVEVAL_DATA"


class TaskDataError(ValueError):
    """A task or manifest record is malformed; the message names file, line/entry and field."""


@dataclass(frozen=True)
class DevEvalTask:
    namespace: str
    type: str                                  # "function" | "method"
    project_path: str                          # "Topic/Project"
    completion_path: str                       # relative to the Source_Code root, starts with project_path
    signature_position: tuple[int, int]        # 1-based inclusive
    body_position: tuple[int, int]
    tests: tuple[str, ...]
    indent: int
    requirement: dict = field(default_factory=dict, compare=False)
    dependency: dict = field(default_factory=dict, compare=False)

    @property
    def file_in_project(self) -> str:
        """``completion_path`` without the ``Topic/Project/`` prefix."""
        prefix = self.project_path.rstrip("/") + "/"
        return self.completion_path[len(prefix):] if self.completion_path.startswith(prefix) else self.completion_path

    @property
    def function_name(self) -> str:
        return self.namespace.rsplit(".", 1)[-1]


def _require(rec: dict, key: str, types, where: str):
    if key not in rec:
        raise TaskDataError(f"{where}: missing field {key!r}")
    value = rec[key]
    if not isinstance(value, types):
        raise TaskDataError(f"{where}: field {key!r} has type {type(value).__name__}, expected "
                            f"{getattr(types, '__name__', types)}")
    return value


def _position(rec: dict, key: str, where: str) -> tuple[int, int]:
    pos = _require(rec, key, list, where)
    if len(pos) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in pos) \
            or pos[0] < 1 or pos[1] < pos[0]:
        raise TaskDataError(f"{where}: field {key!r} must be [start, end] with 1 <= start <= end, got {pos!r}")
    return int(pos[0]), int(pos[1])


def parse_task(rec: dict, where: str = "task") -> DevEvalTask:
    """Validate one record and build a :class:`DevEvalTask`."""
    if not isinstance(rec, dict):
        raise TaskDataError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    namespace = _require(rec, "namespace", str, where)
    kind = _require(rec, "type", str, where)
    if kind not in ("function", "method"):
        raise TaskDataError(f"{where}: field 'type' must be 'function' or 'method', got {kind!r}")
    project_path = _require(rec, "project_path", str, where)
    completion_path = _require(rec, "completion_path", str, where)
    if not completion_path.startswith(project_path.rstrip("/") + "/"):
        raise TaskDataError(f"{where}: field 'completion_path' {completion_path!r} does not start with "
                            f"project_path {project_path!r}")
    sig, body = _position(rec, "signature_position", where), _position(rec, "body_position", where)
    if body[0] <= sig[0]:
        raise TaskDataError(f"{where}: field 'body_position' {list(body)} must start after signature_position")
    tests = _require(rec, "tests", list, where)
    if not tests or not all(isinstance(t, str) and t for t in tests):
        raise TaskDataError(f"{where}: field 'tests' must be a non-empty list of pytest node ids")
    indent = _require(rec, "indent", int, where)
    if indent < 0:
        raise TaskDataError(f"{where}: field 'indent' must be >= 0, got {indent}")
    return DevEvalTask(namespace=namespace, type=kind, project_path=project_path,
                       completion_path=completion_path, signature_position=sig, body_position=body,
                       tests=tuple(tests), indent=indent, requirement=rec.get("requirement") or {},
                       dependency=rec.get("dependency") or {})


def load_tasks(path: str | Path | None = None) -> list[DevEvalTask]:
    """Load and validate DevEval's ``data.jsonl`` (default: :func:`default_data_path`)."""
    path = Path(path) if path else default_data_path()
    if not path.exists():
        raise FileNotFoundError(f"DevEval data file {path} not found: run `python -m scripts.fetch_deveval` "
                                f"or set {DATA_ENV_VAR}")
    tasks, seen = [], set()
    for where, rec in iter_json_records(path, error=TaskDataError):
        task = parse_task(rec, where)
        if task.namespace in seen:
            raise TaskDataError(f"{where}: duplicate namespace {task.namespace!r}")
        seen.add(task.namespace)
        tasks.append(task)
    return tasks


@lru_cache(maxsize=4)
def _tasks_by_namespace(path: str) -> dict[str, DevEvalTask]:
    return {t.namespace: t for t in load_tasks(path)}


def get_task(namespace: str, data_path: str | Path | None = None) -> DevEvalTask:
    """One task by namespace (the data file is loaded once per process)."""
    path = str(Path(data_path) if data_path else default_data_path())
    tasks = _tasks_by_namespace(path)
    if namespace not in tasks:
        raise KeyError(f"namespace {namespace!r} is not in {path}")
    return tasks[namespace]


def default_data_path() -> Path:
    """``$RECONMEM_DEVEVAL_DATA`` or ``<cache>/deveval/data.jsonl`` (written by scripts/fetch_deveval.py)."""
    if os.environ.get(DATA_ENV_VAR):
        return Path(os.environ[DATA_ENV_VAR]).expanduser()
    from reconmem.platform.downloads import cache_root

    return cache_root() / "deveval" / "data.jsonl"


def expected_data_sha256() -> str:
    """The sha256 of DevEval's data.jsonl shipped with the package."""
    return DATA_SHA256_FILE.read_text().split()[0]


# ----------------------------------------------------------------------------------------- manifest

@dataclass(frozen=True)
class TaskLocation:
    """Where a task's function sits in a snapshot (1-based lines) and its recorded oracle result."""

    namespace: str
    located_by: str | None                # "position" | "name" | None (not in this snapshot)
    signature_line: int | None
    body_start: int | None
    body_end: int | None
    oracle_pass: bool | None = None
    blank_fails: bool | None = None
    unmatched_reason: str | None = None
    rc_ref: int | None = None
    rc_blank: int | None = None

    @property
    def located(self) -> bool:
        return self.body_start is not None and self.body_end is not None

    @property
    def usable(self) -> bool:
        """Recorded as usable: reference passes and a blank fails."""
        return bool(self.located and self.oracle_pass and self.blank_fails)


@dataclass(frozen=True)
class ProjectEntry:
    """One manifest entry: a project, the sdist that stands in for DevEval's snapshot, its environment."""

    project_path: str
    pypi_name: str
    version: str
    sdist_sha256: str | None
    path_prefix_in_sdist: str
    pythonpath_in_tree: str
    env_pip_install: tuple[str, ...]
    python: str
    install_project_from_sdist: bool
    compat_shims: tuple[str, ...]
    os_requirements: tuple[str, ...]
    tasks: tuple[TaskLocation, ...]
    sdist_filename: str | None = None
    pip_no_deps: bool = True
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    def task(self, namespace: str) -> TaskLocation | None:
        return next((t for t in self.tasks if t.namespace == namespace), None)

    def repo_spec(self) -> dict:
        """The provider spec of this entry's snapshot (by its ``route``: sdist, archive or git)."""
        route = self.raw.get("route", "sdist")
        if route == "git":
            g = self.raw["git"]
            return {"provider": "git", "url": g["url"], "commit": g["commit"], **({"subdir": g["subdir"]}
                                                                                   if g.get("subdir") else {})}
        if route == "archive":
            a = self.raw.get("archive") or {}
            return {"provider": "deveval_archive", "project_path": self.project_path,
                    **{k: a[k] for k in ("url", "sha256") if a.get(k)}}
        return {"provider": "pypi", "name": self.pypi_name, "version": self.version, "sha256": self.sdist_sha256,
                "path_prefix": self.path_prefix_in_sdist}


def _parse_location(rec: dict, where: str) -> TaskLocation:
    if not isinstance(rec, dict) or not isinstance(rec.get("namespace"), str):
        raise TaskDataError(f"{where}: each task needs a string field 'namespace'")
    ints = {}
    for key in ("signature_line", "body_start", "body_end", "rc_ref", "rc_blank"):
        v = rec.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise TaskDataError(f"{where}: field {key!r} must be an integer or null, got {v!r}")
        ints[key] = v
    if (ints["body_start"] is None) != (ints["body_end"] is None):
        raise TaskDataError(f"{where}: fields 'body_start' and 'body_end' must both be set or both null")
    if ints["body_start"] is not None and ints["body_end"] < ints["body_start"]:
        raise TaskDataError(f"{where}: 'body_end' {ints['body_end']} < 'body_start' {ints['body_start']}")
    return TaskLocation(namespace=rec["namespace"], located_by=rec.get("located_by"),
                        signature_line=ints["signature_line"], body_start=ints["body_start"],
                        body_end=ints["body_end"], oracle_pass=rec.get("oracle_pass"),
                        blank_fails=rec.get("blank_fails"), unmatched_reason=rec.get("unmatched_reason"),
                        rc_ref=ints["rc_ref"], rc_blank=ints["rc_blank"])


def parse_project_entry(rec: dict, where: str) -> ProjectEntry:
    """Validate one manifest entry (format of ``pypi_sources.json``)."""
    if not isinstance(rec, dict):
        raise TaskDataError(f"{where}: expected an object")
    for key in ("project_path", "pypi_name", "version"):
        _require(rec, key, str, where)
    pip = rec.get("env_pip_install", rec.get("pip_freeze"))
    no_deps = True
    if pip is None:
        pip, no_deps = rec.get("test_requirements"), False   # not a complete freeze: let pip resolve
    if not isinstance(pip, list) or not all(isinstance(x, str) for x in pip):
        raise TaskDataError(f"{where}: field 'env_pip_install' (or 'pip_freeze' / 'test_requirements') "
                            f"must be a list of pip specs")
    pythonpath = rec.get("pythonpath_in_tree", ".")
    if not isinstance(pythonpath, str) or pythonpath.startswith("/") or ".." in Path(pythonpath).parts:
        raise TaskDataError(f"{where}: field 'pythonpath_in_tree' must be a relative path inside the tree")
    prefix = rec.get("path_prefix_in_sdist", "")
    if not isinstance(prefix, str) or prefix.startswith("/") or ".." in Path(prefix).parts:
        raise TaskDataError(f"{where}: field 'path_prefix_in_sdist' must be a relative path")
    tasks = rec.get("tasks", [])
    if not isinstance(tasks, list):
        raise TaskDataError(f"{where}: field 'tasks' must be a list")
    for key in ("compat_shims", "os_requirements"):
        if not isinstance(rec.get(key, []), list):
            raise TaskDataError(f"{where}: field {key!r} must be a list")
    route = rec.get("route", "sdist")
    if route not in ("sdist", "archive", "git"):
        raise TaskDataError(f"{where}: field 'route' must be sdist, archive or git, got {route!r}")
    if route == "git" and not (isinstance(rec.get("git"), dict) and isinstance(rec["git"].get("url"), str)
                               and isinstance(rec["git"].get("commit"), str)):
        raise TaskDataError(f"{where}: field 'git' must be an object with string fields 'url' and 'commit'")
    return ProjectEntry(
        project_path=rec["project_path"], pypi_name=rec["pypi_name"], version=rec["version"],
        sdist_sha256=rec.get("sdist_sha256"), path_prefix_in_sdist=prefix,
        pythonpath_in_tree=pythonpath, env_pip_install=tuple(pip), python=str(rec.get("python", "3.11")),
        install_project_from_sdist=bool(rec.get("install_project_from_sdist", False)),
        compat_shims=tuple(rec.get("compat_shims", [])), os_requirements=tuple(rec.get("os_requirements", [])),
        tasks=tuple(_parse_location(t, f"{where} task {i}") for i, t in enumerate(tasks)),
        sdist_filename=rec.get("sdist_filename"), pip_no_deps=no_deps, raw=rec)


class Manifest:
    """A list of :class:`ProjectEntry`, looked up by project path, PyPI name or task namespace.
    ``superseded``: entries a remapping replaced, found only by :meth:`for_repo_spec` at their version."""

    def __init__(self, entries: list[ProjectEntry], path: Path | None = None,
                 superseded: list[ProjectEntry] | None = None):
        self.entries = entries
        self.path = path
        self.superseded = superseded or []
        self._by_project = {e.project_path: e for e in entries}

    def __iter__(self):
        return iter(self.entries)

    def __len__(self):
        return len(self.entries)

    def project(self, project_path: str) -> ProjectEntry | None:
        return self._by_project.get(project_path)

    def for_repo_spec(self, repo_spec: dict) -> ProjectEntry | None:
        """The entry a ``{"provider": "pypi", "name", "version"}`` spec refers to (or by project_path)."""
        if repo_spec.get("project_path") and repo_spec["project_path"] in self._by_project:
            return self._by_project[repo_spec["project_path"]]
        name, version = (repo_spec.get("name") or "").lower(), repo_spec.get("version")
        for e in self.entries:
            if e.pypi_name.lower() == name and (version is None or e.version == version):
                return e
        for e in self.superseded:
            if e.pypi_name.lower() == name and e.version == version:
                return e
        return None

    def select(self, projects: list[str] | None) -> list[ProjectEntry]:
        """Entries whose project path, project name or PyPI name is in ``projects`` (all if None)."""
        if not projects:
            return list(self.entries)
        wanted = {p.lower() for p in projects}
        out = [e for e in self.entries if {e.project_path.lower(), e.project_path.split("/")[-1].lower(),
                                           e.pypi_name.lower()} & wanted]
        known = {n for e in self.entries for n in (e.project_path.lower(), e.pypi_name.lower(),
                                                   e.project_path.split('/')[-1].lower())}
        unknown = wanted - known
        if unknown:
            raise TaskDataError(f"unknown project(s) {sorted(unknown)} (option --projects); "
                                f"manifest has {[e.pypi_name for e in self.entries]}")
        return out


def load_manifest(path: str | Path | None = None) -> Manifest:
    """Load a manifest in ``pypi_sources.json`` format (default: the copy shipped with the package)."""
    path = Path(path) if path else SHIPPED_MANIFEST
    data = read_json(path, name="manifest", error=TaskDataError)
    if not isinstance(data, list):
        raise TaskDataError(f"{path}: expected a list of project entries")
    old = superseded_path(path)
    superseded = load_manifest(old).entries if old.exists() and old != Path(path) else []
    return Manifest([parse_project_entry(rec, f"{path} entry {i}") for i, rec in enumerate(data)], Path(path),
                    superseded)


def superseded_path(manifest_path: str | Path) -> Path:
    """Where a manifest's superseded entries are kept: ``<name>.superseded.json`` beside it."""
    p = Path(manifest_path)
    return p.with_name(p.name[:-len(".json")] + ".superseded.json" if p.name.endswith(".json")
                       else p.name + ".superseded.json")


def env_spec_for(entry: ProjectEntry, *, sdist_archive: Path | None = None):
    """The :class:`~benchmarks.sandbox.base.EnvSpec` of a manifest entry (all quirks come from its fields)."""
    from benchmarks.sandbox.base import EnvSpec

    if entry.install_project_from_sdist and sdist_archive is None:
        from reconmem.platform.downloads import pip_download_sdist

        sdist_archive = pip_download_sdist(entry.pypi_name, entry.version, sha256=entry.sdist_sha256)
    return EnvSpec(name=entry.project_path, python=entry.python, pip_specs=entry.env_pip_install,
                   pip_no_deps=entry.pip_no_deps, pythonpath=(entry.pythonpath_in_tree,),
                   compat_shims=entry.compat_shims, os_requirements=entry.os_requirements,
                   project_sdist=str(sdist_archive) if entry.install_project_from_sdist else None,
                   project_sdist_sha256=entry.sdist_sha256 if entry.install_project_from_sdist else None)


class PreparedEnvs:
    """``entry -> EnvSpec``: each manifest entry's test environment (:func:`env_spec_for`), prepared
    on ``executor`` the first time it is asked for; safe to call from several threads."""

    def __init__(self, executor) -> None:
        self.executor = executor
        self._envs: dict[str, object] = {}
        self._lock = threading.Lock()

    def __call__(self, entry: ProjectEntry):
        with self._lock:
            if entry.project_path not in self._envs:
                env = env_spec_for(entry)
                self.executor.prepare(env)
                self._envs[entry.project_path] = env
            return self._envs[entry.project_path]
