"""The first verified set's regeneration command: ``python -m scripts.make_verified_locoeval v1``."""

from __future__ import annotations

import ast
import importlib

import pytest

from benchmarks.locoeval.verified.first_set import HistoryUnavailable, first_generator_source, run_first_generator
from scripts import make_verified_locoeval

PROJECT = ("benchmarks", "reconmem", "baselines")


def test_the_first_generator_runs_its_own_command_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        make_verified_locoeval.main(["v1", "--help"])
    assert exit_info.value.code == 0
    usage = capsys.readouterr().out
    assert "--tasks-per-project" in usage and "--max-screened" in usage  # the first generator's own options


def test_every_package_name_the_first_generator_imports_still_exists():
    tree = ast.parse(first_generator_source())
    missing, checked = [], 0
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PROJECT:
            module = importlib.import_module(node.module)
            for alias in node.names:
                checked += 1
                if not hasattr(module, alias.name):
                    missing.append(f"{node.module}.{alias.name}")
    assert checked >= 8, "the first generator's package imports were not found"
    assert not missing, f"names the first generator imports are gone: {missing}"


def test_without_the_history_the_command_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    with pytest.raises(HistoryUnavailable, match="010fcb4"):
        run_first_generator(["--help"], repo_root=tmp_path)
    monkeypatch.setattr("benchmarks.locoeval.verified.first_set.REPO_ROOT", tmp_path)
    assert make_verified_locoeval.main(["v1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: git show 010fcb4:") and len(err.splitlines()) == 1
