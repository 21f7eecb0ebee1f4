"""The run directory: the one place that knows the layout, the resume rule and the shard merge.

Layout (one run = one benchmark x backbone x method x run_id; file names in :mod:`.files`)::

    <results_dir>/<benchmark>/<backbone>/<method>/<run_id>/
        config.yaml  manifest.json  summary.json
        shards/{manifest,summary}-<i>-of-<n>.json, config-<i>-of-<n>.yaml   (run.shard=I/N)
        samples/<safe id>/result.json (written last) ledger.jsonl conversation.jsonl contexts.jsonl ...

The loop writes through :class:`RunDir`; the metrics, the estimator and the analysis read through it.
Every record read is validated (:func:`benchmarks.records.schema.validate`); the manifest is the
merged view of the shard manifests, migrated to the current schema (:mod:`.migrate`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from benchmarks.records import files as F
from benchmarks.records.derived import manifest_selection, missing_result
from benchmarks.records.files import RecordError, atomic_write_json, atomic_write_text, read_json, read_jsonl, safe_name
from benchmarks.records.migrate import migrate_contexts, migrate_conversation, migrate_manifest
from benchmarks.records.schema import SCHEMA_VERSION, validate
from benchmarks.records.status import Status

SHARD_KINDS = ("manifest", "summary", "config")
# Manifest fields that must agree across the shards of one run (else the merge reports it).
_SHARD_AGREE = ("benchmark", "method", "backbone", "run_id", "models", "hide_task_tests", "git_rev", "packages",
                "data_checksums", "method_params")


@dataclass(frozen=True)
class SampleDir:
    """One sample's folder and its records."""

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @property
    def name(self) -> str:
        return self.path.name

    def file(self, name: str) -> Path:
        return self.path / name

    def result(self) -> dict[str, Any] | None:
        """The validated result.json, or None while the sample is unfinished (no file)."""
        p = self.path / F.RESULT
        return validate("result", read_json(p), str(p)) if p.is_file() else None

    def ledger(self, *, strict: bool = True) -> list[dict[str, Any]]:
        return self._rows(F.LEDGER, "ledger", strict)

    def conversation(self) -> list[dict[str, Any]]:
        """Message rows (rows of older runs migrated: :func:`~benchmarks.records.migrate.migrate_conversation`)."""
        return migrate_conversation(read_jsonl(self.path / F.CONVERSATION))

    def contexts(self) -> list[dict[str, Any]]:
        """Context rows (rows of older runs migrated: :func:`~benchmarks.records.migrate.migrate_contexts`)."""
        return migrate_contexts(read_jsonl(self.path / F.CONTEXTS))

    def tool_calls(self) -> list[dict[str, Any]]:
        return read_jsonl(self.path / F.TOOL_CALLS)

    def memory(self) -> Any:
        return self.json(F.MEMORY)

    def coverage(self) -> Any:
        return self.json(F.COVERAGE)

    def json(self, name: str) -> Any:
        """A JSON file of the sample (None when absent)."""
        p = self.path / name
        return read_json(p) if p.is_file() else None

    def _rows(self, name: str, kind: str, strict: bool) -> list[dict[str, Any]]:
        p = self.path / name
        rows = read_jsonl(p, strict=strict)
        for i, row in enumerate(rows):
            validate(kind, row, f"{p}:{i + 1}")
        return rows


