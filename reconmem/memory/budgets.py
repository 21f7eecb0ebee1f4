"""ReConMem's retrieval budgets (paper §3.5): their names and defaults, written once.

The fields of :class:`Budgets` are the budget names: the ``method.manager.<name>`` overrides, the
keys of a ``budgets_by_backbone`` entry (``conf/method/reconmem.yaml``), of ``memory.json``
``config`` and of the run manifest's ``method_params``. Their defaults apply to a backbone that
table does not list.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

CONSTRUCTION, RECALL = "construction", "recall"


@dataclass(frozen=True)
class Budgets:
    """The four budgets and their defaults; ``stage`` says which part of the method reads each."""

    k1: int = field(default=2, metadata={"stage": CONSTRUCTION})  # similar memories shown to the update decision
    k2: int = field(default=4, metadata={"stage": RECALL})  # semantic entities by the original query
    k31: int = field(default=2, metadata={"stage": RECALL})  # repository-wide code entities by the dual query
    k32: int = field(default=2, metadata={"stage": RECALL})  # structural-graph code entities by the dual query


#: every budget name, in order
BUDGET_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Budgets))
#: the budgets of the recall stage (Table 6's "Budgets" column, the CR calibration's search space)
RECALL_BUDGET_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Budgets) if f.metadata["stage"] == RECALL)
#: name -> default
DEFAULT_BUDGETS: dict[str, int] = asdict(Budgets())
