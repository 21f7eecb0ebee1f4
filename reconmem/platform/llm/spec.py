"""``BackboneSpec``: a backbone as configured by a ``conf/backbone/*.yaml`` node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_SPEC_KEYS = {
    "name", "model", "context_window", "max_output_tokens", "temperature", "api_key_env", "api_base",
    "supports_function_calling", "local", "extra", "label", "pricing_model",
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
            return cls(
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
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"backbone config '{data.get('name')}': {exc}") from exc

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