class RunDir:
    """One run's directory (all its shards): sample folders, the resume rule, manifest and summary."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.problems: list[str] = []  # inconsistencies found while merging the shards

    @classmethod
    def at(cls, results_dir: str | Path, benchmark: str, backbone: str, method: str, run_id: str) -> "RunDir":
        return cls(Path(results_dir) / benchmark / backbone / method / run_id)

    @classmethod
    def of_method(cls, results_dir: str | Path, benchmark: str, method: str) -> list["RunDir"]:
        """Every run directory of ``method`` on ``benchmark`` under ``results_dir`` (any backbone, run id)."""
        return [cls(p) for p in sorted((Path(results_dir) / benchmark).glob(f"*/{method}/*")) if (p / F.SAMPLES).is_dir()]

    @classmethod
    def discover(cls, root: str | Path) -> list["RunDir"]:
        """Run directories at or below ``root`` (any folder holding ``samples/``; hidden folders skipped)."""
        root = Path(root)
        if not root.exists():
            raise RecordError(f"{root}: no such file or directory")
        if (root / F.SAMPLES).is_dir():
            return [cls(root)]
        found: list[RunDir] = []
        for dirpath, dirnames, _ in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            if F.SAMPLES in dirnames and Path(dirpath, F.SAMPLES).is_dir():
                found.append(cls(Path(dirpath)))
                dirnames[:] = []  # a run's samples are not runs
        return found

    @property
    def backbone_folder(self) -> str:
        """The ``<backbone>`` folder name this run directory sits in."""
        return self.path.parent.parent.name

    @property
    def method_folder(self) -> str:
        """The ``<method>`` folder name this run directory sits in."""
        return self.path.parent.name

    def of_sibling_method(self, method: str) -> "RunDir":
        """The run directory of ``method`` with this run's benchmark, backbone and run id."""
        return RunDir(self.path.parent.parent / method / self.path.name)

    # ------------------------------------------------------------------ samples
    @property
    def samples_path(self) -> Path:
        return self.path / F.SAMPLES

    def sample(self, sample_id: str) -> SampleDir:
        return SampleDir(self.samples_path / safe_name(str(sample_id)))

    def sample_dirs(self) -> list[SampleDir]:
        """Every sample folder, by name (finished or not)."""
        if not self.samples_path.is_dir():
            return []
        return [SampleDir(d) for d in sorted(self.samples_path.iterdir()) if d.is_dir()]

    def result(self, sample_id: str) -> dict[str, Any] | None:
        return self.sample(sample_id).result()

    def status(self, sample_id: str) -> Status | None:
        """``None`` (never run / killed mid-sample), or the recorded status."""
        r = self.result(sample_id)
        return None if r is None else Status.parse(r.get("status"))

    def is_done(self, sample_id: str) -> bool:
        """Finished for the resume rule: a recorded status that is final."""
        status = self.status(sample_id)
        return status is not None and status.final

    def results(self, sample_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Finished samples' results (of ``sample_ids`` when given, in that order; else all, by folder)."""
        dirs = [self.sample(i) for i in sample_ids] if sample_ids is not None else self.sample_dirs()
        return [r for r in (d.result() for d in dirs) if r is not None]

    def selection_results(self, sample_ids: Sequence[str]) -> list[dict[str, Any]]:
        """One result per selected id, in order: the recorded one, else the ``missing`` result of the
        manifest's entry (``{"sample_id": id}`` alone when the manifest lists none)."""
        selection = manifest_selection(self.manifest_file()) or {}
        out = []
        for sid in sample_ids:
            r = self.result(sid)
            out.append(r if r is not None else dict(missing_result(selection.get(str(sid)) or {"sample_id": str(sid)})))
        return out

    # ------------------------------------------------------------------ run files
    def config(self) -> dict[str, Any]:
        """The resolved config.yaml ({} when absent)."""
        p = self.path / F.CONFIG
        if not p.is_file():
            return {}
        import yaml

        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise RecordError(f"{p}: invalid YAML ({str(exc).splitlines()[0]})") from None
        return data if isinstance(data, dict) else {}

    def manifest_file(self) -> dict[str, Any]:
        """manifest.json as written ({} when absent), not merged or migrated."""
        p = self.path / F.MANIFEST
        return read_json(p) if p.is_file() else {}

    def shard_path(self, kind: str, shard: tuple[int, int]) -> Path:
        suffix = ".yaml" if kind == "config" else ".json"
        return self.path / F.SHARDS / f"{kind}-{shard[0]}-of-{shard[1]}{suffix}"

    def shard_files(self, kind: str = "manifest") -> list[Path]:
        return sorted((self.path / F.SHARDS).glob(f"{kind}-*-of-*.json"))

    def shard_manifests(self) -> list[dict[str, Any]]:
        return [read_json(p) for p in self.shard_files("manifest")]

    @cached_property
    def manifest(self) -> dict[str, Any]:
        """The run's manifest: manifest.json over the merge of its shard manifests, in the current
        schema (old ones migrated; :attr:`problems` lists what the merge found)."""
        manifest = self.manifest_file()
        shards = self.shard_manifests()
        if shards:
            merged, self.problems = merge_shard_manifests(self.path, shards)
            manifest = {**merged, **manifest} if manifest else merged
            if manifest.get("shard") and manifest.get("n_shards") is None:
                manifest["n_shards"] = merged["n_shards"]
        first = next((r for r in (d.result() for d in self.sample_dirs()[:1]) if r is not None), None)
        return migrate_manifest(manifest, self.config(), where=str(self.path / F.MANIFEST), first_result=first)

    def summary(self) -> dict[str, Any]:
        """summary.json, else the sum of the shard summaries ({} when neither exists)."""
        p = self.path / F.SUMMARY
        if p.is_file():
            return validate("summary", read_json(p), str(p))
        shards = [read_json(s) for s in self.shard_files("summary")]
        return merge_shard_summaries(shards) if shards else {}

    def selected_ids(self) -> list[str]:
        """The run's selected sample ids (the manifest's ``selected``), else every finished sample's."""
        selection = manifest_selection(self.manifest)
        if selection:
            return list(selection)
        return [str(r.get("sample_id") or d.name) for d in self.sample_dirs() if (r := d.result()) is not None]

    def score(self, name: str) -> dict[str, Any] | None:
        """``scores/<name>.json``: what the scorer ``name`` wrote over this run (None: never scored)."""
        p = self.path / F.SCORES / f"{name}.json"
        return read_json(p) if p.is_file() else None

    def write_score(self, name: str, payload: Mapping[str, Any]) -> Path:
        """Write ``scores/<name>.json`` (atomic): a scorer's result beside the records."""
        return atomic_write_json(self.path / F.SCORES / f"{name}.json", dict(payload))

    # ------------------------------------------------------------------ writers (the loop)
    def sample_dir(self, sample_id: str) -> Path:
        """The sample's folder, created."""
        d = self.sample(sample_id).path
        d.mkdir(parents=True, exist_ok=True)
        return d

    def reset_sample(self, sample_id: str) -> Path:
        """Clear an unfinished/errored sample's folder before re-running it."""
        d = self.sample_dir(sample_id)
        for f in d.iterdir():
            if f.is_file():
                f.unlink()
        return d

    def write_result(self, sample_id: str, result: Mapping[str, Any]) -> Path:
        """Write the sample's result.json last: its presence marks the sample finished."""
        payload = {"sample_id": sample_id, **result}
        p = self.sample(sample_id).path / F.RESULT
        validate("result", payload, str(p))
        return atomic_write_json(p, payload)

    def write_manifest(self, manifest: Mapping[str, Any], config_text: str, *, shard: tuple[int, int] | None = None,
                       shard_config_text: str | None = None) -> None:
        """config.yaml and manifest.json (merged view), and the shard's own copies when sharded."""
        manifest = {"schema_version": SCHEMA_VERSION, **manifest}
        validate("manifest", manifest, str(self.path / F.MANIFEST))
        if shard is not None:
            atomic_write_text(self.shard_path("config", shard), shard_config_text or config_text)
            atomic_write_json(self.shard_path("manifest", shard),
                              {**manifest, "shard": f"{shard[0]}/{shard[1]}", "n_shards": shard[1]})
            manifest["n_shards"] = shard[1]
        atomic_write_text(self.path / F.CONFIG, config_text)
        atomic_write_json(self.path / F.MANIFEST, manifest)

    def write_summary(self, summary: Mapping[str, Any], *, shard_part: Mapping[str, Any] | None = None,
                      shard: tuple[int, int] | None = None) -> None:
        """summary.json (merged view), and the shard's own summary when sharded."""
        if shard is not None and shard_part is not None:
            atomic_write_json(self.shard_path("summary", shard), dict(shard_part))
        atomic_write_json(self.path / F.SUMMARY, dict(summary))


# ----------------------------------------------------------------------------- shard merge
def _parse_shard(text: Any) -> tuple[int, int] | None:
    try:
        i, n = str(text).split("/")
        return int(i), int(n)
    except (TypeError, ValueError):
        return None


def merge_shard_manifests(path: Path, shards: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """One manifest from the shard manifests of a run directory, and the problems found
    (fields that differ between shards, missing shards)."""
    problems: list[str] = []
    merged: dict[str, Any] = dict(shards[0])
    for key in _SHARD_AGREE:
        values = {repr(s.get(key)) for s in shards}
        if len(values) > 1:
            problems.append(f"{path}: shards disagree on manifest '{key}' ({len(values)} values)")
    started = sorted(str(s.get("started")) for s in shards if s.get("started"))
    if started:
        merged["started"] = started[0]
    parsed = [p for p in (_parse_shard(s.get("shard")) for s in shards) if p]
    n = max((p[1] for p in parsed), default=len(shards))
    have = sorted({p[0] for p in parsed})
    first = 0 if 0 in have or not have or max(have) < n else 1  # run.shard=I/N is 0-based (0 <= I < N)
    missing = [i for i in range(first, first + n) if i not in have] if parsed else []
    if missing:
        problems.append(f"{path}: shard(s) {', '.join(f'{i}/{n}' for i in missing)} have no manifest "
                        "(their samples are missing or unfinished)")
    merged["shard"] = None
    merged["n_shards"] = n
    merged["shards_present"] = [f"{i}/{n}" for i in have]
    merged["n_selected"] = max((int(s.get("n_selected") or 0) for s in shards), default=0) or None
    merged["command"] = "; ".join(dict.fromkeys(str(s.get("command")) for s in shards if s.get("command")))
    merged["scripted"] = any(bool(s.get("scripted")) for s in shards)
    return merged, problems


def merge_shard_summaries(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and costs summed over shard summaries (informational; the analysis recomputes)."""
    out: dict[str, Any] = {}
    for s in summaries:
        for k, v in s.items():
            if isinstance(v, bool):
                out.setdefault(k, v)
            elif isinstance(v, (int, float)) and (k.startswith("n_") or k in ("json_failures", "cost_usd")):
                out[k] = out.get(k, 0) + v
            elif k == "status_counts" and isinstance(v, dict):
                agg = out.setdefault(k, {})
                for st, c in v.items():
                    agg[st] = agg.get(st, 0) + int(c)
            else:
                out.setdefault(k, v)
    out["shard"] = None
    return out
