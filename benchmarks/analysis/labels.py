"""Canonical method / backbone orders and display labels for tables and figures.

Labels come from the run records (``config.yaml``: ``method.label``, ``backbone.label``) when a
run exists, otherwise from ``conf/method/<name>.yaml`` / ``conf/backbone/<name>.yaml`` (so a
missing method still gets a proper column header), otherwise the name itself.
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
METHOD_ORDER = TABLE1_METHODS + ABLATIONS
# Table 2 / 5 (CAB): the paper compares these (plus the host agent's native context handling).
CAB_METHODS = ("full", "mem0", "reconmem")
BACKBONE_ORDER = ("gpt5_mini", "deepseek_v32", "qwen3_235b", "local", "local_1_5b", "openai_compatible")
SUBSETS = ("single-hop", "multi-hop")

# Overrides filled from run configs by records.load_runs (label found in a record wins).
_RECORD_LABELS: dict[tuple[str, str], str] = {}


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


def backbone_label(name: str) -> str:
    """Display label of a backbone (e.g. ``qwen3_235b`` -> ``Qwen3-235B``)."""
    return _RECORD_LABELS.get(("backbone", name)) or _conf_label("backbone", name) or name


def _ordered(names, order) -> list[str]:
    rank = {n: i for i, n in enumerate(order)}
    return sorted(set(names), key=lambda n: (rank.get(n, len(rank)), n))


def order_methods(names) -> list[str]:
    """Methods in the paper's order, unknown ones after, alphabetically."""
    return _ordered(names, METHOD_ORDER)


def order_backbones(names) -> list[str]:
    """Backbones in the paper's order, unknown ones after, alphabetically."""
    return _ordered(names, BACKBONE_ORDER)


def order_subsets(names) -> list[str]:
    return _ordered(names, SUBSETS)
