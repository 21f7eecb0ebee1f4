"""Build the run's shared objects from a composed Hydra config: LLM clients, embedder, method.

Benchmarks call these so that every benchmark wires methods, backbones and caches the same way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchmarks.errors import ConfigError
from reconmem.platform.context import ContextManager


def _cache_dir(cfg: Any) -> Path:
    d = Path(str(cfg.cache.dir)).expanduser()
    d.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RECONMEM_CACHE", str(d))
    return d


def check_api_key(backbone_cfg: Any, option: str = "backbone") -> None:
    """Fail early, in one line, when the backbone's API key variable is not set."""
    env = backbone_cfg.get("api_key_env")
    if env and not os.environ.get(env):
        raise ConfigError(f"{option}={backbone_cfg.name}: environment variable {env} is not set (needed for {backbone_cfg.model})")


def build_llm(backbone_cfg: Any, cfg: Any, ledger: Any = None, *, option: str = "backbone") -> Any:
    """An :class:`reconmem.platform.llm.LLMClient` for one backbone config node, sharing the run's cache.

    ``backbone.model: scripted/<module>:<function>`` builds a :class:`reconmem.platform.testing.ScriptedLLM`
    whose replies come from that function ``(messages, purpose) -> str`` — for tests and dry runs
    of the pipeline only; it never produces benchmark numbers. A backbone with an ``exchange`` node
    (``backbone=exchange``, or ``+backbone.exchange.answered_by=...`` on any backbone) gets the exchange
    transport over the backbone's own one: requests out to ``<run_dir>/exchange/``, answers back
    (:mod:`reconmem.platform.llm.exchange`).
    """
    from reconmem.platform.llm import BackboneSpec, LLMClient, UsageLedger
    from reconmem.platform.llm.spec import to_plain

    ledger = ledger if ledger is not None else UsageLedger()
    model = str(backbone_cfg.model)
    exchange = backbone_cfg.get("exchange")
    inner = None
    if model.startswith("scripted/"):
        import importlib

        from reconmem.platform.testing import ScriptedLLM, ScriptedTransport, scripted_spec

        mod_name, _, fn_name = model[len("scripted/"):].partition(":")
        try:
            fn = getattr(importlib.import_module(mod_name), fn_name)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{option}.model={model}: cannot import the script function ({exc})") from exc
        if exchange is None:
            return ScriptedLLM(fn, context_window=int(backbone_cfg.context_window), ledger=ledger, name=model)
        spec = scripted_spec(model, context_window=int(backbone_cfg.context_window))
        spec.exchange = dict(to_plain(exchange))
        inner = ScriptedTransport(fn, model=spec.model, name=model)
    else:
        if exchange is None:
            check_api_key(backbone_cfg, option)
        try:
            spec = BackboneSpec.from_config(backbone_cfg)
        except ValueError as exc:
            raise ConfigError(f"{option}: {exc}") from None
    cache_path = _cache_dir(cfg) / "llm_cache.sqlite" if cfg.cache.get("llm", True) else None
    return LLMClient(
        spec,
        ledger=ledger,
        cache_path=cache_path,
        max_concurrency=int(cfg.llm.get("max_concurrency") or max(1, int(cfg.run.get("workers", 1) or 1))),
        max_retries=int(cfg.llm.max_retries),
        timeout=float(cfg.llm.timeout),
        cache_mode=str(cfg.cache.get("mode", "sqlite")),
        cache_salt=repeat_cache_salt(cfg),
        transport=None if exchange is None else exchange_transport(spec, cfg, inner, option=option),
    )


