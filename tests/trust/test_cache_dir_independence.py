"""A method's prompts are a function of the exchange and the repository, not of where the harness
keeps its files: the same sample run under two cache directories, with the repository snapshot at
two paths, sends byte-identical prompts, and
no prompt names a harness path. (ReConMem's memory prompts named the repository after the blanked
copy's directory, ``boltons-23.1.1-<hash of the cache path>``, so two machines or two
``RECONMEM_CACHE`` settings gave different prompts and different replies.) Scripted replies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import benchmarks

CONF = Path(benchmarks.__file__).resolve().parents[1] / "conf"
METHODS = ["full", "vanilla_rag", "mem0", "mem0r", "memgpt", "ld_agent", "reconmem"]


def _prompts(method: str, cache_dir: Path, results: Path) -> list[tuple[str, str]]:
    import prompt_recorder

    from benchmarks import runloop

    prompt_recorder.PROMPTS.clear()
    _INDEXES.clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[
            "benchmark=demo", f"method={method}", "backbone=local",
            "backbone.model=scripted/prompt_recorder:reply", "benchmark.evaluator=canary_kit.fake_evaluate",
            f"run.results_dir={results}", f"cache.dir={cache_dir}", "cache.llm=false", "benchmark.progress=false",
            "run.ids=[boltons-mathutils-single]", "run.run_id=paths",
        ])
    runloop.run(cfg)
    return list(prompt_recorder.PROMPTS)


from benchmarks.locoeval.runner import _INDEX_CACHE as _INDEXES  # noqa: E402 - per-process index cache


@pytest.mark.parametrize("method", METHODS)
def test_prompts_do_not_depend_on_the_cache_dir(method, tmp_path, monkeypatch):
    """Run one: the snapshot where this machine's cache keeps it. Run two: another cache directory
    and the same snapshot at another path (what another machine or RECONMEM_CACHE gives)."""
    import shutil

    from benchmarks.locoeval import repo

    real_root = repo.snapshot_root
    first = _prompts(method, tmp_path / "cache-one", tmp_path / "r1")
    elsewhere: dict[str, Path] = {}

    def moved_root(spec):
        root = real_root(spec)
        if str(root) not in elsewhere:
            elsewhere[str(root)] = Path(shutil.copytree(root, tmp_path / "other-machine" / root.name, symlinks=True))
        return elsewhere[str(root)]

    monkeypatch.setattr(repo, "snapshot_root", moved_root)
    second = _prompts(method, tmp_path / "another-cache", tmp_path / "r2")
    assert elsewhere, "the second run used the moved snapshot"
    assert first, "the scripted backbone was called"
    assert [p for p, _ in first] == [p for p, _ in second]
    for (purpose, a), (_, b) in zip(first, second):
        assert a == b, f"{method}: a {purpose} prompt differs between cache directories"
    for purpose, text in first:
        assert "cache-one" not in text and "/blanked/" not in text and str(tmp_path) not in text, (method, purpose)
        assert not re.search(r"boltons-23\.1\.1-[0-9a-f]{16}", text), (method, purpose)  # a blanked copy's name
