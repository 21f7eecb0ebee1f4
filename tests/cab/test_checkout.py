"""Repository checkout: git fetch of exactly one commit into the cache, local mapping, failures."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.cab.checkout import CheckoutError, prepare_checkout
from cab_testkit import FIXTURE_REPO

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org"}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def upstream(tmp_path: Path) -> tuple[Path, str, str]:
    """A git repository of the fixture with two commits; returns (path, first sha, second sha)."""
    src = tmp_path / "remote" / "example" / "tinykv"
    shutil.copytree(FIXTURE_REPO, src)
    _git(src, "init", "-q")
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "first")
    first = _git(src, "rev-parse", "HEAD")
    (src / "NEW_IN_SECOND.txt").write_text("later\n")
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "second")
    return src, first, _git(src, "rev-parse", "HEAD")


def test_fetch_exactly_the_commit_then_cache(fixture_issue, upstream, tmp_path):
    src, first, second = upstream
    issue = replace(fixture_issue, commit_id=first)
    template = f"file://{tmp_path}/remote/{{owner}}/{{name}}"
    root, info = prepare_checkout(issue, cache_dir=tmp_path / "cache", url_template=template, timeout=60)
    assert info["provider"] == "git" and root == tmp_path / "cache" / "example__tinykv" / first
    assert (root / "tinykv" / "config.py").is_file() and not (root / "NEW_IN_SECOND.txt").exists()
    assert _git(root, "rev-parse", "HEAD") == first
    assert _git(root, "rev-list", "--count", "--all") == "1"  # only that commit was fetched (depth 1)
    # second call: served from the cache, no git
    root2, info2 = prepare_checkout(issue, cache_dir=tmp_path / "cache", url_template="file:///nonexistent/{owner}/{name}")
    assert root2 == root and info2["provider"] == "cache"
    # a different commit is a different snapshot
    root3, _ = prepare_checkout(replace(issue, commit_id=second), cache_dir=tmp_path / "cache", url_template=template)
    assert (root3 / "NEW_IN_SECOND.txt").exists() and root3 != root


def test_failures_are_checkout_errors(fixture_issue, upstream, tmp_path):
    src, first, _ = upstream
    with pytest.raises(CheckoutError, match="git fetch failed"):
        prepare_checkout(replace(fixture_issue, commit_id=first), cache_dir=tmp_path / "c",
                         url_template="file:///nonexistent/{owner}/{name}")
    with pytest.raises(CheckoutError, match="git fetch failed"):  # commit not in the repository
        prepare_checkout(replace(fixture_issue, commit_id="0" * 40), cache_dir=tmp_path / "c",
                         url_template=f"file://{tmp_path}/remote/{{owner}}/{{name}}")
    with pytest.raises(CheckoutError, match="no commit_id"):
        prepare_checkout(replace(fixture_issue, commit_id=None), cache_dir=tmp_path / "c")
    assert not any((tmp_path / "c").rglob("*.py"))  # nothing half-written left behind


def test_local_mapping(fixture_issue, tmp_path):
    root, info = prepare_checkout(fixture_issue, cache_dir=tmp_path, local_repos={"example/tinykv": str(FIXTURE_REPO)})
    assert root == FIXTURE_REPO.resolve() and info["provider"] == "local"
    with pytest.raises(CheckoutError, match="local_repos"):
        prepare_checkout(fixture_issue, cache_dir=tmp_path, local_repos={"example/tinykv": str(tmp_path / "missing")})
