"""The maintainer's window guard on both hosts, for every method, with scripted replies
(tests/cab/overflow_kit.py, not a model's): an oversized tool result in a small window errors no issue,
every request sent fits the window, and the trims are recorded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import open_dict

from cab_testkit import FIXTURE_REPO, HERE
from overflow_kit import BIG_FILE, big_source

CONF = Path(__file__).resolve().parents[2] / "conf"
WINDOW = 3000  # tokens (the scripted backbone's count); maintainer replies keep min(2048, 1500) -> 1500-token prompts
METHODS = ["native_strands", "full", "mem0", "reconmem", "vanilla_rag", "mem0r", "memgpt", "ld_agent"]
HOSTS = ["builtin", "strands"]


@pytest.fixture(scope="module")
def big_repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("repo") / "tinykv"
    shutil.copytree(FIXTURE_REPO, repo)
    (repo / BIG_FILE).write_text(big_source(), encoding="utf-8")
    return repo


def _cfg(tmp_path: Path, repo: Path, method: str, host: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[
            "benchmark=cab", f"method={method}", "backbone=local", f"backbone.context_window={WINDOW}",
            "backbone.model=scripted/overflow_kit:maintainer",
            "user_backbone.model=scripted/overflow_kit:user", "judge_backbone.model=scripted/overflow_kit:judge",
            f"benchmark.maintainer_host={host}", "run.ids=[cab_fixture_1]", "run.run_id=overflow",
            f"run.results_dir={tmp_path / 'results'}", f"cache.dir={tmp_path / 'cache'}", "cache.llm=false",
            f"benchmark.data={HERE / 'fixture_issues.jsonl'}",
            "benchmark.repo_url_template='file:///nonexistent/{owner}/{name}'",
        ])
    with open_dict(cfg):
        cfg.benchmark.local_repos = {"example/tinykv": str(repo)}
    return cfg


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("method", METHODS)
def test_oversized_tool_result_errors_no_issue(method, host, big_repo, tmp_path):
    pytest.importorskip("strands")
    from benchmarks import runloop

    runloop.run(_cfg(tmp_path, big_repo, method, host))
    sample = tmp_path / "results" / "cab" / "local" / method / "overflow" / "samples" / "cab_fixture_1"
    result = json.loads((sample / "result.json").read_text())
    assert result["status"] == "ok", result.get("error")
    assert result["verdict"] == "CORRECT" and result["turns"] == 2
    assert result["window_trims"] > 0  # the 12,000-character clip of the big file does not fit 1,500 tokens
    tools = [json.loads(x) for x in (sample / "tool_calls.jsonl").read_text().splitlines()]
    assert [t["args"]["path"] for t in tools[:2]] == [BIG_FILE, "tinykv/config.py"]
    events = [json.loads(x) for x in (sample / "ledger.jsonl").read_text().splitlines()]
    maintainer = [e for e in events if e.get("purpose") in ("turn_generation", "maintainer_tool_step")]
    assert len(maintainer) == 6  # two responses of three calls each
    assert all(e["input_tokens"] <= WINDOW - 1500 for e in maintainer), [e["input_tokens"] for e in maintainer]
    rows = [json.loads(x) for x in (sample / "contexts.jsonl").read_text().splitlines()]
    guard = [g for r in rows for g in r["context"]["meta"].get("window_guard", [])]
    assert guard and all(g["tokens_after"] <= g["prompt_budget"] for g in guard)
    assert any(g["elided_tool_results"] for g in guard) and any(g["truncated"] for g in guard)
