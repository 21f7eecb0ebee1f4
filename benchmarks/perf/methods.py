"""Methods as the benches build them: a fresh ContextManager from ``conf/method/<name>.yaml``
parameterised for a backbone config file, outside a Hydra run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def backbone_cfg(path: Path) -> Any:
    """A backbone config node from a YAML file (the benches' ``--backbone``)."""
    from omegaconf import OmegaConf

    if not path.exists():
        raise SystemExit(f"--backbone: no such file {path}")
    return OmegaConf.load(path)


def build_manager(name: str, backbone: Any, repo_context_k: int = 0) -> Any:
    """A fresh ContextManager from ``conf/method/<name>.yaml`` (interpolations against the backbone);
    ``repo_context_k`` is the baselines' unified repository adaptation (a method setting)."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    path = REPO_ROOT / "conf" / "method" / f"{name}.yaml"
    if not path.exists():
        raise SystemExit(f"--methods: unknown method {name!r} (no {path.relative_to(REPO_ROOT)})")
    root = OmegaConf.create({"method": OmegaConf.load(path), "backbone": backbone, "benchmark": {"name": "bench"}})
    if "repo_context_k" in root.method.manager:
        root.method.manager.repo_context_k = int(repo_context_k)
    return instantiate(root.method.manager)
