"""Scorers: named steps re-run over a finished run's records, without re-running a sample.

A scorer is a function ``(env: ScoreEnv) -> dict`` (JSON-serialisable). :func:`score_run` calls one
on a run directory and writes its result beside the records, ``<run_dir>/scores/<name>.json``
(:meth:`benchmarks.records.RunDir.write_score`): ``{"scorer", "target", "options", "result"}``, plus
``usage`` / ``cost_usd`` when it called a model. ``python -m scripts.score RUN_DIR --scorer NAME``
is the command.

A scorer is named by

* a registered name (:data:`SCORERS`: ``pass_at_1``, ``coverage_judge``);
* ``package.module:function`` (importable), or
* ``path/to/file.py:function`` - a scorer added from one file; its name is the function's.

A scorer that calls a model takes its client from ``env.clients`` (the loop's
:class:`benchmarks.clients.RoleClients` over ``env.cfg``, the composed config with the command's
overrides; every call cached and recorded in ``env.ledger`` as any run's).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from benchmarks.clients import RoleClients
from benchmarks.errors import ConfigError
from benchmarks.records import RecordError, RunDir, usage_of

#: registered scorers: name -> ``module:function``
SCORERS: dict[str, str] = {
    "pass_at_1": "benchmarks.locoeval.metrics:pass_at_1_scorer",
    "coverage_judge": "benchmarks.locoeval.coverage_judge:coverage_scorer",
}

Scorer = Callable[["ScoreEnv"], Mapping[str, Any]]


@dataclass
class ScoreEnv:
    """What a scorer gets: the finished run, its ``--option key=value`` pairs, and for scorers that
    call a model the composed config (``cfg``), the role clients built from it and their ledger."""

    run: RunDir
    options: dict[str, str] = field(default_factory=dict)
    cfg: Any = None
    ledger: Any = None

    def __post_init__(self) -> None:
        if self.ledger is None:
            from reconmem.platform.llm import UsageLedger

            self.ledger = UsageLedger()

    @cached_property
    def clients(self) -> RoleClients:
        """The role clients over :attr:`cfg` (``clients.judge`` ...), each built on first use."""
        if self.cfg is None:
            raise ConfigError("this scorer calls a model: it needs a composed config (python -m scripts.score ... "
                              "backbone@judge_backbone=<name>)")
        return RoleClients(self.cfg, self.ledger)


def resolve(spec: str) -> tuple[str, str, Scorer]:
    """``(name, target, function)`` of a scorer named by ``spec`` (a registered name,
    ``module:function`` or ``file.py:function``). A name that resolves to nothing is a ConfigError."""
    target = SCORERS.get(spec, spec)
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--scorer {spec}: unknown scorer (registered: {', '.join(sorted(SCORERS))}; "
                          f"or module:function, or path/to/file.py:function)")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name).expanduser().resolve()
            if not path.is_file():
                raise ConfigError(f"--scorer {spec}: {path}: file not found")
            loader = importlib.util.spec_from_file_location(f"scorer_{path.stem}", path)
            assert loader is not None and loader.loader is not None
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
        fn = getattr(module, attr)
    except (ImportError, AttributeError, SyntaxError) as exc:
        raise ConfigError(f"--scorer {spec}: cannot load {target} ({type(exc).__name__}: {exc})") from exc
    if not callable(fn):
        raise ConfigError(f"--scorer {spec}: {target} is not a function")
    name = spec if spec in SCORERS else attr
    return name, target, fn


def score_run(run_path: str | Path, spec: str, *, options: Mapping[str, str] | None = None, cfg: Any = None,
              ledger: Any = None) -> dict[str, Any]:
    """Run the scorer ``spec`` over the finished run at ``run_path`` and write ``scores/<name>.json``;
    returns what was written. A path that is not a run directory is a RecordError."""
    run = RunDir(run_path)
    if not run.samples_path.is_dir():
        raise RecordError(f"{run.path}: not a run directory (no samples/ folder)")
    name, target, fn = resolve(spec)
    env = ScoreEnv(run=run, options=dict(options or {}), cfg=cfg, ledger=ledger)
    result = fn(env)
    if not isinstance(result, Mapping):
        raise ConfigError(f"--scorer {spec}: {target} returned {type(result).__name__}, not a dict")
    payload: dict[str, Any] = {"scorer": name, "target": target, "options": env.options, "result": dict(result)}
    if env.ledger.events:
        payload["usage"], payload["cost_usd"] = usage_of(env.ledger.events)
    run.write_score(name, payload)
    return payload
