"""Fixtures for the baseline tests: the real boltons repository index, the real embedder, sessions
whose backbone is a ScriptedLLM (scripted replies, never a model's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from reconmem.platform.context import Session, Turn


@pytest.fixture(scope="session")
def boltons_index(boltons_root: Path):
    from reconmem.platform.code import RepositoryIndex

    return RepositoryIndex.build(boltons_root)


@pytest.fixture(scope="session")
def embedder():
    from reconmem.platform.embed import Embedder

    return Embedder()


@pytest.fixture
def make_session(boltons_index, embedder) -> Callable[..., Session]:
    """``make_session(replies, context_window=..., max_output_tokens=..., fc=True, repo_context_k=0)``."""
    from reconmem.platform.testing import ScriptedLLM

    def factory(replies: Any = (), *, context_window: int = 32768, max_output_tokens: int = 256, fc: bool = True,
                repo_context_k: int = 0, system_prompt: str = "You are a helpful coding assistant.") -> Session:
        llm = ScriptedLLM(list(replies) if not callable(replies) else replies, context_window=context_window,
                          max_output_tokens=max_output_tokens, supports_function_calling=fc)
        return Session(sample_id="test", llm=llm, embedder=embedder, repo=boltons_index, system_prompt=system_prompt,
                       context_window=context_window, repo_context_k=repo_context_k)

    return factory


@pytest.fixture
def code_turns(boltons_index) -> Callable[..., list[Turn]]:
    """``code_turns(paths)``: turns about real boltons functions (question names it, answer quotes its source)."""

    def build(paths: list[str], question: str = "Explain `{name}` in {file}.") -> list[Turn]:
        turns = []
        for i, path in enumerate(paths):
            entity = boltons_index.get(path)
            assert entity is not None, path
            turns.append(Turn(index=i, user=question.format(name=entity.name, file=entity.file),
                              assistant=f"Here is `{entity.name}`:\n{boltons_index.source(path)}"))
        return turns

    return build


@pytest.fixture
def run_locoeval_sample(boltons_index, embedder) -> Callable[..., tuple[dict[str, Any], Path]]:
    """``run_locoeval_sample(sample, cm, llm, run_path, **settings)``: one LoCoEval sample through the run
    loop's ``run_one`` (``LoCoEval.solve`` then ``grade``) on the boltons index, tasks judged by a stub
    (these tests are about the method path); returns the result and the sample's record folder."""
    from benchmarks.locoeval.runner import LoCoEval, LoCoEvalSettings, LoCoEvalShared, backbone_defaults
    from benchmarks.records import RunDir
    from benchmarks.runloop import run_one
    from benchmarks.task import RunEnv

    def run(sample: Any, cm: Any, llm: Any, run_path: Path, **settings: Any) -> tuple[dict[str, Any], Path]:
        options = LoCoEvalSettings(samples="(tests)", **settings)
        shared = LoCoEvalShared(settings=options, llm=llm.with_defaults(backbone_defaults(options)), embedder=embedder,
                                evaluate=lambda s, req, text: {"outcome": "not_run", "passed": False, "log": "stub"},
                                indexes=lambda s: boltons_index)
        env = RunEnv(cfg=None, ledger=llm.ledger, run_path=run_path, progress=False, shared=shared)
        result = run_one(LoCoEval(), sample, env, RunDir(run_path), method=cm)
        return result, RunDir(run_path).sample_dir(sample.id)

    return run
