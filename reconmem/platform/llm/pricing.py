"""Dollar cost of a call: ``conf/pricing.yaml`` overrides first, then litellm's offline model cost map.

litellm ships a JSON price map (``model_prices_and_context_window.json``) inside its wheel; with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` (set before litellm is imported, see
:func:`reconmem.platform.llm.providers.import_litellm`) it never fetches the online copy, so a run's
prices are those of the installed litellm version, recorded with it in the environment.

The pricing file (``conf/pricing.yaml``, or ``$RECONMEM_PRICING``) maps a litellm model string to
either explicit prices or another model of the map::

    models:
      openai/my-finetune: {input_per_mtok: 0.30, output_per_mtok: 1.20, source: "invoice 2026-11"}
      openrouter/qwen/qwen3-235b-a22b-2507: {same_as: fireworks_ai/accounts/fireworks/models/qwen3-235b-a22b-instruct-2507}

Local (``local/``), scripted (``scripted/``) and exchange-answered (``exchange/``: an expert's) models cost 0. A model found nowhere is "unpriced":
its calls record ``cost_usd: 0`` and ``price_source: unpriced`` and one warning names it.

Batch rates (calls answered through a provider's batch API, :mod:`reconmem.platform.llm.batch`):
:meth:`Pricing.batch_price`. A pricing-file entry's ``batch_input_per_mtok`` / ``batch_output_per_mtok``,
else, for a model priced by the file, the provider's ``rate`` (``batch:`` section) times that price,
else litellm's ``*_cost_per_token_batches``, else the provider's ``rate`` times litellm's price; a
provider without ``batch:`` terms has no batch rate (None). The ``batch:`` section also holds each
provider's completion window and the typical turnaround the estimator assumes::

    batch:
      openai: {rate: 0.5, completion_window_hours: 24, typical_turnaround_hours: 1, source: "..."}
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_PRICING_FILE = Path(__file__).resolve().parents[3] / "conf" / "pricing.yaml"


@dataclass(frozen=True)
class Price:
    """Dollars per input and per output token of one model, and where the numbers come from."""

    input_per_token: float
    output_per_token: float
    source: str  # "pricing.yaml" | "litellm" | "local" | "scripted" | "exchange" | "unpriced"

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return input_tokens * self.input_per_token + output_tokens * self.output_per_token

    @property
    def is_paid(self) -> bool:
        return self.input_per_token > 0 or self.output_per_token > 0


FREE_LOCAL = Price(0.0, 0.0, "local")
FREE_SCRIPTED = Price(0.0, 0.0, "scripted")
FREE_EXCHANGE = Price(0.0, 0.0, "exchange")


class PricingError(ValueError):
    """The pricing file is malformed; the message names the file and the entry."""


@dataclass(frozen=True)
class BatchTerms:
    """A provider's batch API terms: price rate (fraction of the standard price), completion window
    and the typical turnaround assumed by the estimator, with where the numbers come from."""

    provider: str
    rate: float
    completion_window_hours: float
    typical_turnaround_hours: float
    source: str


def _pricing_section(path: str | Path | None, key: str, what: str) -> tuple[Path, Mapping[str, Any]]:
    """The pricing file chosen (``path``, ``$RECONMEM_PRICING`` or conf/pricing.yaml) and its ``key``
    section ({} when the file or the section is absent); ``what``: the mapping the section must be."""
    chosen = Path(path or os.environ.get("RECONMEM_PRICING") or DEFAULT_PRICING_FILE).expanduser()
    if not chosen.exists():
        if path or os.environ.get("RECONMEM_PRICING"):
            raise PricingError(f"{chosen}: pricing file not found")
        return chosen, {}
    import yaml

    try:
        data = yaml.safe_load(chosen.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise PricingError(f"{chosen}: invalid YAML: {exc}") from exc
    if not isinstance(data, Mapping):
        raise PricingError(f"{chosen}: expected a mapping with 'models' and 'batch'")
    section = data.get(key) or {}
    if not isinstance(section, Mapping):
        raise PricingError(f"{chosen}: '{key}' must be a mapping of {what}")
    return chosen, section


def load_batch_terms(path: str | Path | None = None) -> dict[str, BatchTerms]:
    """The ``batch:`` section of a pricing file: provider -> :class:`BatchTerms` ({} if none)."""
    chosen, section = _pricing_section(path, "batch", "provider -> terms")
    terms = {}
    for provider, entry in section.items():
        keys = ("rate", "completion_window_hours", "typical_turnaround_hours", "source")
        if not isinstance(entry, Mapping) or not set(keys) <= set(entry):
            raise PricingError(f"{chosen}: batch.{provider}: give {', '.join(keys)}")
        try:
            term = BatchTerms(str(provider), float(entry["rate"]), float(entry["completion_window_hours"]),
                              float(entry["typical_turnaround_hours"]), str(entry["source"]))
        except (TypeError, ValueError) as exc:
            raise PricingError(f"{chosen}: batch.{provider}: {exc}") from exc
        if not 0 < term.rate <= 1 or term.completion_window_hours <= 0 or term.typical_turnaround_hours <= 0:
            raise PricingError(f"{chosen}: batch.{provider}: expected 0 < rate <= 1 and positive hours")
        terms[str(provider)] = term
    return terms


def provider_of(model: str) -> str:
    """The provider prefix of a litellm model string (``openai/gpt-5-mini`` -> ``openai``)."""
    return model.split("/", 1)[0] if "/" in model else "openai"


def load_pricing_file(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The ``models:`` table of a pricing file (``path``, ``$RECONMEM_PRICING`` or conf/pricing.yaml); {} if none."""
    chosen, models = _pricing_section(path, "models", "model -> prices")
    table = {}
    for model, entry in models.items():
        if not isinstance(entry, Mapping):
            raise PricingError(f"{chosen}: models.{model}: expected a mapping")
        if "same_as" not in entry and not {"input_per_mtok", "output_per_mtok"} <= set(entry):
            raise PricingError(f"{chosen}: models.{model}: give input_per_mtok and output_per_mtok, or same_as")
        table[str(model)] = dict(entry)
    return table


