"""Project trees for the archive and git routes of the mapping (the sdist route's are :mod:`.pypi`'s).

- **archive**: DevEval's own ``Source_Code`` archive (a URL, an archive file or an unpacked
  directory) holds every project's tree with its tests, at DevEval's lines by construction; the
  ``deveval_archive`` provider supplies it.
- **git**: a project's upstream repository (``git_sources.json``: project path -> URL). Its full
  history is cloned once into the cache; the candidate trees are the commits (up to the cut-off)
  that changed the task or test files, since trees that differ only elsewhere match alike. They are
  compared nearest the collection date first, like sdist releases; the chosen commit is checked out
  by the ``git`` provider. The manifest records the URL given (the upstream), never a mirror: point
  git at a mirror with its own ``url.<mirror>.insteadOf <upstream>`` configuration.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.deveval.providers import SnapshotError, archive_file, archive_snapshot, git_snapshot
from benchmarks.deveval.tasks import DATA_DIR, DevEvalTask
from reconmem.platform.jsonfiles import read_json

GIT_SOURCES = DATA_DIR / "git_sources.json"


@dataclass(frozen=True)
class TreeSource:
    """Where an archive- or git-route tree comes from (the sdist route's is :class:`.pypi.SdistRelease`)."""

    route: str                  # "archive" | "git"
    name: str                   # the project's index name (names the environment)
    version: str                # "deveval-archive" or the commit id
    upload_time: str            # the date the tree stands at (ISO)
    provenance: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class GitError(RuntimeError):
    """A git command failed; the message names it and its error output."""


def _git(repo: Path | None, *args: str, timeout: float = 1800) -> str:
    cmd = ["git", *(["-C", str(repo)] if repo else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise GitError(f"{' '.join(cmd[:6])} failed: {proc.stderr.strip()[-400:]}")
    return proc.stdout


# ------------------------------------------------------------------------------------------ archive

def archive_tree(project_path: str, archive: str, name: str, collected: str) -> tuple[TreeSource, Path]:
    """The project's tree in DevEval's archive (``archive``: a URL, an archive file or a Source_Code
    directory) and its provenance: the URL when one was given, and the archive's sha256."""
    local = Path(archive).expanduser()
    root = archive_snapshot(project_path, url=archive)
    if local.is_dir():
        prov = {"url": None, "sha256": None, "given": "directory"}
    else:
        from reconmem.platform.downloads import sha256_file

        prov = {"url": archive if "://" in archive and not archive.startswith("file:") else None,
                "sha256": sha256_file(archive_file(archive))}
    return TreeSource("archive", name, "deveval-archive", collected, prov), root


# ---------------------------------------------------------------------------------------------- git

def load_git_sources(path: Path | None = None) -> dict[str, dict]:
    """``{project_path: {"url", "subdir"?}}`` from ``git_sources.json`` (errors name the file and entry)."""
    path = Path(path or GIT_SOURCES)
    data = read_json(path, name="git sources file", option="--git-sources")
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object mapping project paths to {{'url': ...}}")
    for project, src in data.items():
        if not isinstance(src, dict) or not isinstance(src.get("url"), str):
            raise ValueError(f"{path}: entry {project!r} needs a string field 'url'")
    return data


def history_clone(url: str, cache: Path) -> Path:
    """A bare clone of ``url`` with its whole history, made once under ``cache``."""
    dest = cache / "git-history" / (hashlib.sha256(url.encode()).hexdigest()[:16] + ".git")
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        _git(None, "clone", "-q", "--bare", url, str(tmp))
        tmp.replace(dest)
    return dest


def candidate_commits(repo: Path, paths: list[str], cutoff: str, subdir: str | None = None) -> list[tuple[str, str]]:
    """``[(commit, committer date)]`` of every commit up to ``cutoff`` (any branch or tag) that changed
    one of ``paths`` (relative to the project root), newest first."""
    prefixed = [f"{subdir.rstrip('/')}/{p}" if subdir else p for p in paths]
    out = _git(repo, "log", "--all", "--format=%H %cI", f"--until={cutoff}T23:59:59Z", "--", *prefixed)
    rows = [line.split(" ", 1) for line in out.splitlines() if line.strip()]
    return [(c, d) for c, d in rows if d[:10] <= cutoff]


def files_at(repo: Path, commit: str, paths: list[str], dest: Path, subdir: str | None = None) -> Path:
    """Write the ``paths`` that exist at ``commit`` under ``dest`` (a partial tree for matching)."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    prefix = f"{subdir.rstrip('/')}/" if subdir else ""
    listed = _git(repo, "ls-tree", "-r", "--name-only", commit, "--", *[prefix + p for p in paths]).splitlines()
    for name in listed:
        blob = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", f"{commit}:{name}"], capture_output=True,
                              timeout=300)
        if blob.returncode == 0:
            target = dest / name[len(prefix):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob.stdout)
    return dest


def relevant_paths(tasks: list[DevEvalTask]) -> list[str]:
    """The task files and test files a tree must hold, relative to the project root."""
    return sorted({t.file_in_project for t in tasks} | {tid.split("::")[0] for t in tasks for tid in t.tests})


def git_tree(url: str, commit: str, date: str, name: str, subdir: str | None = None) -> tuple[TreeSource, Path]:
    """The chosen commit's full tree (through the ``git`` provider) and its provenance."""
    try:
        root = git_snapshot(url, commit, subdir)
    except SnapshotError as exc:
        raise GitError(str(exc)) from exc
    prov = {"url": url, "commit": commit, "commit_date": date, **({"subdir": subdir} if subdir else {})}
    return TreeSource("git", name, commit, date, prov), root