def exchange_transport(spec: Any, cfg: Any, inner: Any = None, *, option: str = "backbone") -> Any:
    """The exchange transport of ``spec`` (its ``exchange`` options) into this run's exchange folder,
    over ``inner`` (default: the backbone's own transport, which still counts tokens and names the cache identity)."""
    from reconmem.platform.llm import default_transport
    from reconmem.platform.llm.exchange import ExchangeOptions, ExchangeTransport, exchange_dir

    try:
        options = ExchangeOptions.from_config(spec.exchange, f"{option}.exchange")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    inner = inner if inner is not None else default_transport(spec, timeout=float(cfg.llm.timeout))
    return ExchangeTransport(inner, exchange_dir(run_path(cfg)), backbone=spec.name, options=options)


def run_path(cfg: Any) -> Path:
    """``<results_dir>/<benchmark>/<backbone>/<method>/<run_id>`` of a composed run config."""
    return (Path(str(cfg.run.results_dir)) / str(cfg.benchmark.name) / str(cfg.backbone.name) / str(cfg.method.name)
            / str(cfg.run.run_id))


def repeat_cache_salt(cfg: Any) -> dict[str, int] | None:
    """``{"repeat": i}`` for repeat i of a ``run.repeat=K`` run (K > 1), else None (keys unchanged)."""
    run = cfg.get("run") if hasattr(cfg, "get") else None
    if run is None or int(run.get("repeat", 1) or 1) <= 1 or run.get("repeat_index") is None:
        return None
    return {"repeat": int(run.repeat_index)}


_EMBEDDERS: dict[tuple[str, str, int | None], Any] = {}  # (device setting, backend, max_tokens) -> the process's Embedder


def _embedder_option(cfg: Any, name: str, default: str) -> str:
    node = cfg.get("embedder") if hasattr(cfg, "get") else None
    return str((node.get(name) if node is not None else None) or default)


def _embedder_device(cfg: Any) -> str:
    return _embedder_option(cfg, "device", "auto")


def _embedder_backend(cfg: Any) -> str:
    """``embedder.backend`` (torch | onnx | onnx-int8), checked: a wrong value is a ConfigError."""
    from reconmem.platform.embed_onnx import DEFAULT_BACKEND, check_backend

    try:
        return check_backend(_embedder_option(cfg, "backend", DEFAULT_BACKEND))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _embedder_max_tokens(cfg: Any, backend: str) -> int | None:
    """``embedder.max_tokens`` (opt-in truncation, null = the model's 256), checked: a ConfigError."""
    from reconmem.platform.embed import check_max_tokens

    node = cfg.get("embedder") if hasattr(cfg, "get") else None
    try:
        return check_max_tokens(node.get("max_tokens") if node is not None else None, backend)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def build_embedder(cfg: Any) -> Any:
    """The process-wide embedder (all-MiniLM-L6-v2: hub or PyPI package, ``embedder.device``,
    ``embedder.backend``, ``embedder.max_tokens``), with its disk cache."""
    backend = _embedder_backend(cfg)
    key = (_embedder_device(cfg), backend, _embedder_max_tokens(cfg, backend))
    if key not in _EMBEDDERS:
        from reconmem.platform.embed import Embedder

        _EMBEDDERS[key] = Embedder(cache_dir=_cache_dir(cfg) / "embeddings", device=key[0], backend=key[1],
                                   max_tokens=key[2])
    return _EMBEDDERS[key]


def embedder_settings(cfg: Any) -> dict[str, Any]:
    """The manifest's ``embedder``: model id, ``embedder.device`` as set and the device it resolves to,
    ``embedder.backend``."""
    from reconmem.platform.embed import DEFAULT_MODEL_ID, resolve_device

    setting = _embedder_device(cfg)
    backend = _embedder_backend(cfg)
    try:
        device = "cpu" if backend != "torch" else resolve_device(setting)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    settings = {"model": DEFAULT_MODEL_ID, "device_setting": setting, "device": device, "backend": backend}
    max_tokens = _embedder_max_tokens(cfg, backend)
    if max_tokens is not None:  # recorded only when the opt-in truncation is on
        settings["max_tokens"] = max_tokens
    return settings


