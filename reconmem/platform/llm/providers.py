"""The litellm side of the client: lazy import with the offline cost map, the completion call, and
normalising litellm's response into a :class:`~reconmem.platform.llm.response.Completion`.

Imports nothing of the project but the errors, response types and JSON repair (the local model
imports :func:`import_litellm` from here; no cycle).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from reconmem.platform.jsonio import JSONRepairError, parse_json_lenient
from reconmem.platform.llm.errors import TransientLLMError
from reconmem.platform.llm.response import Completion, Usage

_LITELLM_LOCK = threading.Lock()


def import_litellm() -> Any:
    """Import litellm lazily, with the offline price map (no network fetch at import)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with _LITELLM_LOCK:
        import warnings

        # pydantic complains about litellm's own TypedDicts when provider modules load lazily
        warnings.filterwarnings("ignore", message=r".*ReadOnly. qualifier", category=UserWarning)
        import litellm

        litellm.suppress_debug_info = True
        if not os.environ.get("LITELLM_LOG"):  # one INFO line per call otherwise, when the app logs at INFO
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
                logging.getLogger(name).setLevel(logging.WARNING)
    return litellm


def litellm_completion(request: Mapping[str, Any], *, api_key: str | None, timeout: float,
                       json_mode_supported: bool) -> Completion:
    """Send one client request through ``litellm.completion`` (no litellm retries: the client retries)."""
    litellm = import_litellm()
    kwargs = dict(request)
    json_mode = kwargs.pop("json_mode", False)
    if json_mode and json_mode_supported:
        kwargs["response_format"] = {"type": "json_object"}
    for name in ("tools", "stop", "api_base"):
        if kwargs.get(name) is None:
            kwargs.pop(name, None)
    if api_key is not None:
        kwargs["api_key"] = api_key
    kwargs.setdefault("drop_params", True)
    kwargs["timeout"] = timeout
    kwargs["num_retries"] = 0  # retries are ours
    response = litellm.completion(**kwargs)
    return completion_from_litellm(response)


def supports_response_format(model: str) -> bool:
    """Whether litellm knows ``model`` to accept ``response_format`` (unknown models: no)."""
    litellm = import_litellm()
    try:
        params = litellm.get_supported_openai_params(model=model) or []
    except Exception:  # noqa: BLE001 - unknown model: do not send it
        return False
    return "response_format" in params


def completion_from_litellm(response: Any) -> Completion:
    """Normalise a litellm ModelResponse (or an OpenAI-shaped dict) into a :class:`Completion`."""
    data = response if isinstance(response, Mapping) else _model_dump(response)
    if not data.get("choices"):  # a provider glitch (seen behind proxies and overloaded servers): retry
        raise TransientLLMError(f"reply without choices (model {data.get('model') or '?'})")
    choices = data["choices"]
    choice = choices[0] or {}
    message = choice.get("message") or {}
    tool_calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError:
                try:
                    arguments = parse_json_lenient(arguments)
                except JSONRepairError:
                    arguments = {"_raw": arguments}
        tool_calls.append({"id": call.get("id"), "name": function.get("name"), "arguments": arguments or {}})
    usage_data = data.get("usage") or {}
    usage = None
    if usage_data.get("prompt_tokens") is not None or usage_data.get("completion_tokens") is not None:
        details = usage_data.get("completion_tokens_details") or {}
        reasoning = details.get("reasoning_tokens") if isinstance(details, Mapping) else None
        usage = Usage(int(usage_data.get("prompt_tokens") or 0), int(usage_data.get("completion_tokens") or 0),
                      None if reasoning is None else int(reasoning))
    return Completion(text=message.get("content") or "", tool_calls=tool_calls, usage=usage,
                      model=str(data.get("model") or ""), finish_reason=choice.get("finish_reason"),
                      raw=_jsonable(data))


def litellm_count_text(model: str, text: str) -> int:
    """Tokens of ``text`` by litellm's counter (bundled tiktoken files; offline)."""
    return int(import_litellm().token_counter(model=model, text=text))


def litellm_count_messages(model: str, messages: list[Mapping[str, Any]]) -> int:
    """Tokens of chat messages by litellm's counter (raises on unusual message shapes)."""
    return int(import_litellm().token_counter(model=model, messages=[dict(m) for m in messages]))


def _model_dump(obj: Any) -> dict[str, Any]:
    for attr in ("model_dump", "dict", "to_dict"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            try:
                return dict(fn())
            except Exception:  # noqa: BLE001
                continue
    return dict(obj)


def _jsonable(data: Any) -> Any:
    try:
        return json.loads(json.dumps(data, default=str))
    except (TypeError, ValueError):
        return {}
