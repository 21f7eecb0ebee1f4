"""Old run directories brought up to the current schema, in one place.

A manifest without ``schema_version`` is version 1 (written before the records package). Version 1
-> 2 fills what the reader needs from the run's own ``config.yaml`` as it was written, never from
today's defaults: ``family`` (the benchmark name, then the benchmark class / runner path, then the
shape of a result; nothing tells it: refused), ``models`` per role, ``method_label`` and
``method_params`` (``method.manager`` without ``_target_``, budgets k1/k2/k31/k32 resolved from the
recorded ``backbone.budgets``, ``method.budgets_by_backbone`` table, the manager's own k values and the
manifest's ``budgets``; a budget none of them names stays unknown). A manifest of
a newer version than this harness writes is refused in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.records.files import RecordError
from benchmarks.roles import ROLE_OPTIONS
from benchmarks.records.schema import SCHEMA_VERSION, Family, validate
from reconmem.memory.budgets import BUDGET_NAMES


def migrate_manifest(manifest: Mapping[str, Any], config: Mapping[str, Any], *, where: str,
                     first_result: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``manifest`` in the current schema (validated); RecordError naming ``where`` when it cannot be."""
    out = dict(manifest)
    version = out.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        raise RecordError(f"{where}: field 'schema_version': expected a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise RecordError(f"{where}: schema_version {version} is newer than this harness reads ({SCHEMA_VERSION}); "
                          "update the harness")
    if version == 1:
        out = _v1_to_v2(out, config, where, first_result)
    return validate("manifest", out, where)


def _section(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    node = config.get(name)
    return dict(node) if isinstance(node, Mapping) else {}


def _v1_to_v2(manifest: dict[str, Any], config: Mapping[str, Any], where: str,
              first_result: Mapping[str, Any] | None) -> dict[str, Any]:
    out = {**manifest, "schema_version": 2}
    bench = _section(config, "benchmark")
    name = manifest.get("benchmark") or bench.get("name")
    if manifest.get("family") is None:
        out["family"] = legacy_family(name, bench, first_result, where)
    models = manifest.get("models")
    if not (isinstance(models, Mapping) and models.get("backbone")):
        out["models"] = legacy_models(config, out["family"])
    method = _section(config, "method")
    out.setdefault("method_label", method.get("label"))
    out.setdefault("method_params", legacy_method_params(config, manifest))
    return out


def legacy_family(name: Any, bench: Mapping[str, Any], first_result: Mapping[str, Any] | None, where: str) -> str:
    """A version-1 run's family: its benchmark name, then its class / runner path, then a result's shape."""
    if name == Family.CAB.value:
        return Family.CAB.value
    if name in (Family.LOCOEVAL.value, "demo"):
        return Family.LOCOEVAL.value
    target = str(bench.get("_target_") or bench.get("runner") or "")
    for fam in Family:
        if f".{fam.value}." in target:
            return fam.value
    if first_result is not None and ("verdict" in first_result or "verbosity" in first_result):
        return Family.CAB.value
    if first_result is not None and isinstance(first_result.get("tasks"), list) and "subset" in first_result:
        return Family.LOCOEVAL.value
    raise RecordError(f"{where}: field 'family': missing, and neither the benchmark name {name!r} nor "
                      f"config.yaml benchmark._target_ names a known family ({', '.join(f.value for f in Family)})")


def legacy_models(config: Mapping[str, Any], family: str) -> dict[str, str | None]:
    """Model ids per role from a version-1 run's resolved config."""
    def pick(role: str) -> str | None:
        model = _section(config, ROLE_OPTIONS[role]).get("model")
        return str(model) if model else None

    return {role: pick(role) if role != "judge" or family == Family.CAB.value else None for role in ROLE_OPTIONS}


def legacy_method_params(config: Mapping[str, Any], manifest: Mapping[str, Any]) -> dict[str, Any]:
    """``method.manager`` of a version-1 run without ``_target_``, budgets resolved from its own config.

    Layers, later ones winning: ``backbone.budgets`` (where version-1 configs kept them and the
    method's k values pointed), the method's ``budgets_by_backbone`` (``default``, then the backbone's
    entry), integer k values of the manager, the manifest's recorded ``budgets``. The backbone's
    budgets count only for a method that takes budgets (k keys in its manager, a budget table, or
    ReConMem as its ``_target_``): every version-1 backbone carried them, baselines included.
    """
    method = _section(config, "method")
    raw_manager = _section(method, "manager")
    manager = {k: v for k, v in raw_manager.items() if k != "_target_"}
    table = method.get("budgets_by_backbone") or manager.get("budgets_by_backbone")
    recorded = manifest.get("budgets") if isinstance(manifest.get("budgets"), Mapping) else {}
    takes_budgets = (isinstance(table, Mapping) or any(k in manager for k in BUDGET_NAMES)
                     or str(raw_manager.get("_target_") or "").endswith(".ReConMem"))
    if takes_budgets or recorded:
        backbone_section = _section(config, "backbone")
        backbone = manager.get("backbone") or backbone_section.get("name") or manifest.get("backbone")
        resolved: dict[str, Any] = {}
        on_backbone = backbone_section.get("budgets")
        if takes_budgets and isinstance(on_backbone, Mapping):
            resolved.update({k: v for k, v in on_backbone.items() if k in BUDGET_NAMES and isinstance(v, int)})
        for key in ("default", backbone):
            entry = table.get(key) if isinstance(table, Mapping) and key is not None else None
            if isinstance(entry, Mapping):
                resolved.update({k: v for k, v in entry.items() if k in BUDGET_NAMES and v is not None})
        resolved.update({k: manager[k] for k in BUDGET_NAMES if isinstance(manager.get(k), int)})
        resolved.update({k: v for k, v in recorded.items() if k in BUDGET_NAMES and v is not None})
        for k in BUDGET_NAMES:
            manager.pop(k, None)
        manager.update(resolved)
    return manager


def migrate_conversation(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Conversation rows as messages ``{turn, role: user|assistant, content, ...}``: a version-1
    LoCoEval exchange row ``{user, assistant, assistant_skipped?}`` becomes two messages, a CAB
    ``maintainer`` message an ``assistant`` one; current rows pass unchanged."""
    out: list[dict[str, Any]] = []
    for row in rows:
        if "content" in row and "role" in row:
            out.append({**row, "role": "assistant"} if row["role"] == "maintainer" else row)
            continue
        if "user" not in row and "assistant" not in row:
            out.append(row)
            continue
        labels = {k: v for k, v in row.items() if k not in ("user", "assistant", "assistant_skipped", "oracle_turns")}
        reply = {"turn": row.get("turn"), "role": "assistant", "content": row.get("assistant") or "", **labels}
        if row.get("assistant_skipped"):
            reply["skipped"] = True
        if "oracle_turns" in row:
            reply["oracle_turns"] = row["oracle_turns"]
        out += [{"turn": row.get("turn"), "role": "user", "content": row.get("user") or "", **labels}, reply]
    return out


def migrate_contexts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Context rows with the built context under ``context``: a version-1 CAB row (the context's
    fields inline beside ``turn`` / ``recalled``) is nested; current rows pass unchanged."""
    out: list[dict[str, Any]] = []
    for row in rows:
        if "context" in row:
            out.append(row)
            continue
        outer = {k: row[k] for k in ("turn", "recalled") if k in row}
        out.append({**outer, "context": {k: v for k, v in row.items() if k not in outer}})
    return out
