"""ReConMem's budget names are written once (reconmem/memory/budgets.py); the method's signature,
its config and the records mirror them."""

from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path

import yaml

from benchmarks.analysis import tables
from benchmarks.records.schema import MethodRecord
from reconmem.memory.budgets import BUDGET_NAMES, DEFAULT_BUDGETS, RECALL_BUDGET_NAMES, Budgets
from reconmem.memory.method import ReConMem
from reconmem.memory.recall import RecallConfig

ROOT = Path(__file__).resolve().parents[2]


def test_the_config_mirrors_the_budgets():
    cfg = yaml.safe_load((ROOT / "conf/method/reconmem.yaml").read_text())
    manager_budgets = {k: v for k, v in cfg["manager"].items() if k in BUDGET_NAMES}
    assert manager_budgets == dict.fromkeys(BUDGET_NAMES)  # every budget overridable, null = from the table
    for backbone, entry in cfg["budgets_by_backbone"].items():
        unknown = sorted(set(entry) - set(BUDGET_NAMES))
        assert not unknown, f"budgets_by_backbone.{backbone}: {unknown}"


def test_the_method_and_the_recall_read_the_same_names_and_defaults():
    params = inspect.signature(ReConMem).parameters
    assert all(name in params for name in BUDGET_NAMES)
    recall = {f.name: f.default for f in fields(RecallConfig)}
    assert {k: recall[k] for k in RECALL_BUDGET_NAMES} == {k: DEFAULT_BUDGETS[k] for k in RECALL_BUDGET_NAMES}
    assert {k: ReConMem().params()[k] for k in BUDGET_NAMES} == DEFAULT_BUDGETS
    assert set(RECALL_BUDGET_NAMES) < set(BUDGET_NAMES) == {f.name for f in fields(Budgets)}


def test_the_records_and_table6_name_them_from_the_one_list():
    assert tuple(MethodRecord.__annotations__) == BUDGET_NAMES
    assert BUDGET_NAMES == ("k1", "k2", "k31", "k32")  # the override names users type (docs/reconmem.md)
    assert tables.BUDGETS_HEADER == "k2, k31, k32"  # Table 6's Budgets column
