"""The benchmark interface: what a benchmark supplies to the one run loop (:mod:`benchmarks.runloop`).

As inspect_ai's solver / scorer and SWE-bench's execute / grade, a benchmark is a class named from
its config by ``_target_`` (``conf/benchmark/<name>.yaml``) that supplies

* :meth:`Benchmark.load` - the samples (each with an id, :meth:`Benchmark.sample_id`);
* :meth:`Benchmark.setup` - what every sample shares (the role clients the loop built,
  ``env.clients``; settings), returned as the benchmark's own typed object and handed back as
  ``env.shared``;
* :meth:`Benchmark.solve` - one sample's conversation with a fresh method, its rows reported through
  ``env.recorder`` as they happen; returns the benchmark's typed solved state;
* :meth:`Benchmark.grade` - the solved state judged (tests, a judge model): the ``result.json``
  payload with the sample's task outcomes;
* :meth:`Benchmark.score` - the run's metrics over the finished records of the selected samples.

Everything else - id/limit selection, sharding, resume/retry, workers, progress, the ledger scope
and attempt id, timing, error records, ``memory.json``, cost and JSON-failure accounting, manifest
and summary - is the run loop's. A benchmark's options are a dataclass read by :func:`read_settings`
(the yaml mirrors it; an unknown key is a one-line error naming ``benchmark.<key>``).
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from benchmarks.errors import ConfigError
from benchmarks.roles import OPTIONS, ROLE_OPTIONS
from reconmem.platform.context import ContextManager

SampleT = TypeVar("SampleT")
SharedT = TypeVar("SharedT")
SolvedT = TypeVar("SolvedT")
SettingsT = TypeVar("SettingsT")

#: options of ``conf/benchmark/<name>.yaml`` read by the loop and this base class; every other key
#: is a field of the benchmark's settings dataclass (:func:`read_settings`)
LOOP_OPTIONS = frozenset({"name", "_target_", "uses_backbones", "max_workers", "progress", "repo_adaptation_k"})


def method_facing_id(sample_id: str) -> str:
    """The id a method gets for a conversation (``Session.sample_id``): stable per sample, but opaque.

    A benchmark's own ids carry labels (LoCoEval's ``-sh`` / ``-mh`` subset suffix, a CAB subset name);
    the records keep those, a method sees ``conversation-<12 hex digits of sha256(id)>``.
    """
    return "conversation-" + hashlib.sha256(sample_id.encode("utf-8")).hexdigest()[:12]


@dataclass
class RunEnv(Generic[SharedT]):
    """What the loop hands a benchmark: the config, the run's shared ledger, its LLM clients, the shared state.

    ``clients`` holds one client per backbone role (:class:`benchmarks.clients.RoleClients`:
    ``clients.backbone`` / ``.user`` / ``.judge``, each built on first use, with the benchmark's
    :meth:`Benchmark.client_defaults`); ``shared`` is what :meth:`Benchmark.setup` returned (the
    benchmark's own typed object).
    ``out_dir`` / ``sample_id`` / ``attempt`` / ``recorder`` are set for the sample being run
    (:meth:`for_sample`): the benchmark writes its rows through ``recorder`` as they happen
    (``benchmarks.records.SampleRecorder``).
    """

    cfg: Any
    ledger: Any
    run_path: Path
    progress: bool = True
    clients: Any = None
    shared: SharedT | None = None
    out_dir: Path | None = None
    sample_id: str | None = None
    attempt: str | None = None
    recorder: Any = None

    def for_sample(self, sample_id: str, out_dir: Path, attempt: str) -> "RunEnv[SharedT]":
        """This environment for one sample attempt, with a recorder on ``out_dir``."""
        from benchmarks.records import SampleRecorder

        return replace(self, out_dir=Path(out_dir), sample_id=sample_id, attempt=attempt,
                       recorder=SampleRecorder(out_dir))

    def sample_events(self) -> list[dict[str, Any]]:
        """This sample attempt's ledger events (every field kept): the one slicing rule."""
        from benchmarks.records import attempt_events

        return attempt_events([self.ledger], self.attempt) if self.attempt else []


class Benchmark(abc.ABC, Generic[SampleT, SharedT, SolvedT]):
    """Base class of a benchmark; subclasses set ``family`` and the statuses they may return."""

    #: how its records are read (a ``benchmarks.records.Family`` value: ``locoeval`` | ``cab``)
    family: ClassVar[str] = ""
    #: ``benchmarks.records.Status`` values grade may return besides ok (the loop adds error /
    #: interrupted itself); whether one is final, scored or excluded is the status's own meaning
    statuses: ClassVar[frozenset[str]] = frozenset()
    #: privileged inputs solve can hand a bracket method (reconmem/platform/brackets.py)
    privileged_inputs: ClassVar[frozenset[str]] = frozenset()
    #: solve can skip generating preparation replies for a method that reads no earlier turn
    can_skip_prep_replies: ClassVar[bool] = False
    #: judged by running code in ``cfg.executor`` (the manifest then records the executor)
    uses_executor: ClassVar[bool] = False
    #: the dataclass of its options (``conf/benchmark/<name>.yaml`` mirrors it; :func:`read_settings`)
    settings_class: ClassVar[type | None] = None

    def __init__(self, cfg: Any = None, **_: Any) -> None:
        self.cfg = cfg
        #: the options of the config it was built with (checked here, once)
        self.settings: Any = (read_settings(self.settings_class, cfg.benchmark)
                              if cfg is not None and self.settings_class is not None else None)

    def settings_for(self, cfg: Any) -> Any:
        """Its options under ``cfg``: :attr:`settings` for the config it was built with, else read anew."""
        if self.settings is not None and cfg is self.cfg:
            return self.settings
        if self.settings_class is None:
            raise TypeError(f"{type(self).__name__} declares no settings_class")
        return read_settings(self.settings_class, cfg.benchmark)

    # ---- identity and selection
    def sample_id(self, sample: SampleT) -> str:
        return str(sample.id)  # type: ignore[attr-defined]

    def uses(self, cfg: Any) -> tuple[str, ...]:
        """The backbone options this benchmark calls (``benchmark.uses_backbones``; default all three)."""
        uses = cfg.benchmark.get("uses_backbones")
        return OPTIONS if uses is None else tuple(str(u) for u in uses)

    def models(self, cfg: Any, samples: Sequence[SampleT]) -> dict[str, str | None]:
        """Model ids the run calls per role (``None`` for a role this run does not use)."""
        uses = self.uses(cfg)
        return {role: str(cfg[option].model) if role == "backbone" or option in uses else None
                for role, option in ROLE_OPTIONS.items()}

    def select(self, samples: Sequence[SampleT], *, ids: Sequence[str] | None, limit: int | None) -> list[SampleT]:
        """Apply ``run.ids`` then ``run.limit`` (:func:`select_samples`)."""
        return select_samples(samples, ids=ids, limit=limit, id_of=self.sample_id)

    # ---- what a benchmark supplies
    @abc.abstractmethod
    def load(self, cfg: Any) -> list[SampleT]:
        """Every sample of the configured data (selection is the loop's)."""

    @abc.abstractmethod
    def solve(self, sample: SampleT, method: ContextManager, env: RunEnv[SharedT]) -> SolvedT:
        """Run the sample's conversation with ``method``, its rows reported through ``env.recorder``
        as they happen; return what :meth:`grade` needs. Raise on failure (the loop records ``error``)."""

    @abc.abstractmethod
    def grade(self, sample: SampleT, solved: SolvedT, env: RunEnv[SharedT]) -> dict[str, Any]:
        """Judge ``solved``: the ``result.json`` payload (``status`` when not ok, ``tasks`` with their
        outcomes, the benchmark's own fields). Raise on failure (the loop records ``error``)."""

    @abc.abstractmethod
    def score(self, run_path: Path, sample_ids: Sequence[str]) -> dict[str, Any]:
        """The run's metrics over the finished records of ``sample_ids``."""

    # ---- optional hooks
    def data_files(self, cfg: Any) -> dict[str, Path]:
        """Data files whose checksums go into the manifest."""
        return {}

    def check_data(self, cfg: Any, samples: Sequence[SampleT]) -> None:
        """Validate auxiliary data files before the first sample (raise DataError naming file:line)."""

    def setup(self, env: RunEnv[SharedT], samples: Sequence[SampleT]) -> SharedT | None:
        """What every sample shares (the clients of ``env.clients`` it uses, executors, settings); the
        loop stores it as ``env.shared``. Only called with work to do."""
        return None

    def client_defaults(self, cfg: Any) -> dict[str, Any]:
        """Role -> :class:`reconmem.platform.llm.CallDefaults` the loop sets on that role's client
        (e.g. a default ``max_tokens`` per purpose); a call's own values win. Default: none."""
        return {}

    def error_result(self, sample: SampleT) -> dict[str, Any]:
        """Fields of the result of a sample that did not finish: every task listed with passed=false."""
        return {"n_tasks": 0, "tasks": []}

    def max_workers(self, cfg: Any) -> int | None:
        cap = cfg.benchmark.get("max_workers")
        return int(cap) if cap else None


def select_samples(samples: Iterable[SampleT], *, ids: Iterable[str] | None, limit: int | None,
                   id_of: Callable[[SampleT], str], error: type[Exception] = ConfigError,
                   source: str | None = None) -> list[SampleT]:
    """The samples ``ids`` names (file order kept; unknown ids are an ``error`` naming them and the
    ``source`` file), then the first ``limit`` of them: the one meaning of ``run.ids`` / ``run.limit``."""
    chosen = list(samples)
    if ids:
        wanted = [str(i) for i in ids]
        known = {id_of(s) for s in chosen}
        unknown = [i for i in wanted if i not in known]
        if unknown:
            where = f" in {source}" if source else ""
            raise error(f"run.ids: unknown id(s) {unknown[:5]}{where} (available e.g. {sorted(known)[:3]})")
        keep = set(wanted)
        chosen = [s for s in chosen if id_of(s) in keep]
    if limit is not None:
        if int(limit) < 0:
            raise error(f"run.limit must be >= 0, got {limit}")
        chosen = chosen[: int(limit)]
    return chosen


def read_settings(cls: type[SettingsT], node: Any, *, prefix: str = "benchmark",
                  ignore: frozenset[str] = LOOP_OPTIONS) -> SettingsT:
    """The dataclass ``cls`` from a config node: every key but ``ignore`` (for a benchmark's node the
    :data:`LOOP_OPTIONS`) is one of its fields (nested dataclasses too), values checked and converted
    by pydantic. An unknown key or a bad value is a one-line ConfigError naming ``<prefix>.<key>``."""
    from omegaconf import OmegaConf
    from pydantic import TypeAdapter, ValidationError

    data = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else dict(node or {})
    data = {k: v for k, v in data.items() if k not in ignore}
    _check_keys(cls, data, prefix)
    try:
        return TypeAdapter(cls).validate_python(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in (prefix, *err["loc"]))
        raise ConfigError(f"{where}: {err['msg']} (got {err.get('input')!r})") from None


def _check_keys(cls: type, data: Mapping[str, Any], prefix: str) -> None:
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key, value in data.items():
        if key not in names:
            raise ConfigError(f"{prefix}.{key}: unknown option of {cls.__name__} (known: {', '.join(sorted(names))})")
        kind = hints.get(key)
        if isinstance(kind, type) and dataclasses.is_dataclass(kind) and isinstance(value, Mapping):
            _check_keys(kind, value, f"{prefix}.{key}")
