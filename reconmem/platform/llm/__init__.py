"""The one LLM client every method, baseline and benchmark uses (see :mod:`.client`).

Modules: :mod:`.errors` (error classes, classifier), :mod:`.spec` (BackboneSpec), :mod:`.response`
(Usage, LLMResponse, Completion), :mod:`.ledger` (UsageLedger, tag scopes, spend limit),
:mod:`.cache` (SQLite and sharded response caches, the cache key), :mod:`.pricing` (cost per call),
:mod:`.providers` (litellm), :mod:`.purposes` (the call purposes and their classification),
:mod:`.transport` (the Transport interface, litellm's), :mod:`.exchange` (the exchange transport and
folder), :mod:`.client` (LLMClient), :mod:`.defaults` (a role's call defaults over a client). Import the public names from here.
"""

from reconmem.platform.llm.cache import (
    CACHE_MODES,
    CACHE_SCHEMA_VERSION,
    ResponseCache,
    ShardedResponseCache,
    open_cache,
    request_key,
)
from reconmem.platform.llm.client import (
    MESSAGE_OVERHEAD_TOKENS,
    REPLY_PRIMING_TOKENS,
    LLMClient,
    approx_token_count,
    message_text,
)
from reconmem.platform.llm.defaults import CallDefaults, DefaultedClient
from reconmem.platform.llm.errors import (
    ContextLengthExceeded,
    CostLimitReached,
    ExchangeConflict,
    ExchangePending,
    LLMError,
    LLMUnavailable,
    TransientLLMError,
    classify_error,
    retry_after_seconds,
)
from reconmem.platform.llm.ledger import UsageLedger, current_tags
from reconmem.platform.llm.pricing import Price, Pricing, PricingError, default_pricing, load_pricing_file
from reconmem.platform.llm.providers import completion_from_litellm, import_litellm
from reconmem.platform.llm.purposes import PURPOSES, Kind, Purpose
from reconmem.platform.llm.response import Completion, LLMResponse, Usage
from reconmem.platform.llm.spec import BackboneSpec
from reconmem.platform.llm.transport import LiteLLMTransport, Transport, default_transport

__all__ = [
    "CACHE_MODES", "CACHE_SCHEMA_VERSION", "MESSAGE_OVERHEAD_TOKENS", "PURPOSES", "REPLY_PRIMING_TOKENS", "BackboneSpec",
    "CallDefaults", "Completion", "ContextLengthExceeded", "CostLimitReached", "DefaultedClient", "ExchangeConflict", "ExchangePending", "Kind", "LLMClient", "LLMError", "LLMResponse",
    "LLMUnavailable", "LiteLLMTransport", "Price", "Pricing", "PricingError", "Purpose", "ResponseCache", "ShardedResponseCache",
    "Transport", "TransientLLMError", "Usage", "UsageLedger", "approx_token_count", "classify_error", "completion_from_litellm",
    "current_tags", "default_pricing", "default_transport", "import_litellm", "load_pricing_file", "message_text", "open_cache",
    "request_key", "retry_after_seconds",
]
