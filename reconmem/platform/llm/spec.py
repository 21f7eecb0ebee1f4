"""``BackboneSpec``: a backbone as configured by a ``conf/backbone/*.yaml`` node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_SPEC_KEYS = {
    "name", "model", "context_window", "max_output_tokens", "temperature", "api_key_env", "api_base",
    "supports_function_calling", "local", "extra", "label", "pricing_model", "count_margin", "reasoning_max_tokens",
    "exchange",
}
_SPEC_REQUIRED = ("name", "model", "context_window", "max_output_tokens")


@dataclass
class BackboneSpec:
    """A backbone as configured by a ``conf/backbone/*.yaml`` node."""

    name: str
    model: str  # litellm model string, e.g. "openai/gpt-5-mini" or "local/qwen2.5-coder-0.5b-instruct"
    context_window: int
    max_output_tokens: int
    temperature: float = 0.0
    api_key_env: str | None = None
    api_base: str | None = None
    supports_function_calling: bool = False
    local: dict[str, Any] | None = None  # in-process model settings (gguf chunks, sha256, n_ctx, threads)
    extra: dict[str, Any] = field(default_factory=dict)  # passed through to litellm
    label: str | None = None
    # price calls as this model (litellm cost map / conf/pricing.yaml); None = the model itself.
    # For a server that serves a known model under another name, or a priced dry run.
    pricing_model: str | None = None
    # reserve for the token counter's error against the provider's tokenizer, as a fraction of the
    # prompt; None = the measured value of the backbone's family (reconmem.platform.llm.margins)
    count_margin: float | None = None
    # reasoning models: output tokens added to every call's max_tokens for the hidden reasoning,
    # which the provider counts toward the same cap (None = none added)
    reasoning_max_tokens: int | None = None
    # the exchange transport's options (answered_by, live, timeout_seconds, poll_seconds, defer_tasks):
    # requests out as files, answers back (reconmem.platform.llm.exchange); None = a direct backbone
    exchange: dict[str, Any] | None = None

    @classmethod
    def from_config(cls, cfg: Any) -> "BackboneSpec":
        """Build from a mapping or an OmegaConf node; unknown or missing keys raise ValueError naming them."""
        data = to_plain(cfg)
        if not isinstance(data, Mapping):
            raise ValueError(f"backbone config must be a mapping, got {type(data).__name__}")
        if "budgets" in data:
            raise ValueError("backbone.budgets is no longer read: ReConMem's budgets belong to the method "
                             "(conf/method/reconmem.yaml budgets_by_backbone.<backbone name>, or method.manager.k2=...)")
        unknown = sorted(set(data) - _SPEC_KEYS)
        if unknown:
            raise ValueError(f"backbone config: unknown key(s) {', '.join('backbone.' + k for k in unknown)} "
                             f"(known: {', '.join(sorted(_SPEC_KEYS))})")
        missing = [k for k in _SPEC_REQUIRED if data.get(k) in (None, "")]
        if missing:
            raise ValueError(f"backbone config: missing {', '.join('backbone.' + k for k in missing)}")
        try:
            spec = cls(
                name=str(data["name"]),
                model=str(data["model"]),
                context_window=int(data["context_window"]),
                max_output_tokens=int(data["max_output_tokens"]),
                temperature=float(data.get("temperature") or 0.0),
                api_key_env=data.get("api_key_env") or None,
                api_base=data.get("api_base") or None,
                supports_function_calling=bool(data.get("supports_function_calling", False)),
                local=dict(data["local"]) if data.get("local") else None,
                extra=dict(data.get("extra") or {}),
                label=data.get("label"),
                pricing_model=data.get("pricing_model") or None,
                count_margin=None if data.get("count_margin") is None else float(data["count_margin"]),
                reasoning_max_tokens=(None if data.get("reasoning_max_tokens") is None
                                      else int(data["reasoning_max_tokens"])),
                exchange=None if data.get("exchange") is None else dict(data["exchange"]),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"backbone config '{data.get('name')}': {exc}") from exc
        if spec.count_margin is not None and not 0 <= spec.count_margin < 1:
            raise ValueError(f"backbone.count_margin={spec.count_margin}: expected a fraction in [0, 1) "
                             f"(backbone '{spec.name}')")
        if spec.reasoning_max_tokens is not None and spec.reasoning_max_tokens < 0:
            raise ValueError(f"backbone.reasoning_max_tokens={spec.reasoning_max_tokens}: expected >= 0 "
                             f"(backbone '{spec.name}')")
        return spec

    def settings_record(self) -> dict[str, Any]:
        """What of this backbone changes results beyond its model string, for the run manifest:
        window, output cap, temperature, token-count reserve, reasoning effort and cap, provider routing."""
        from reconmem.platform.llm.margins import default_count_margin

        extra = self.extra or {}
        body = extra.get("extra_body") if isinstance(extra.get("extra_body"), Mapping) else {}
        return {"model": self.model, "context_window": self.context_window, "max_output_tokens": self.max_output_tokens,
                "temperature": self.temperature,
                "count_margin": self.count_margin if self.count_margin is not None else default_count_margin(self.model, self.api_base),
                "reasoning_effort": extra.get("reasoning_effort"), "reasoning_max_tokens": self.reasoning_max_tokens,
                "provider": body.get("provider") or extra.get("provider")}

    @property
    def is_local(self) -> bool:
        return self.model.startswith("local/")

    @property
    def is_scripted(self) -> bool:
        return self.model.startswith("scripted/")


def to_plain(cfg: Any) -> Any:
    """A plain dict/list for an OmegaConf node (resolved), the value itself otherwise."""
    if cfg is None or isinstance(cfg, (dict, list, str, int, float, bool)):
        return cfg
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        return dict(cfg)
    if isinstance(cfg, (DictConfig, ListConfig)):
        return OmegaConf.to_container(cfg, resolve=True)
    if isinstance(cfg, Mapping):
        return dict(cfg)
    return cfg