def retriever_spec(cfg: Any) -> Any:
    """The run's code retriever (``retriever`` config group; absent: dense) as a
    :class:`reconmem.platform.code.retrieval.RetrieverSpec`."""
    from omegaconf import OmegaConf

    from reconmem.platform.code.retrieval import RetrieverSpec

    node = cfg.get("retriever") if hasattr(cfg, "get") else None
    if OmegaConf.is_config(node):
        node = OmegaConf.to_container(node, resolve=True)
    try:
        return RetrieverSpec.of(node)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None


def with_retriever_identity(cfg: Any) -> Any:
    """``cfg`` with the method named and labelled by its code retriever when that is not dense:
    ``method.name`` gets ``_<retriever>`` and ``method.label`` `` (<retriever label>)``, so the run has
    its own directory (``full_bm25``) and the report its own column (``Full History (BM25)``);
    ``method.base_name`` keeps the method's own name. A dense run is returned unchanged."""
    from omegaconf import open_dict

    spec = retriever_spec(cfg)
    base = str(cfg.method.get("base_name") or cfg.method.name)
    if spec.name == "dense" or cfg.method.get("base_name"):
        return cfg
    cfg = cfg.copy()
    label = cfg.retriever.get("label") or spec.name
    with open_dict(cfg):
        cfg.method.base_name = base
        cfg.method.name = f"{base}_{spec.name}"
        cfg.method.label = f"{cfg.method.get('label') or base} ({label})"
    return cfg


def build_method(cfg: Any) -> ContextManager:
    """Instantiate ``cfg.method.manager`` (a ``_target_`` node) as a fresh ContextManager."""
    from hydra.utils import instantiate

    bench = cfg.get("benchmark")
    if bench is not None and bench.get("repo_context_k") is not None:
        raise ConfigError("benchmark.repo_context_k is not an option: the baselines' repository adaptation is "
                          "benchmark.repo_adaptation_k (one method's own: method.manager.repo_context_k=N)")
    node = cfg.method.get("manager")
    if node is None or "_target_" not in node:
        raise ConfigError(f"method={cfg.method.get('name')}: missing method.manager._target_")
    if _reads_repo_adaptation(node) and (bench is None or bench.get("repo_adaptation_k") is None):
        name = bench.get("name") if bench is not None else None
        raise ConfigError(f"benchmark={name}: benchmark.repo_adaptation_k is not set; declare in its config how many "
                          f"repository functions the baselines add per query (0: none; LoCoEval: 10), or set "
                          f"method.manager.repo_context_k=N")
    try:
        manager = instantiate(node)
    except Exception as exc:  # hydra wraps import/arg errors; keep one clear line
        raise ConfigError(f"method={cfg.method.name}: cannot build {node['_target_']}: {exc}") from exc
    if not isinstance(manager, ContextManager):
        raise ConfigError(f"method={cfg.method.name}: {node['_target_']} is not a reconmem.platform.context.ContextManager")
    return manager


def _reads_repo_adaptation(node: Any) -> bool:
    """Whether a method's ``manager`` node takes its ``repo_context_k`` from the benchmark."""
    from omegaconf import OmegaConf

    raw = OmegaConf.to_container(node).get("repo_context_k") if OmegaConf.is_config(node) else None
    return isinstance(raw, str) and "benchmark.repo_adaptation_k" in raw


def read_prompt(package: str, name: str) -> str:
    """Text of a prompt template shipped inside a package (``importlib.resources``)."""
    from importlib import resources

    return resources.files(package).joinpath(name).read_text(encoding="utf-8")


def resolve_data_path(spec: str) -> Path:
    """``package:<pkg>/<relative path>`` -> a file shipped in a package; otherwise a filesystem path."""
    if spec.startswith("package:"):
        from importlib import resources

        pkg, _, rel = spec[len("package:"):].partition("/")
        return Path(str(resources.files(pkg).joinpath(rel)))
    return Path(spec).expanduser()
