"""Executors that run a project's tests on an edited copy of a pristine tree (local or Docker)."""

from __future__ import annotations

from .base import (ERROR, FAIL, OOM, OUTCOMES, PASS, TIMEOUT, EnvSpec, ExecutionJob, ExecutionOutcome,
                   Executor, classify_pytest)

__all__ = ["PASS", "FAIL", "ERROR", "TIMEOUT", "OOM", "OUTCOMES", "EnvSpec", "ExecutionJob",
           "ExecutionOutcome", "Executor", "classify_pytest", "build_executor", "describe_executor"]

_KINDS = {"local": "benchmarks.sandbox.local:LocalExecutor",
          "docker": "benchmarks.sandbox.docker_exec:DockerExecutor"}


def build_executor(executor_cfg=None, **overrides) -> Executor:
    """Build an executor from a conf/executor/*.yaml node, a dict, or a name (``"local"``/``"docker"``).

    The class is named by ``_target_`` (a dotted path to any :class:`Executor` subclass, the
    project's one way to name code from config); ``name`` is a short alias for the shipped ones
    and, when both are given, must agree with the class's ``name``. Other keys go to the
    constructor: ``timeout_s``, ``memory_mb``; local: ``venv_dir``, ``work_root``, ``guard_writes``,
    ``confine``, ``pids_limit``; docker: ``cpus``, ``base_image``, ``keep_images``, ``offline_build``,
    ``pids_limit``. Unresolvable interpolations (e.g. ``${cache.dir}`` outside the root config)
    fall back to defaults.
    """
    import importlib

    cfg = _to_dict(executor_cfg)
    cfg.update(overrides)
    kind = cfg.pop("name", None)
    target = cfg.pop("_target_", None)
    if target:
        module, _, attr = str(target).replace(":", ".").rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ValueError(f"executor _target_ {target!r} cannot be imported ({exc})") from None
        if not (isinstance(cls, type) and issubclass(cls, Executor)):
            raise ValueError(f"executor _target_ {target!r} is not an Executor subclass")
        if kind is not None and kind != cls.name:
            raise ValueError(f"executor name {kind!r} disagrees with _target_ {target!r} (name {cls.name!r})")
        return cls(**cfg)
    kind = kind or "local"
    if kind not in _KINDS:
        raise ValueError(f"unknown executor name {kind!r} (option executor.name); known: {sorted(_KINDS)}")
    module, attr = _KINDS[kind].split(":")
    return getattr(importlib.import_module(module), attr)(**cfg)


def describe_executor(executor, *, python: str | None = None) -> dict:
    """The run-manifest record of an executor (an :class:`Executor` or a config node / dict / name).

    For Docker with ``python`` given (the manifest's environment Python, e.g. ``"3.11.7"``) the
    base image is resolved first, so the record names its content-addressed tag, image id, source
    and Python version, and ``python_check`` says whether only the patch version differs (a
    different minor version raises :class:`benchmarks.sandbox.base_image.PythonMismatch`).
    """
    if not isinstance(executor, Executor):
        executor = build_executor(executor)
    record = {}
    if python and executor.name == "docker":
        base = executor.base_for(EnvSpec(name="manifest", python=python))
        record["python_check"] = base.check_python(python)
    describe = getattr(executor, "describe", None)
    return {**(describe() if describe else {"name": executor.name}), **record}


def _to_dict(cfg) -> dict:
    if cfg is None:
        return {}
    if isinstance(cfg, str):
        return {"name": cfg}
    if isinstance(cfg, dict):
        return dict(cfg)
    try:  # an OmegaConf node
        from omegaconf import OmegaConf

        out = {}
        for key in cfg.keys():
            try:
                out[str(key)] = cfg[key]
            except Exception:  # noqa: BLE001 - an interpolation that cannot resolve here
                out[str(key)] = None
        return {k: (OmegaConf.to_container(v, resolve=True) if hasattr(v, "_metadata") else v)
                for k, v in out.items() if v is not None}
    except ImportError:
        return dict(cfg)
