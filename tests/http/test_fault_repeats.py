"""run.repeat=3 end to end over real HTTP: ``python -m scripts.run ... run.repeat=3`` against the
FaultServer whose SCRIPTED task replies vary from request to request (a seeded coin: the right ``add`` or a
wrong one; not a model's replies), with injected 503s. Each repeat is its own run directory, the repeat index
keeps the cache from replaying repeat 1's replies, and Table 1 shows mean ± sd over the three repeats."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HERE
from fault_server import GOOD_ADD, FaultServer, scripted_reply
from test_fault_runs import ROOT, _env, _locoeval_cmd, _sample, _tiny_repo, write_samples

pytestmark = pytest.mark.slow
BAD_ADD = "Here it is:\n```python\ndef add(a, b):\n    return a - b\n```"


def varying_reply(seed: int = 24):
    """SCRIPTED: memory calls as :func:`scripted_reply`; every other reply the right ``add`` with probability 0.6."""
    rng = random.Random(seed)

    def reply(body):
        text = scripted_reply(body)
        if text != GOOD_ADD:
            return text
        return GOOD_ADD if rng.random() < 0.6 else BAD_ADD

    return reply


def run_repeats(tmp: Path, methods=("full", "reconmem"), n_samples: int = 4, repeats: int = 3) -> tuple[Path, FaultServer]:
    """The repeated scripted run: ``methods`` x ``repeats`` over ``n_samples`` tiny samples (half multi-hop)."""
    repo = _tiny_repo(tmp)
    samples = [_sample(repo, f"s{i}") for i in range(n_samples)]
    for i, s in enumerate(samples):
        s["subset"] = "single-hop" if i % 2 == 0 else "multi-hop"
    path = write_samples(tmp / "samples.jsonl", samples)
    server = FaultServer(varying_reply(), retry_after=0.05, timeout_seconds=1.0).start()
    server.fault_fn = lambda n, body: "503" if n % 9 == 4 else None
    try:
        for method in methods:
            cmd = _locoeval_cmd(tmp, server, method, path, f"run.repeat={repeats}")
            proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, proc.stderr[-3000:]
    finally:
        server.stop()
    return tmp / "results", server


def test_repeat_three_over_a_varying_fault_server_gives_mean_and_sd(tmp_path):
    from benchmarks.analysis import tables
    from benchmarks.analysis.records import load_runs

    results, server = run_repeats(tmp_path)
    base = results / "locoeval" / "openai_compatible"
    for m in ("full", "reconmem"):
        assert sorted(p.name for p in (base / m).iterdir()) == ["t-r1", "t-r2", "t-r3"]
        for i in (1, 2, 3):
            manifest = json.loads((base / m / f"t-r{i}" / "manifest.json").read_text())
            assert manifest["repeat"] == {"index": i, "of": 3, "run_id": "t"}
    # The repeat index is in the cache key: repeats 2 and 3 sent their task requests again (same bodies).
    task_bodies = [e["key"] for e in server.log if e["paid"]]
    assert max(task_bodies.count(k) for k in set(task_bodies)) >= 3
    runs = load_runs([results])
    t = tables.table1(runs.tasks_frame("locoeval"), runs.samples_frame("locoeval"), n_resamples=500)
    d = t.data
    rows = d[(d.backbone != "overall") & d.method.isin(["full", "reconmem"])]
    assert set(rows["n_repeats"]) == {3}
    assert (rows["pass1_sd"] > 0).any()  # the replies varied between repeats
    assert " ± " in t.to_markdown()
    (tmp_path / "table1.md").write_text(t.to_markdown())
    print(t.to_markdown())
