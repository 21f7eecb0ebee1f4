"""The in-process xllamacpp server of the offline backbone: one per (model file, n_ctx, threads) per process.

Loaded lazily on first use; generation requests are serialised by a lock; tokenisation uses the
model's own tokenizer through the server's loopback ``/tokenize`` and ``/apply-template`` endpoints.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reconmem.platform.llm.errors import LLMError, LLMUnavailable
from reconmem.platform.local_model.settings import (DEFAULT_N_CTX, DEFAULT_THREADS, N_PARALLEL, check_local_config,
                                                    effective_n_ctx, resolve_threads)
from reconmem.platform.local_model.weights import resolve_gguf

log = logging.getLogger(__name__)


class LocalModel:
    """One in-process xllamacpp server for one GGUF file (lazy, thread-safe, requests serialised)."""

    def __init__(self, gguf_path: str | Path, *, n_ctx: int = DEFAULT_N_CTX, threads: int = DEFAULT_THREADS,
                 n_batch: int | None = None) -> None:
        self.gguf_path = Path(gguf_path)
        self.n_ctx = int(n_ctx)
        self.threads = int(threads)
        self.n_batch = n_batch
        self.load_seconds: float | None = None
        self._server: Any = None
        self._address: str | None = None
        self._load_lock = threading.Lock()
        self._request_lock = threading.Lock()
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        # llama.cpp's own counts: prompt tokens sent, prefilled (evaluated) and restored from a cache
        self.stats = {"calls": 0, "prompt_tokens": 0, "prefilled_tokens": 0, "cached_tokens": 0, "generated_tokens": 0}

    def load(self) -> "LocalModel":
        """Start the server (once)."""
        if self._server is not None:
            return self
        with self._load_lock:
            if self._server is not None:
                return self
            try:
                import xllamacpp
            except ImportError as exc:
                raise LLMUnavailable("the local backbone needs the xllamacpp package "
                                     "(pip install xllamacpp==2026.10.11549)") from exc
            started = time.perf_counter()
            params = xllamacpp.CommonParams()
            params.model.path = str(self.gguf_path)
            params.n_ctx = self.n_ctx
            # One slot with the whole context; requests are serialised anyway. Prefixes are reused
            # across calls of different purposes by llama.cpp's host-memory prompt cache
            # (cache_ram_mib, default 8 GiB): before a new prompt, the slot's KV state is saved and
            # the cached prompt sharing the longest prefix is restored, so only new tokens are
            # prefilled (measured: `python -m scripts.bench prefill`). Separate slots per
            # purpose (n_parallel>1, id_slot) measured worse: no prefix was reused at all.
            # backbone.local.prompt_cache=false turns reuse off per request (prompt_cache_enabled).
            params.n_parallel = N_PARALLEL
            params.cpuparams.n_threads = self.threads
            params.cpuparams_batch.n_threads = self.threads
            if self.n_batch:
                params.n_batch = int(self.n_batch)
            params.verbosity = -1  # llama.cpp logs nothing to stderr
            try:
                server = xllamacpp.Server(params)
            except Exception as exc:  # noqa: BLE001 - report which file failed
                raise LLMUnavailable(f"could not load local model {self.gguf_path}: {exc}") from exc
            self._address = str(server.listening_address).rstrip("/")
            self._server = server
            self.load_seconds = time.perf_counter() - started
            log.info("loaded %s (n_ctx=%d, threads=%d) in %.1fs", self.gguf_path.name, self.n_ctx, self.threads,
                     self.load_seconds)
        return self

    def close(self) -> None:
        """Stop the server and free the model (the next call loads it again)."""
        with self._load_lock, self._request_lock:
            self._server, self._address = None, None

    def chat(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """OpenAI-style chat completion; raises on an error reply (see :func:`raise_for_error`)."""
        self.load()
        with self._request_lock:
            reply = self._server.handle_chat_completions(dict(body))
            raise_for_error(reply)
            self._count(reply)
        return reply

    def _count(self, reply: Mapping[str, Any]) -> None:
        from reconmem.platform.llm.response import prefill_counts

        timings = reply.get("timings") or {}
        usage = reply.get("usage") or {}
        prefill = prefill_counts(reply)
        self.stats["calls"] += 1
        self.stats["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
        self.stats["prefilled_tokens"] += prefill.get("prefilled_tokens", 0)
        self.stats["cached_tokens"] += prefill.get("restored_tokens", 0)
        self.stats["generated_tokens"] += int(timings.get("predicted_n") or 0)

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` with the model's own tokenizer (no BOS, special tokens parsed)."""
        self.load()
        reply = self._post("/tokenize", {"content": text, "add_special": False, "parse_special": True})
        return list(reply["tokens"])

    def count_messages(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """Exact prompt tokens of chat ``messages`` (the model's chat template + tokenizer)."""
        self.load()
        prompt = self._post("/apply-template", {"messages": [dict(m) for m in messages]})["prompt"]
        reply = self._post("/tokenize", {"content": prompt, "add_special": True, "parse_special": True})
        return len(reply["tokens"])

    def _post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(self._address + path, data=json.dumps(body).encode("utf-8"),
                                         headers={"Content-Type": "application/json"})
        try:
            with self._opener.open(request, timeout=120) as response:
                return json.loads(response.read())
        except OSError as exc:
            raise LLMError(f"local model server {self._address}{path} failed: {exc}") from exc


def raise_for_error(reply: Mapping[str, Any]) -> None:
    """Turn an ``{"error": ...}`` reply of the server into the litellm / client exception it means."""
    error = reply.get("error") if isinstance(reply, Mapping) else None
    if not error:
        return
    message = str(error.get("message", error)) if isinstance(error, Mapping) else str(error)
    kind = str(error.get("type", "")) if isinstance(error, Mapping) else ""
    code = int(error.get("code", 500)) if isinstance(error, Mapping) and str(error.get("code", "")).isdigit() else 500
    if "exceed_context" in kind or "context size" in message:
        from reconmem.platform.llm.errors import ContextLengthExceeded

        raise ContextLengthExceeded(f"local model: {message}")
    raise LLMError(f"local model error {code} ({kind or 'error'}): {message}")


_MODELS: dict[tuple[str, int, str], LocalModel] = {}
_MODELS_LOCK = threading.Lock()


_RESOLVED: dict[str, LocalModel] = {}  # canonical backbone.local node -> its model (skips re-resolving)


def get_model(local: Mapping[str, Any]) -> LocalModel:
    """The process-wide :class:`LocalModel` for a ``backbone.local`` node (created lazily, not yet loaded).

    Nodes naming the same file, n_ctx and threads setting share one model.
    """
    cfg = check_local_config(local)
    node_key = json.dumps(cfg, sort_keys=True, default=str)
    model = _RESOLVED.get(node_key)
    if model is not None:
        return model
    path = resolve_gguf(cfg)
    key = (str(path.resolve()), effective_n_ctx(cfg), str(resolve_threads(cfg.get("threads"))))
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = LocalModel(path, n_ctx=key[1], threads=int(key[2]), n_batch=cfg.get("n_batch"))
            _MODELS[key] = model
        _RESOLVED[node_key] = model
    return model
