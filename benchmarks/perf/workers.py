"""Throughput with workers over the real HTTP path: ``python -m scripts.bench workers``.

Starts the FaultServer of the test suite (tests/http/fault_server.py: an OpenAI-compatible
server with SCRIPTED replies and a fixed injected latency per call, default 0.5 s) and runs the
same LoCoEval sample set (tiny repository, method=full, distinct prompts per sample, fresh cache)
with ``python -m scripts.run backbone=openai_compatible`` at run.workers = 1, 4, 16. Timing is
taken at the server, from the first to the last chat request (process start-up and embedder
load excluded), and printed as wall seconds, speed-up against 1 worker and requests/s.
``--max-concurrency`` sets llm.max_concurrency (default: the config's). ``--two-processes`` also
runs two runs at once on one cache directory (a multirun's two jobs) and checks the cache.
Needs a source checkout (it imports the server from tests/).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")
TINY_MODULE = '"""Tiny helpers."""\n\n\ndef add(a, b):\n    """Return a + b."""\n    return a + b\n'


def server_module():
    """The test suite's fault_server module (its folder on sys.path for the modules it imports)."""
    folder = str(ROOT / "tests" / "http")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("fault_server", ROOT / "tests" / "http" / "fault_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_samples(tmp: Path, n: int, turns: int, tag: str) -> Path:
    repo = tmp / "tinyrepo"
    (repo / "tinypkg").mkdir(parents=True, exist_ok=True)
    (repo / "tinypkg" / "__init__.py").write_text("")
    (repo / "tinypkg" / "ops.py").write_text(TINY_MODULE)
    (repo / "tests").mkdir(exist_ok=True)
    (repo / "tests" / "test_ops.py").write_text("from tinypkg.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    rows = []
    for i in range(n):
        sid = f"{tag}{i}"
        outline = [{"turn": 1, "kind": "requirement", "req_id": "R1", "brief": "Introduce add.",
                    "text": f"[{sid}] I need add(a, b) in tinypkg/ops.py."}]
        outline += [{"turn": t, "kind": "noise", "brief": "Unrelated.", "text": f"[{sid}] Unrelated question {t}?"}
                    for t in range(2, turns + 1)]
        rows.append({"id": sid, "subset": "single-hop", "project_path": "Tiny/tinyrepo",
                     "repo": {"provider": "local", "path": str(repo)},
                     "requirements": [{"req_id": "R1", "namespace": "tinypkg.ops.add", "completion_path": "tinypkg/ops.py",
                                       "signature": "def add(a, b):", "tests": ["tests/test_ops.py::test_add"],
                                       "gt_items": [{"id": "R1.I1", "text": "add returns a + b.", "evidence": ["a + b"]}],
                                       "distractors": []}],
                     "outline": outline, "tasks": [{"req_id": "R1", "kind": "function_generation", "query": "Write add."}]})
    path = tmp / f"samples-{tag}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def start_run(server, tmp: Path, samples: Path, workers: int, cache: Path, run_id: str, max_concurrency: int | None,
         method: str, overrides: list[str]) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests" / "locoeval"), str(ROOT), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "scripts.run", "benchmark=locoeval", f"method={method}", "backbone=openai_compatible",
           f"backbone.api_base={server.url}", f"benchmark.samples={samples}",
           "benchmark.evaluator=scripted_backbone.fake_evaluate", "benchmark.progress=false",
           f"run.results_dir={tmp / 'results'}", f"cache.dir={cache}", f"run.run_id={run_id}", f"run.workers={workers}"]
    if max_concurrency:
        cmd.append(f"llm.max_concurrency={max_concurrency}")
    cmd.extend(overrides)
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def request_window(log: list[dict]) -> float:
    times = [e["t"] for e in log]
    return max(times) - min(times) if len(times) > 1 else 0.0


def run(args: argparse.Namespace) -> int:
    """The bench for the parsed command line of ``scripts.bench_workers`` (prints the table; 1 when a run fails)."""
    fs = server_module()
    server = fs.FaultServer(fs.scripted_reply, latency=args.latency).start()
    base = None
    cap = args.max_concurrency or "config"
    print(f"bench workers: {args.samples} samples x {args.turns} turns + 1 task, method={args.method}, "
          f"{args.latency:g} s per call at the server, llm.max_concurrency={cap}"
          + (f", overrides: {' '.join(args.override)}" if args.override else ""))
    print(f"{'workers':>8}{'requests':>10}{'wall s':>9}{'speed-up':>10}{'x/N':>7}{'req/s':>8}{'max in flight':>15}")
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as d:
        tmp = Path(d)
        for workers in [int(w) for w in args.workers.split(",")]:
            samples = write_samples(tmp / f"w{workers}", args.samples, args.turns, f"w{workers}-")
            server.reset_log()
            proc = start_run(server, tmp, samples, workers, tmp / f"cache-w{workers}", f"w{workers}", args.max_concurrency,
                        args.method, args.override)
            _, err = proc.communicate()
            if proc.returncode != 0:
                print(err[-2000:], file=sys.stderr)
                return 1
            log = list(server.log)
            wall = request_window(log) + args.latency
            base = base or wall
            speed = base / wall
            print(f"{workers:>8}{len(log):>10}{wall:>9.1f}{speed:>10.2f}{speed / workers:>7.2f}"
                  f"{len(log) / wall:>8.1f}{server.max_in_flight:>15}")
        if args.two_processes:
            server.reset_log()
            cache = tmp / "cache-shared"
            procs = [start_run(server, tmp, write_samples(tmp / f"p{i}", args.samples // 2, args.turns, "shared-"), 4, cache,
                          f"p{i}", args.max_concurrency, args.method, args.override) for i in range(2)]
            errs = [p.communicate()[1] for p in procs]
            if any(p.returncode for p in procs):
                print("\n".join(e[-1500:] for e in errs), file=sys.stderr)
                return 1
            log = list(server.log)
            import sqlite3

            with sqlite3.connect(str(cache / "llm_cache.sqlite")) as conn:
                ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
                rows = conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            distinct = len({e["key"] for e in log})
            print(f"two processes, one cache, the SAME samples: {len(log)} requests ({distinct} distinct) in "
                  f"{request_window(log) + args.latency:.1f} s; cache rows {rows}, integrity {ok}")
    server.stop()
    return 0

