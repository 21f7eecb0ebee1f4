"""Read-only tools: confinement against hostile inputs, caps, and normal use on the fixture repo."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from benchmarks.cab.tools import TOOL_NAMES, TOOL_SCHEMAS, RepoTools, ToolLimits

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cab_repo"
SECRET = "TOP-SECRET-OUTSIDE-THE-CHECKOUT"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A copy of the fixture repository plus hostile extras, next to a secret outside it."""
    root = tmp_path / "checkout"
    shutil.copytree(FIXTURE, root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    os.symlink(outside / "secret.txt", root / "link_out.txt")  # file symlink pointing out
    os.symlink(outside, root / "dir_out")  # directory symlink pointing out
    os.symlink(root / "README.md", root / "link_in.md")  # a harmless symlink inside
    (root / "blob.bin").write_bytes(bytes(range(256)) * 64)
    (root / "aaaa.txt").write_text("a" * 3000 + "\n")  # one very long line
    (root / "evil.txt").write_text(("a" * 40 + "!\n") * 3)  # input for a catastrophically backtracking regex
    return root


def _tools(root: Path, **limits) -> RepoTools:
    return RepoTools(root, ToolLimits(**limits))


HOSTILE_PATHS = [
    "../../etc/passwd", "../outside/secret.txt", "tinykv/../../outside/secret.txt", "/etc/passwd",
    "//etc/passwd", "\\etc\\passwd", "~/.ssh/id_rsa", "C:\\Windows\\win.ini", "link_out.txt", "dir_out/secret.txt",
    "dir_out", "tinykv/\x00../../etc/passwd", "..",
]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_hostile_paths_refused_by_every_tool(repo, path):
    tools = _tools(repo)
    calls = [("read_file", {"path": path}), ("list_dir", {"path": path}), ("search", {"pattern": "SECRET", "path": path}),
             ("find_files", {"pattern": "*", "path": path})]
    for name, args in calls:
        res = tools.execute(name, args)
        assert not res.ok and res.text.startswith("ERROR:"), (name, path, res.text)
        assert SECRET not in res.text and "root:" not in res.text
        assert res.refused or "does not exist" in res.text


def test_walks_never_leave_the_checkout(repo):
    tools = _tools(repo)
    for name, args in [("search", {"pattern": "SECRET"}), ("find_files", {"pattern": "*secret*"}), ("list_dir", {"path": "."})]:
        res = tools.execute(name, args)
        assert res.ok, res.text
        assert SECRET not in res.text
    listing = tools.execute("list_dir", {}).text
    assert "dir_out -> (link outside the repository)" in listing and "link_out.txt -> (link outside" in listing
    # a symlink that stays inside the checkout is fine
    assert "tinykv" in tools.execute("read_file", {"path": "link_in.md"}).text


def test_huge_file_is_capped(repo):
    (repo / "big.txt").write_text("".join(f"line {i} {'x' * 50}\n" for i in range(200_000)))  # ~11 MB
    tools = _tools(repo, max_read_lines=100, max_file_bytes=1_000_000)
    res = tools.execute("read_file", {"path": "big.txt"})
    assert not res.ok and "read it in line ranges" in res.text
    res = tools.execute("read_file", {"path": "big.txt", "start_line": 150_000, "end_line": 200_000})
    assert res.ok and res.truncated
    assert res.text.count("\n") <= 102 and "line 149999 " in res.text and "start_line=150100" in res.text
    res = tools.execute("read_file", {"path": "big.txt", "start_line": 5, "end_line": 9})
    assert res.ok and not res.truncated and res.text.count("| line ") == 5
    # byte cap on output, long lines cut
    res = _tools(repo, max_read_bytes=2000).execute("read_file", {"path": "big.txt", "start_line": 1, "end_line": 400})
    assert res.truncated and len(res.text) < 2300
    assert "[line cut]" in _tools(repo, max_line_chars=100).execute("read_file", {"path": "aaaa.txt"}).text
    # search skips files above its size cap
    res = _tools(repo, max_search_file_bytes=1_000_000).execute("search", {"pattern": "line 1999"})
    assert "big.txt" not in res.text


def test_binary_file_refused(repo):
    res = _tools(repo).execute("read_file", {"path": "blob.bin"})
    assert not res.ok and res.refused and "binary" in res.text
    assert "blob.bin" not in _tools(repo).execute("search", {"pattern": "."}).text


def test_catastrophic_regex_is_bounded(repo):
    tools = _tools(repo, search_timeout_s=1.0)
    # the stdlib engine would need minutes for this (fib(40) paths per line); ours stops at the budget
    t0 = time.monotonic()
    res = tools.execute("search", {"pattern": r"(a|aa)+$", "path": "evil.txt"})
    elapsed = time.monotonic() - t0
    assert elapsed < 5, elapsed
    assert res.ok and res.meta["timed_out"] and "catastrophic backtracking" in res.text
    # the same pattern on a short benign line still works
    (repo / "short.txt").write_text("aaaa\n")
    res = tools.execute("search", {"pattern": r"(a|aa)+$", "path": "short.txt"})
    assert res.ok and res.meta["matches"] == 1 and not res.meta["timed_out"]


def test_invalid_inputs_are_messages_not_exceptions(repo):
    tools = _tools(repo)
    cases = [("search", {"pattern": "(unclosed"}), ("search", {"pattern": ""}), ("read_file", {}),
             ("read_file", {"path": "README.md", "start_line": 0}), ("read_file", {"path": "README.md", "start_line": 9, "end_line": 3}),
             ("read_file", {"path": "tinykv"}), ("read_file", {"path": "nope.py"}), ("list_dir", {"path": "README.md"}),
             ("read_file", {"path": "README.md", "bogus": 1}), ("shell", {"cmd": "cat /etc/passwd"}), ("read_file", "{not json"),
             ("read_file", {"path": "README.md", "start_line": "ten"}), ("read_file", {"path": 5})]
    for name, args in cases:
        res = tools.execute(name, args)
        assert not res.ok and res.text.startswith("ERROR:"), (name, args, res.text)
    assert "available tools" in tools.execute("shell", {}).text


def test_normal_use_on_fixture():
    tools = RepoTools(FIXTURE)
    res = tools.execute("search", {"pattern": r"DEFAULT_TIMEOUT\s*=", "context_lines": 1})
    assert res.ok and "tinykv/config.py" in res.text and "DEFAULT_TIMEOUT = 5.0" in res.text
    res = tools.execute("read_file", {"path": "tinykv/config.py", "start_line": 9, "end_line": 10})
    assert res.ok and "    10| DEFAULT_TIMEOUT = 5.0" in res.text and "lines 9-10" in res.text
    res = tools.execute("find_files", {"pattern": "*.py"})
    assert res.ok and "tinykv/client.py" in res.text and "tests/check_config.py" in res.text
    assert "tinykv/retry.py" in tools.execute("find_files", {"pattern": "tinykv/re*.py"}).text
    res = tools.execute("list_dir", {"path": "tinykv"})
    assert res.ok and "client.py" in res.text
    res = tools.execute("search", {"pattern": "tinykv_retries", "glob": "*.md", "ignore_case": True})
    assert res.ok and res.meta["files"] == 1 and "== docs/usage.md" in res.text and "== tinykv" not in res.text
    res = tools.execute("search", {"pattern": "retries", "path": "tinykv", "context_lines": 0})
    assert res.ok and res.meta["matches"] >= 3 and "docs/usage.md" not in res.text
    capped = RepoTools(FIXTURE, ToolLimits(max_search_results=2)).execute("search", {"pattern": "."})
    assert capped.meta["matches"] == 2 and "result cap reached" in capped.text


def test_schemas_are_openai_function_tools():
    assert set(TOOL_NAMES) == {"list_dir", "read_file", "search", "find_files"}
    for s in TOOL_SCHEMAS:
        assert s["type"] == "function"
        f = s["function"]
        assert f["parameters"]["type"] == "object" and set(f["parameters"]["required"]) <= set(f["parameters"]["properties"])
