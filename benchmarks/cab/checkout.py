"""Repository snapshots for CAB issues: a local directory mapping, or a cached git fetch of one commit.

Order of providers for an issue's ``owner/name``:

1. ``local_repos`` (``{"owner/name": "/path"}``; the path is used as-is, read-only) - offline use;
2. the cache ``<cache_dir>/<owner>__<name>/<commit>/`` when a previous fetch completed (marker file);
3. ``git init`` + ``git fetch --depth 1 origin <commit>`` + ``git checkout --detach FETCH_HEAD`` into a
   temporary sibling directory, then an atomic rename into the cache. Only that commit is fetched.

Any failure (no network, repository gone, commit unreachable, no ``commit_id``) raises
:class:`CheckoutError`; the runner records the issue as ``init_failed`` and excludes it from the
denominator (the paper evaluates 268 of 274 v3 issues for that reason).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Mapping

from benchmarks.cab.loader import CabIssue

DEFAULT_URL_TEMPLATE = "https://github.com/{owner}/{name}.git"
_MARKER = ".cab_checkout_ok"
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


class CheckoutError(RuntimeError):
    """The repository of an issue could not be initialised (message says which step failed)."""


def _lock_for(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _git(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true", GIT_LFS_SKIP_SMUDGE="1")
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def checkout_path(cache_dir: str | Path, issue: CabIssue) -> Path:
    """Where the cached snapshot of ``issue`` lives (whether or not it exists yet)."""
    return Path(cache_dir).expanduser() / f"{issue.owner}__{issue.name}" / str(issue.commit_id)


def fetch_commit(url: str, commit: str, dest: Path, *, timeout: float = 900.0) -> Path:
    """Fetch exactly ``commit`` of ``url`` into ``dest`` (must not exist); atomic via a temp dir."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        steps = [
            ["init", "-q"],
            ["remote", "add", "origin", url],
            ["-c", "protocol.version=2", "fetch", "-q", "--depth", "1", "--no-tags", "origin", commit],
            ["-c", "advice.detachedHead=false", "checkout", "-q", "--detach", "FETCH_HEAD"],
        ]
        for args in steps:
            try:
                proc = _git(args, tmp, timeout)
            except subprocess.TimeoutExpired as exc:
                raise CheckoutError(f"git {args[0] if args[0] != '-c' else args[2]} timed out after {timeout:.0f}s ({url} @ {commit})") from exc
            except FileNotFoundError as exc:
                raise CheckoutError("git is not installed (needed to fetch CAB repositories)") from exc
            if proc.returncode != 0:
                step = args[2] if args[0] == "-c" else args[0]
                msg = (proc.stderr or proc.stdout).strip().splitlines()
                raise CheckoutError(f"git {step} failed for {url} @ {commit}: {msg[-1] if msg else f'rc={proc.returncode}'}")
        head = _git(["rev-parse", "HEAD"], tmp, 60).stdout.strip()
        if not head.startswith(commit.lower()):
            raise CheckoutError(f"checked-out HEAD {head} is not the requested commit {commit}")
        (tmp / ".git" / _MARKER).write_text(head + "\n", encoding="utf-8")
        if dest.exists():  # a concurrent process finished first
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, dest)
        return dest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def prepare_checkout(
    issue: CabIssue,
    *,
    cache_dir: str | Path,
    local_repos: Mapping[str, str | Path] | None = None,
    url_template: str = DEFAULT_URL_TEMPLATE,
    timeout: float = 900.0,
) -> tuple[Path, dict]:
    """The snapshot directory for ``issue`` and a provenance record; raises :class:`CheckoutError`."""
    if local_repos:
        local = local_repos.get(issue.repo) or local_repos.get(issue.repo.lower())
        if local is not None:
            p = Path(str(local)).expanduser()
            if not p.is_dir():
                raise CheckoutError(f"benchmark.local_repos[{issue.repo!r}]: {p} is not a directory")
            return p.resolve(), {"provider": "local", "path": str(p.resolve()), "commit": issue.commit_id}
    if not issue.commit_id:
        raise CheckoutError(f"{issue.task_id}: no commit_id in the record; the snapshot cannot be pinned")
    dest = checkout_path(cache_dir, issue)
    url = url_template.format(owner=issue.owner, name=issue.name, repo=issue.repo)
    with _lock_for(str(dest)):
        if (dest / ".git" / _MARKER).is_file():
            return dest, {"provider": "cache", "path": str(dest), "commit": issue.commit_id, "url": url}
        if dest.exists():  # an interrupted earlier attempt left a directory without the marker
            shutil.rmtree(dest, ignore_errors=True)
        fetch_commit(url, issue.commit_id, dest, timeout=timeout)
    return dest, {"provider": "git", "path": str(dest), "commit": issue.commit_id, "url": url}
