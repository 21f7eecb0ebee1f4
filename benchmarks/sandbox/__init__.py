"""Executors that run a project's tests on an edited copy of a pristine tree (local or Docker)."""

from __future__ import annotations

from .base import (ERROR, FAIL, OOM, OUTCOMES, PASS, TIMEOUT, EnvSpec, ExecutionJob, ExecutionOutcome,
                   Executor, classify_pytest)

__all__ = ["PASS", "FAIL", "ERROR", "TIMEOUT", "OOM", "OUTCOMES", "EnvSpec", "ExecutionJob",
           "ExecutionOutcome", "Executor", "classify_pytest", "build_executor"]

_KINDS = {"local": "benchmarks.sandbox.local:LocalExecutor",
          "docker": "benchmarks.sandbox.docker_exec:DockerExecutor"}


def build_executor(executor_cfg=None, **overrides) -> Executor:
    """Build an executor from a conf/executor/*.yaml node, a dict, or a name (``"local"``/``"docker"``).

    Known keys: ``name`` (or ``_target_``), ``timeout_s``, ``memory_mb``; local: ``venv_dir``,
    ``work_root``, ``guard_writes``; docker: ``cpus``, ``base_image``. Unresolvable interpolations
    (e.g. ``${cache.dir}`` outside the root config) fall back to defaults.
    """
    import importlib

    cfg = _to_dict(executor_cfg)
    cfg.update(overrides)
    kind = cfg.pop("name", None)
    target = cfg.pop("_target_", None)
    if kind is None and target:
        kind = next((k for k, v in _KINDS.items() if v.replace(":", ".") == target), None)
        if kind is None:
            raise ValueError(f"executor _target_ {target!r} is not one of {sorted(_KINDS.values())}")
    kind = kind or "local"
    if kind not in _KINDS:
        raise ValueError(f"unknown executor name {kind!r} (option executor.name); known: {sorted(_KINDS)}")
    module, cls = _KINDS[kind].split(":")
    return getattr(importlib.import_module(module), cls)(**cfg)


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
