"""Canonical method / backbone orders and display labels for tables and figures.

Labels (:class:`Labels`, built from the loaded runs and passed to what renders them) come from the
run records (the manifest's ``method_label``, ``config.yaml``: ``method.label``, ``backbone.label``)
when a run exists, otherwise from ``conf/method/<name>.yaml`` / ``conf/backbone/<name>.yaml`` (so a
missing method still gets a proper column header), otherwise the name itself. A backbone row is
labelled by the model id its runs' manifests recorded, with the config label beside it
(``openrouter/qwen/qwen3-235b-a22b-2507 (Qwen3-235B)``): the row names the model that answered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class Labels:
    """The display labels of one set of runs, handed explicitly to what renders them: a label the
    records carry (``methods``, ``backbones``: name -> label; ``models``: backbone key -> the model id
    its runs called) wins over ``conf/<group>/<name>.yaml``'s, then the name itself. ``Labels()``
    knows the config labels only. :meth:`of_runs` builds them from loaded runs
    (:attr:`benchmarks.analysis.records.RunSet.labels`)."""

    methods: Mapping[str, str] = field(default_factory=dict)
    backbones: Mapping[str, str] = field(default_factory=dict)
    models: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of_runs(cls, runs: Iterable[Any]) -> "Labels":
        """From loaded runs (:class:`benchmarks.analysis.run_records.RunRecord`): a method's label from
        its manifest (``method_label``) or ``config.yaml``; a backbone's from ``config.yaml`` or its
        config file (a backbone split by model, ``name@model``, keeps its config name's label); the
        model its runs' manifests recorded. A later run's label wins."""
        methods: dict[str, str] = {}
        backbones: dict[str, str] = {}
        models: dict[str, str] = {}
        for r in runs:
            method = r.manifest.get("method_label") or _section(r.config, "method").get("label")
            if method:
                methods[r.method] = str(method)
            backbones[r.backbone] = str(_section(r.config, "backbone").get("label")
                                        or _conf_label("backbone", r.backbone_name) or r.backbone_name)
            model = r.models.get("backbone")
            if model:
                models[r.backbone] = str(model)
            else:
                models.pop(r.backbone, None)
        return cls(methods, backbones, models)

    def method_label(self, name: str) -> str:
        """Display label of a method (e.g. ``mem0r`` -> ``Mem0^R``)."""
        return self.methods.get(name) or _conf_label("method", name) or name

    def backbone_config_label(self, name: str) -> str:
        """The config label of a backbone (e.g. ``qwen3_235b`` -> ``Qwen3-235B``), without the model id."""
        return self.backbones.get(name) or _conf_label("backbone", name) or name

    def backbone_label(self, name: str) -> str:
        """Row label of a backbone: the recorded model id with the config label beside it
        (``openrouter/qwen/qwen3-235b-a22b-2507 (Qwen3-235B)``), or the config label alone when no
        run recorded a model."""
        label = self.backbone_config_label(name)
        model = self.models.get(name)
        if not model or model == label:
            return label
        return f"{model} ({label})"


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    node = config.get(name)
    return node if isinstance(node, Mapping) else {}


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
