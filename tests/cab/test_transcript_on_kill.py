"""Rows are written as they happen: a CAB issue killed (SIGKILL) in its second turn keeps the
transcript so far (opening message, first answer, the user's reply, the first context and tool call)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    sys.path[:0] = [{here!r}, {root!r}]
    from benchmarks.cab.loader import load_issues
    from benchmarks.cab.runner import CabSettings
    from reconmem.platform.llm import UsageLedger
    from reconmem.platform.testing import ScriptedLLM
    from cab_testkit import FIXTURE_REPO, USER_PARTIAL, SpyManager, run_issue

    issue = load_issues(Path({here!r}) / "fixture_issues.jsonl", task_ids=["cab_fixture_1"])[0]
    ledger = UsageLedger()

    def maintainer(messages, purpose):
        if purpose == "turn_generation" and sum(m["role"] == "assistant" for m in messages) >= 1:
            os.kill(os.getpid(), signal.SIGKILL)  # the second answer: killed mid-issue
        return {{"tool_calls": [{{"id": "c1", "name": "search", "arguments": {{"pattern": "TIMEOUT"}}}}]}} \\
            if purpose == "turn_generation" else "The default is DEFAULT_TIMEOUT = 5.0."

    run_issue(issue, repo_root=FIXTURE_REPO, out_dir=Path(sys.argv[1]),
              maintainer_llm=ScriptedLLM(maintainer, ledger=ledger, name="maint"),
              user_llm=ScriptedLLM([USER_PARTIAL], ledger=ledger, name="user"),
              judge_llm=ScriptedLLM([], ledger=ledger, name="judge"), manager=SpyManager(memory_calls=False),
              settings=CabSettings(repo_index=False))
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_issue_keeps_the_transcript_so_far(tmp_path):
    out = tmp_path / "sample"
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(here=str(HERE), root=str(ROOT)))
    proc = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "RECONMEM_OFFLINE": "1"}, cwd=ROOT)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    conv = [json.loads(x) for x in (out / "conversation.jsonl").read_text().splitlines()]
    assert [(r["turn"], r["role"]) for r in conv] == [(0, "user"), (0, "assistant"), (1, "user")]
    assert conv[1]["content"] == "The default is DEFAULT_TIMEOUT = 5.0." and conv[2]["status"] == "PARTIALLY_SATISFIED"
    assert len((out / "contexts.jsonl").read_text().splitlines()) == 1
    assert json.loads((out / "tool_calls.jsonl").read_text().splitlines()[0])["turn"] == 0
    assert not (out / "result.json").exists() and not (out / "judgment.json").exists()
