"""Helpers of the CAB tests: fixture paths, scripted replies (not model output), a spy context manager."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconmem.platform.context import Context, ContextManager, Turn

HERE = Path(__file__).parent
FIXTURE_REPO = HERE.parent / "fixtures" / "cab_repo"

# Scripted replies (not model output) used by the fast tests.
GOOD_JUDGMENT = """TECHNICAL CORRECTNESS: CORRECT
ALIGNMENT SCORE: 2/2 CONDITIONS MET (100%)
CONDITION 1: TRUE Explains how to wait longer
CONDITION 2: TRUE Identifies DEFAULT_TIMEOUT in tinykv/config.py
VERBOSITY ASSESSMENT: APPROPRIATE
VERDICT: CORRECT
KEY ISSUES: none
REASONING: Matches the reference answer."""

USER_PARTIAL = """Thanks! Where exactly does the 5 second default come from?

---
SATISFACTION_STATUS: PARTIALLY_SATISFIED
REASON: I still do not know where the default is defined."""

USER_FULL = """Perfect, that answers everything.

SATISFACTION_STATUS: FULLY_SATISFIED
REASON: Both conditions are met."""


class SpyManager(ContextManager):
    """Full-history-like manager that records calls and spends one memory LLM call per observe."""

    name = "spy"

    def __init__(self, memory_calls: bool = True) -> None:
        super().__init__()
        self.turns: list[Turn] = []
        self.context_for_queries: list[str] = []
        self.memory_calls = memory_calls

    def start(self, session) -> None:
        super().start(session)
        self.turns = []

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        from reconmem.platform.context import build_messages

        self.context_for_queries.append(query)
        history = [m for t in self.turns for m in ({"role": "user", "content": t.user}, {"role": "assistant", "content": t.assistant})]
        return Context(query=query, messages=build_messages(self._session().system_prompt, [], history, query))

    def observe(self, turn: Turn) -> None:
        self.turns.append(turn)
        if self.memory_calls:
            self._session().llm.chat([{"role": "user", "content": f"summarise: {turn.assistant}"}], purpose="memory_update")

    def state(self) -> dict[str, Any]:
        return {"turns": len(self.turns)}


# ---- script functions for `backbone.model=scripted/cab_testkit:<name>` (tests through the run loop)
SCRIPT_CALLS: dict[str, int] = {"maintainer": 0, "user": 0, "judge": 0}


def scripted_maintainer(messages: list[dict[str, Any]], purpose: str) -> Any:
    """Scripted reply: read the config file once, then answer from it."""
    if purpose not in ("turn_generation", "maintainer_tool_step"):  # a method's own memory calls
        return "{}"
    SCRIPT_CALLS["maintainer"] += 1
    if messages[-1]["role"] == "tool":
        return "Pass Client(timeout=30) or set TINYKV_TIMEOUT=30; the default is DEFAULT_TIMEOUT in tinykv/config.py."
    return {"tool_calls": [{"id": "t1", "name": "read_file", "arguments": {"path": "tinykv/config.py"}}]}


def scripted_user(messages: list[dict[str, Any]], purpose: str) -> str:
    SCRIPT_CALLS["user"] += 1
    return USER_FULL


def scripted_judge(messages: list[dict[str, Any]], purpose: str) -> str:
    SCRIPT_CALLS["judge"] += 1
    return GOOD_JUDGMENT


# ---- one issue through the benchmark's solve and grade (what the run loop calls), with scripted clients
def run_issue(issue: Any, *, out_dir: Path, maintainer_llm: Any, user_llm: Any, judge_llm: Any, manager: Any,
              settings: Any = None, docker_client_factory: Any = None, repo_root: Path = FIXTURE_REPO) -> dict[str, Any]:
    """``CodeAssistBench.solve`` then ``grade`` for ``issue`` checked out at ``repo_root`` (a local
    repository), inside the ledger scope the loop opens; failures raise. Returns the result payload."""
    from dataclasses import replace

    from benchmarks.cab.runner import CabSettings, CabShared, CodeAssistBench
    from benchmarks.task import RunEnv

    settings = replace(settings or CabSettings(), local_repos={issue.repo: str(repo_root)})
    shared = CabShared(settings=settings, maintainer_llm=maintainer_llm, user_llm=user_llm, judge_llm=judge_llm,
                       cache_dir=Path(out_dir).parent / "checkouts", docker_client_factory=docker_client_factory)
    ledger = maintainer_llm.ledger
    env = RunEnv(cfg=None, ledger=ledger, run_path=Path(out_dir).parent, progress=False, shared=shared)
    env = env.for_sample(issue.task_id, Path(out_dir), attempt="test-attempt")
    bench = CodeAssistBench()
    with ledger.tags(sample=issue.task_id, attempt=env.attempt):
        return bench.grade(issue, bench.solve(issue, manager, env), env)
