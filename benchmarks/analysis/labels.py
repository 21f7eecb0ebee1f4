"""Canonical method / backbone orders and display labels for tables and figures.

Labels come from the run records (``config.yaml``: ``method.label``, ``backbone.label``) when a
run exists, otherwise from ``conf/method/<name>.yaml`` / ``conf/backbone/<name>.yaml`` (so a
missing method still gets a proper column header), otherwise the name itself. A backbone row is
labelled by the model id its runs' manifests recorded, with the config label beside it
(``openrouter/qwen/qwen3-235b-a22b-2507 (Qwen3-235B)``): the row names the model that answered.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"

# Table 1 columns, in the paper's order; the proposed method is last.
TABLE1_METHODS = ("full", "vanilla_rag", "memgpt", "ld_agent", "mem0", "mem0r", "reconmem")
PROPOSED = "reconmem"
BASELINES = tuple(m for m in TABLE1_METHODS if m != PROPOSED)
ABLATIONS = ("reconmem_wo_gae", "reconmem_wo_smg", "reconmem_wo_qg", "reconmem_wo_hcc")
# The bracket methods of a LoCoEval-format set (benchmarks/analysis/brackets.py): floor and ceiling.
FLOOR, CEILING = "no_memory", "oracle_context"
BRACKETS = (FLOOR, CEILING)
METHOD_ORDER = ("native_strands",) + TABLE1_METHODS + ABLATIONS + BRACKETS
# Table 2 / 5 (CAB), in the paper's column order: the host agent's native context handling first.
CAB_METHODS = ("native_strands", "full", "mem0", "reconmem")
BACKBONE_ORDER = ("gpt5_mini", "deepseek_v32", "qwen3_235b", "local", "local_1_5b", "openai_compatible")
SUBSETS = ("single-hop", "multi-hop")

# Overrides filled from run configs by records.load_runs (label found in a record wins).
_RECORD_LABELS: dict[tuple[str, str], str] = {}
# Backbone key -> model id recorded in its runs' manifests (filled by records.load_runs).
_RECORD_MODELS: dict[str, str] = {}


def remember_label(group: str, name: str, label: str | None) -> None:
    """Record a label seen in a run's config.yaml (group is "method" or "backbone")."""
    if label:
        _RECORD_LABELS[(group, name)] = str(label)


@lru_cache(maxsize=None)
def _conf_label(group: str, name: str) -> str | None:
    path = CONF_DIR / group / f"{name}.yaml"
    if not path.is_file():
        return None
    import yaml

    try:
        node = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return None
    label = node.get("label") if isinstance(node, dict) else None
    return str(label) if label else None


def method_label(name: str) -> str:
    """Display label of a method (e.g. ``mem0r`` -> ``Mem0^R``)."""
    return _RECORD_LABELS.get(("method", name)) or _conf_label("method", name) or name


def remember_model(backbone: str, model: str | None) -> None:
    """Record the model id a backbone's runs called (from their manifests); None forgets it."""
    if model:
        _RECORD_MODELS[backbone] = str(model)
    else:
        _RECORD_MODELS.pop(backbone, None)


def backbone_config_label(name: str) -> str:
    """The config label of a backbone (e.g. ``qwen3_235b`` -> ``Qwen3-235B``), without the model id."""
    return _RECORD_LABELS.get(("backbone", name)) or _conf_label("backbone", name) or name


def backbone_label(name: str) -> str:
    """Row label of a backbone: the recorded model id with the config label beside it
    (``openrouter/qwen/qwen3-235b-a22b-2507 (Qwen3-235B)``), or the config label alone when no
    run recorded a model."""
    label = backbone_config_label(name)
    model = _RECORD_MODELS.get(name)
    if not model or model == label:
        return label
    return f"{model} ({label})"


def _ordered(names, order) -> list[str]:
    rank = {n: i for i, n in enumerate(order)}
    return sorted(set(names), key=lambda n: (rank.get(n, len(rank)), n))


def order_methods(names) -> list[str]:
    """Methods in the paper's order, unknown ones after, alphabetically."""
    return _ordered(names, METHOD_ORDER)


RETRIEVER_SUFFIXES = ("_bm25", "_hybrid")  # a run with retriever=bm25 / hybrid is method <name>_<retriever>


def base_method(name: str) -> str:
    """The method a retriever variant runs (``full_bm25`` -> ``full``); other names unchanged."""
    for suffix in RETRIEVER_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def extension_methods(names) -> list[str]:
    """Methods beyond the paper's (not in :data:`METHOD_ORDER`: e.g. ``memory_tool``, retriever variants
    such as ``reconmem_bm25``), each after its base method's position, then by name."""
    rank = {n: i for i, n in enumerate(METHOD_ORDER)}
    extra = {n for n in names if n not in rank}
    return sorted(extra, key=lambda n: (rank.get(base_method(n), len(rank)), base_method(n), n))


def order_backbones(names) -> list[str]:
    """Backbones in the paper's order, unknown ones after, alphabetically."""
    return _ordered(names, BACKBONE_ORDER)


def order_subsets(names) -> list[str]:
    return _ordered(names, SUBSETS)