class Pricing:
    """Resolves a model string to a :class:`Price` (cached per model)."""

    def __init__(self, table: Mapping[str, Mapping[str, Any]] | None = None,
                 batch_terms: Mapping[str, BatchTerms] | None = None) -> None:
        self.table = dict(table if table is not None else load_pricing_file())
        self.batch_terms = dict(batch_terms if batch_terms is not None else load_batch_terms())
        self._cache: dict[str, Price] = {}
        self._lock = threading.Lock()

    def batch_price(self, model: str) -> Price | None:
        """The price of ``model``'s calls answered through its provider's batch API (see the module
        doc for the order); None when no batch rate is known for its provider."""
        if model.startswith(("local/", "scripted/", "exchange/")):
            return self.price(model)
        entry = self.table.get(model)
        if entry is not None and {"batch_input_per_mtok", "batch_output_per_mtok"} <= set(entry):
            return Price(float(entry["batch_input_per_mtok"]) / 1e6, float(entry["batch_output_per_mtok"]) / 1e6,
                         "pricing.yaml batch")
        terms = self.batch_terms.get(provider_of(model))
        if entry is None:
            listed = _litellm_batch_price(model)
            if listed is not None:
                return listed
        if terms is None:
            return None
        base = self.price(model)
        return Price(base.input_per_token * terms.rate, base.output_per_token * terms.rate,
                     f"batch rate {terms.rate:g} x {base.source}")

    def price(self, model: str) -> Price:
        """The price of ``model`` ('local/...', 'scripted/...' and 'exchange/...' are free)."""
        with self._lock:
            if model not in self._cache:
                self._cache[model] = self._resolve(model, depth=0)
            return self._cache[model]

    def _resolve(self, model: str, depth: int) -> Price:
        if model.startswith("local/"):
            return FREE_LOCAL
        if model.startswith("scripted/"):
            return FREE_SCRIPTED
        if model.startswith("exchange/"):
            return FREE_EXCHANGE
        entry = self.table.get(model)
        if entry is not None:
            if "same_as" in entry:
                if depth > 5:
                    raise PricingError(f"pricing: same_as chain too long at {model}")
                base = self._resolve(str(entry["same_as"]), depth + 1)
                return Price(base.input_per_token, base.output_per_token, f"pricing.yaml->{base.source}")
            return Price(float(entry["input_per_mtok"]) / 1e6, float(entry["output_per_mtok"]) / 1e6, "pricing.yaml")
        price = _litellm_price(model)
        if price is not None:
            return price
        log.warning("no price for model %s (not in litellm's offline cost map nor in conf/pricing.yaml): "
                    "its calls are recorded with cost_usd 0; add it to conf/pricing.yaml", model)
        return Price(0.0, 0.0, "unpriced")


def _litellm_price(model: str) -> Price | None:
    from reconmem.platform.llm.providers import import_litellm

    litellm = import_litellm()
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(model=model, prompt_tokens=1_000_000,
                                                              completion_tokens=1_000_000)
    except Exception:  # noqa: BLE001 - litellm raises several classes for unmapped models
        return None
    return Price(float(prompt_cost) / 1e6, float(completion_cost) / 1e6, "litellm")


def _litellm_batch_price(model: str) -> Price | None:
    """litellm's listed batch prices of ``model`` (``input/output_cost_per_token_batches``), or None."""
    from reconmem.platform.llm.providers import import_litellm

    litellm = import_litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - unmapped model
        return None
    tin, tout = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
    if tin is None or tout is None:
        return None
    return Price(float(tin), float(tout), "litellm batch")


_DEFAULT: Pricing | None = None
_DEFAULT_LOCK = threading.Lock()


def default_pricing() -> Pricing:
    """The process-wide pricing (conf/pricing.yaml or $RECONMEM_PRICING over litellm's map)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = Pricing()
        return _DEFAULT
