"""The run's own options: the ``run:`` node of ``conf/config.yaml`` as a typed dataclass, read once by
the loop (:func:`run_settings`); an unknown key or a bad value is a one-line ConfigError naming
``run.<key>`` (the same reader as a benchmark's settings, :func:`benchmarks.task.read_settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.task import read_settings


@dataclass(frozen=True)
class RunSettings:
    """``conf/config.yaml`` ``run:`` (the yaml mirrors it; its comments say what each option does)."""

    results_dir: str | int = "results"
    run_id: str | int = "default"
    limit: int | None = None
    #: a list of ids, or one id (``runloop._ids`` makes it a list)
    ids: list[str | int] | str | int | None = None
    #: samples in parallel (0 / null: 1)
    workers: int | None = 1
    retry_errors: bool = True
    #: ``"I/N"``, parsed by ``runloop.parse_shard``
    shard: str | None = None
    cost_limit_usd: float | None = None
    dry_run: bool = False
    batch: bool = False
    batch_turnaround_hours: float | None = None
    reproduction: bool = False
    #: checked by ``runloop.repeat_settings`` (its errors quote the value given: ``run.repeat=<value>``)
    repeat: Any = 1
    repeat_index: Any = None
    #: the base run id of a repeat's config (set by ``runloop.repeat_config``)
    repeat_of: str | None = None


def run_settings(cfg: Any) -> RunSettings:
    """``cfg.run`` as :class:`RunSettings` (a config without a ``run`` node: the defaults)."""
    node = cfg.get("run") if hasattr(cfg, "get") else None
    return read_settings(RunSettings, node or {}, prefix="run", ignore=frozenset())
