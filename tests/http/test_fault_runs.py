"""End to end over real HTTP: ``python -m scripts.run ... backbone=openai_compatible`` against the
FaultServer (SCRIPTED replies, injected faults). Asserted at the server and in the records:
no sample lost, no call paid twice after a resume, retries bounded and logged, context-length
errors never retried and survived by the method, malformed JSON counted and survived, and a
SIGKILL in the middle of a 429 storm resumed without re-paying."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import HERE, PROXY_VARS
from fault_server import FaultServer, scripted_reply

ROOT = HERE.parents[1]

def _load_locoeval_helpers():
    import importlib.util

    spec = importlib.util.spec_from_file_location("locoeval_test_helpers", ROOT / "tests" / "locoeval" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_helpers = _load_locoeval_helpers()
tiny_sample, write_samples, _tiny_repo = _helpers.tiny_sample, _helpers.write_samples, _helpers.make_tiny_repo

pytestmark = pytest.mark.slow
MIX = ["429", "500", "reset", "502", "empty_choice", "503", "truncated_body", "truncated_json"]


def _sample(repo: Path, sid: str, turns: int = 4) -> dict:
    """A tiny LoCoEval sample whose turns name the sample (distinct prompts: no cache hits across samples)."""
    sample = tiny_sample(repo, sid, n_turns=turns)
    for step in sample["outline"]:
        step["text"] = f"[{sid}] {step['text']}"
    return sample


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests" / "locoeval"), str(HERE), str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _locoeval_cmd(tmp: Path, server: FaultServer, method: str, samples: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "scripts.run", "benchmark=locoeval", f"method={method}", "backbone=openai_compatible",
            f"backbone.api_base={server.url}", "backbone.pricing_model=openai/gpt-5-mini",
            f"benchmark.samples={samples}", "benchmark.evaluator=scripted_backbone.fake_evaluate",
            "benchmark.progress=false", f"run.results_dir={tmp / 'results'}",
            f"cache.dir={tmp / 'cache'}", "run.run_id=t", "llm.timeout=5", *extra]


def _results(run: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((run / "samples").glob("*/result.json"))}


def _ledger(run: Path) -> list[dict]:
    return [json.loads(line) for p in sorted((run / "samples").glob("*/ledger.jsonl"))
            for line in p.read_text().splitlines() if line.strip()]


@pytest.fixture()
def server():
    s = FaultServer(scripted_reply, retry_after=0.05, timeout_seconds=1.0).start()
    yield s
    s.stop()


@pytest.mark.parametrize("method", ["reconmem", "mem0"])
def test_locoeval_under_a_fault_mix_loses_nothing_and_never_pays_twice(tmp_path, server, method):
    repo = _tiny_repo(tmp_path)
    samples = write_samples(tmp_path / "samples.jsonl", [_sample(repo, f"s{i}") for i in range(3)])
    server.fault_fn = lambda n, body: MIX[(n // 2) % len(MIX)] if n % 2 == 1 else None  # every 2nd request faulty
    cmd = _locoeval_cmd(tmp_path, server, method, samples)
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "results" / "locoeval" / "openai_compatible" / method / "t"
    results = _results(run)
    assert sorted(results) == ["s0", "s1", "s2"] and all(r["status"] == "ok" for r in results.values())
    stats = server.stats()
    assert stats["duplicate_paid"] == 0 and sum(stats["faults"].values()) >= 8, stats
    ledger = _ledger(run)
    retried = [e for e in ledger if e.get("retries")]
    assert retried and max(e["retries"] for e in retried) <= 6  # bounded (llm.max_retries)
    transient = sum(n for kind, n in stats["faults"].items() if kind != "truncated_json")
    assert sum(e["retries"] for e in retried) == transient         # every retry recorded in the ledger
    logged = sum(f.read_text().count("retrying in") for f in (tmp_path / "results" / ".hydra").rglob("run.log"))
    assert logged == transient                                     # and logged (Hydra's run.log), one line each
    json_faults = [e for e in server.log if e["fault"] == "truncated_json" and e["json_mode"]]
    summary = json.loads((run / "summary.json").read_text())
    assert json_faults and summary["json_failures"] >= len(json_faults)  # malformed JSON counted, run survived
    assert all(e["cost_usd"] > 0 for e in ledger if not e["cached"])  # priced as gpt-5-mini
    # the same command again: every sample is final, nothing is sent
    before = stats["requests"]
    again = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert server.stats()["requests"] == before


def test_context_length_errors_in_provider_wordings_are_not_retried_and_the_method_survives(tmp_path, server):
    samples = write_samples(tmp_path / "samples.jsonl", [_sample(_tiny_repo(tmp_path), "s0", turns=7)])
    wordings = iter(["context_openai", "context_anthropic", "context_gemini", "context_deepseek", "context_vllm"])
    hit: list[int] = []

    def fault(n, body):
        if (body.get("response_format") or {}).get("type") == "json_object":  # ReConMem's memory calls
            kind = next(wordings, None)
            if kind:
                hit.append(n)
            return kind
        return None

    server.fault_fn = fault
    proc = subprocess.run(_locoeval_cmd(tmp_path, server, "reconmem", samples), cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "results" / "locoeval" / "openai_compatible" / "reconmem" / "t"
    assert _results(run)["s0"]["status"] == "ok"
    assert len(hit) == 5
    refused = [e for e in server.log if e["fault"].startswith("context_")]
    assert len(refused) == 5
    for e in refused:  # each refused request was sent exactly once: never retried
        assert sum(1 for o in server.log if o["key"] == e["key"]) == 1


def test_sigkill_in_a_retry_storm_then_resume_pays_nothing_twice(tmp_path, server):
    n = 4
    repo = _tiny_repo(tmp_path)
    samples = write_samples(tmp_path / "samples.jsonl", [_sample(repo, f"s{i}") for i in range(n)])
    server.latency = 0.2
    server.retry_after = 0.3
    cmd = _locoeval_cmd(tmp_path, server, "reconmem", samples)
    run = tmp_path / "results" / "locoeval" / "openai_compatible" / "reconmem" / "t"
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not _results(run):
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read()[-3000:]
    server.storm = "429"  # the next sample's calls all get 429 + Retry-After
    storm_start = server.stats()["requests"]
    while time.time() < deadline and server.stats()["requests"] < storm_start + 4:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    server.storm = None
    first = server.stats()
    finished = _results(run)
    assert 1 <= len(finished) < n and first["faults"]["429"] >= 4
    kept = {sid: (run / "samples" / sid / "result.json").stat().st_mtime_ns for sid in finished}
    paid_before = server.paid_keys()

    rerun = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    final = _results(run)
    assert sorted(final) == [f"s{i}" for i in range(n)] and all(r["status"] == "ok" for r in final.values())
    assert all((run / "samples" / sid / "result.json").stat().st_mtime_ns == m for sid, m in kept.items())
    second = server.stats()
    assert second["duplicate_paid"] == 0, server.duplicate_paid()  # no call paid in the first run was paid again
    assert server.paid_keys() > paid_before
    (tmp_path / "counts.json").write_text(json.dumps({"first_run": first, "after_resume": second}))
    print("server counts:", json.dumps({"first_run": first, "after_resume": second}))


def _cab_fixture_conf(tmp: Path) -> Path:
    conf = tmp / "conf"
    (conf / "benchmark").mkdir(parents=True)
    (conf / "benchmark" / "cab_fixture.yaml").write_text(
        "defaults:\n  - cab\n  - _self_\nname: cab\n"
        f"local_repos: {{example/tinykv: {ROOT / 'tests' / 'fixtures' / 'cab_repo'}}}\n")
    return conf


def test_cab_all_three_roles_over_http_with_faults(tmp_path, server):
    fixtures = ROOT / "tests" / "cab"
    server.fault_fn = lambda n, body: ["503", "429", "reset"][n % 3] if n % 4 == 2 else None
    cmd = [sys.executable, "-m", "scripts.run", "method=full",
           "backbone=openai_compatible", f"backbone.api_base={server.url}",
           "backbone@user_backbone=openai_compatible", f"user_backbone.api_base={server.url}",
           "backbone@judge_backbone=openai_compatible", f"judge_backbone.api_base={server.url}",
           f"benchmark.data={fixtures / 'fixture_issues.jsonl'}", "benchmark.repo_url_template='file:///nonexistent/{owner}/{name}'",
           f"hydra.searchpath=[file://{_cab_fixture_conf(tmp_path)}]", "benchmark=cab_fixture",
           f"run.results_dir={tmp_path / 'results'}", f"cache.dir={tmp_path / 'cache'}", "run.run_id=t", "llm.timeout=5"]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "results" / "cab" / "openai_compatible" / "full" / "t"
    results = _results(run)
    assert results["cab_fixture_1"]["status"] == "ok", results["cab_fixture_1"]
    assert results["cab_fixture_2"]["status"] == "init_failed"
    stats = server.stats()
    assert stats["duplicate_paid"] == 0 and stats["faults"], stats
    before = stats["requests"]
    again = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and server.stats()["requests"] == before
