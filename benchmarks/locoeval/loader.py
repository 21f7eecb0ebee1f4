"""Load LoCoEval samples from a local file, a file shipped in a package, or a Hugging Face dataset.

Sources (``cfg.benchmark.samples``):

- a local path: ``.jsonl`` (one sample per line), ``.json`` (a list of samples) or a directory of
  ``*.json`` / ``*.jsonl`` files;
- ``package:<package>/<relative path>``, e.g. ``package:benchmarks.locoeval/demo/samples.jsonl``;
- ``hf:<dataset>[:<split>]`` (default split ``test``) through the ``datasets`` library, which also
  reads a local dataset directory or its cache.

Rows in the official release's layout (not ours) are converted by
:func:`benchmarks.locoeval.convert.convert_record` first. Every sample is checked with
:func:`benchmarks.locoeval.schema.validate_sample`; errors name the file/line, the sample id and
the field path. A set that scores one task in two samples (the subsets would not be independent)
loads with a :class:`SharedTaskWarning` naming the task and the samples. In a directory source,
files that are not samples (``*.verification.jsonl``, ``deveval_tasks.jsonl``) are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from benchmarks.locoeval.schema import Sample, SampleError, parse_sample
from benchmarks.task import select_samples
from reconmem.platform.jsonfiles import iter_json_records

# Files that may sit beside samples in a directory but are not samples.
NON_SAMPLE_SUFFIXES = (".verification.jsonl", ".verification.json")
NON_SAMPLE_NAMES = ("deveval_tasks.jsonl", "screening.json")


class SharedTaskWarning(UserWarning):
    """A sample set scores the same task in more than one sample."""


def _read_json_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(location, object) pairs from a .jsonl / .json file (a list, one sample, or ``{"samples": [...]}``)."""
    return list(iter_json_records(path, error=SampleError, list_key="samples"))


def _package_path(spec: str) -> Path:
    pkg, _, rel = spec.partition("/")
    if not pkg or not rel:
        raise SampleError(f"bad package source {spec!r}: expected package:<package>/<relative path>")
    try:
        ref = resources.files(pkg).joinpath(rel)
    except ModuleNotFoundError as exc:
        raise SampleError(f"package source {spec!r}: no package {pkg!r}") from exc
    path = Path(str(ref))
    if not path.exists():
        raise SampleError(f"package source {spec!r}: {path} does not exist")
    return path


def _hf_rows(spec: str) -> list[tuple[str, dict[str, Any]]]:
    import datasets  # heavy: imported lazily

    name, _, split = spec.partition(":")
    split = split or "test"
    try:
        ds = datasets.load_dataset(name, split=split)
    except Exception as exc:  # noqa: BLE001 - the datasets library raises many types
        raise SampleError(f"cannot load Hugging Face dataset {name!r} split {split!r}: {exc}") from exc
    return [(f"hf:{name}:{split}[{i}]", _strip_nones(dict(row))) for i, row in enumerate(ds)]


def _strip_nones(value: Any) -> Any:
    """Arrow tables give every struct all keys (absent ones as None): drop those again."""
    if isinstance(value, dict):
        return {k: _strip_nones(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nones(v) for v in value]
    return value


def read_rows(source: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """Raw (location, object) rows of a sample source, before validation."""
    src = str(source)
    if src.startswith("hf:"):
        return _hf_rows(src[3:])
    path = _package_path(src[len("package:"):]) if src.startswith("package:") else Path(src).expanduser()
    if not path.exists():
        raise SampleError(f"sample source {src!r} does not exist (set benchmark.samples or LOCOEVAL_SAMPLES)")
    if path.is_dir():
        rows: list[tuple[str, dict[str, Any]]] = []
        for f in sorted(path.iterdir()):
            if f.name in NON_SAMPLE_NAMES or f.name.endswith(NON_SAMPLE_SUFFIXES):
                continue
            if f.suffix in (".json", ".jsonl"):
                rows.extend(_read_json_rows(f))
        return rows
    return _read_json_rows(path)


def load_samples(source: str | Path, *, ids: Sequence[str] | None = None, limit: int | None = None,
                 convert_official: bool = True) -> list[Sample]:
    """Load, convert (official layout) and validate samples; keep ``ids`` (in file order), then ``limit``."""
    from benchmarks.locoeval.convert import convert_record, is_official_record

    samples: list[Sample] = []
    seen: dict[str, str] = {}
    for where, row in read_rows(source):
        if not isinstance(row, dict):
            raise SampleError(f"{where}: expected a JSON object, got {type(row).__name__}")
        if convert_official and is_official_record(row):
            row = convert_record(row, where=where)
        sample = parse_sample(row, where=where)
        if sample.id in seen:
            raise SampleError(f"{where}: sample {sample.id!r}: id: duplicate id (first at {seen[sample.id]})")
        seen[sample.id] = where
        samples.append(sample)
    chosen = select_samples(samples, ids=ids, limit=limit, id_of=lambda s: s.id, error=SampleError)
    warn_shared_tasks(chosen, source=str(source))
    return chosen


def shared_tasks(samples: Iterable[Sample]) -> dict[tuple[str, str], list[str]]:
    """(project_path, task namespace) scored by more than one sample -> those sample ids."""
    owners: dict[tuple[str, str], list[str]] = {}
    for s in samples:
        for req in s.requirements:
            owners.setdefault((s.project_path, req.namespace), []).append(s.id)
    return {key: ids for key, ids in owners.items() if len(ids) > 1}


def warn_shared_tasks(samples: Iterable[Sample], *, source: str = "") -> dict[tuple[str, str], list[str]]:
    """Warn (:class:`SharedTaskWarning`) for every task scored twice; return them."""
    import warnings

    shared = shared_tasks(samples)
    for (_, ns), ids in sorted(shared.items()):
        warnings.warn(f"{source}: task {ns} is scored in {len(ids)} samples ({', '.join(ids)}); "
                      f"their results are not independent", SharedTaskWarning, stacklevel=3)
    return shared


def dump_samples(samples: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """Write validated sample objects as JSONL (atomic)."""
    import os
    import tempfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for obj in samples:
        parse_sample(obj, where=str(path))
        lines.append(json.dumps(obj, ensure_ascii=False, sort_keys=False))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + ("\n" if lines else ""))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; a data file is world-readable like any other
    os.replace(tmp, path)
    return path
