"""The offline backbone as a litellm provider (``local``) and as the LLM client's transport.

:func:`ensure_registered` registers the ``local`` custom provider with litellm, so
``litellm.completion(model="local/<name>")`` -- and therefore :class:`reconmem.platform.llm.LLMClient`
through :class:`LocalTransport` -- reaches the model exactly like an API backbone.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from reconmem.platform.llm.errors import LLMUnavailable
from reconmem.platform.local_model.server import LocalModel, get_model
from reconmem.platform.local_model.settings import PROVIDER, cache_identity, effective_n_ctx, prompt_cache_enabled

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
