"""Docker validation for CAB issues that carry a ``dockerfile`` (none in Verified v3; 16 in strict).

Upstream protocol: the maintainer may answer with ``MODIFY_DOCKERFILE: ... END_DOCKERFILE`` and
``CREATE_FILE[path]: ... END_FILE`` blocks; the issue's Dockerfile (modified if asked) is built
with the repository snapshot (plus created files) as build context, and the outcome goes to the
judge, where a failed build makes the verdict INCORRECT.

The engine is reached through the docker executor's client (``benchmarks.sandbox.docker_exec``);
when no engine answers the issue is recorded as ``docker_unavailable`` and reported separately.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
import tempfile
import time
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

from benchmarks.cab.loader import CabIssue

_MODIFY_RE = re.compile(r"MODIFY_DOCKERFILE:\s*\n(.*?)END_DOCKERFILE", re.DOTALL)
_CREATE_RE = re.compile(r"CREATE_FILE\[([^\]\n]+)\]:\s*\n(.*?)END_FILE", re.DOTALL)
MAX_CONTEXT_BYTES = 2_000_000_000


class DockerUnavailableForIssue(RuntimeError):
    """No Docker engine answered, so a dockerfile issue cannot be validated."""


def docker_client_from_executor(executor_cfg: Any = None) -> Any:
    """The docker SDK client of the docker executor, or :class:`DockerUnavailableForIssue`."""
    try:
        from benchmarks.sandbox.docker_exec import DockerExecutor, DockerUnavailable
    except ImportError as exc:
        raise DockerUnavailableForIssue(f"docker executor not importable: {exc}") from exc
    kwargs: dict[str, Any] = {}
    if executor_cfg is not None and str(executor_cfg.get("name", "")) == "docker":
        kwargs = {k: executor_cfg.get(k) for k in ("timeout_s", "memory_mb", "cpus") if executor_cfg.get(k) is not None}
    try:
        return DockerExecutor(**kwargs).client
    except DockerUnavailable as exc:
        raise DockerUnavailableForIssue(str(exc)) from exc


def answer_edits(answer: str) -> tuple[str | None, dict[str, str]]:
    """``(new Dockerfile or None, {relative path: content})`` requested in the maintainer's answer."""
    m = _MODIFY_RE.findall(answer)
    dockerfile = m[-1].strip() + "\n" if m else None
    files: dict[str, str] = {}
    for name, content in _CREATE_RE.findall(answer):
        rel = name.strip().strip("'\"")
        parts = PurePosixPath(rel.replace("\\", "/")).parts
        if not parts or rel.startswith(("/", "~")) or ".." in parts:
            continue  # never write outside the build context
        files["/".join(parts)] = content
    return dockerfile, files


def _build_context(root: Path, dockerfile: str, files: dict[str, str], fh: Any) -> None:
    total = 0
    with tarfile.open(fileobj=fh, mode="w") as tf:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            for fn in filenames:
                p = Path(dirpath) / fn
                rel = p.relative_to(root).as_posix()
                if rel in files or rel == "Dockerfile.cab" or p.is_symlink():
                    continue
                total += p.stat().st_size
                if total > MAX_CONTEXT_BYTES:
                    raise RuntimeError("build context larger than 2 GB")
                tf.add(str(p), arcname=rel, recursive=False)
        for rel, text in {**files, "Dockerfile.cab": dockerfile}.items():
            data = text.encode()
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            info.mtime = int(time.time())
            tf.addfile(info, io.BytesIO(data))


_LAYER_RE = re.compile(r"---> ([0-9a-f]{12})\b")


def _remove_untagged_layers(client: Any, logs: list[str]) -> None:
    """Remove the step images a (failed) build left behind; never a tagged image (e.g. the base)."""
    for short in reversed(_LAYER_RE.findall("".join(logs))):
        try:
            image = client.images.get(short)
            if not image.tags:
                client.images.remove(image.id, force=False)
        except Exception:  # noqa: BLE001 - gone already, or a parent of another image
            pass


def docker_validate(client: Any, issue: CabIssue, root: Path, answer: str, *, timeout_s: float = 1800) -> dict[str, Any]:
    """Build the issue's (possibly modified) Dockerfile on the snapshot; ``{"success", "logs", ...}``."""
    new_dockerfile, files = answer_edits(answer)
    dockerfile = new_dockerfile or issue.dockerfile or ""
    tag = f"reconmem-cab-{issue.task_id.lower()}-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    logs: list[str] = []
    success = False
    error = None
    with tempfile.TemporaryFile() as fh:
        try:
            _build_context(root, dockerfile, files, fh)
            fh.seek(0)
            _image, stream = client.images.build(fileobj=fh, custom_context=True, dockerfile="Dockerfile.cab", tag=tag,
                                                 rm=True, forcerm=True, timeout=int(timeout_s))
            logs.extend(str(chunk.get("stream") or chunk.get("error") or "") for chunk in stream)
            success = True
        except Exception as exc:  # noqa: BLE001 - BuildError, APIError, timeouts: all mean "failed"
            error = f"{type(exc).__name__}: {exc}"
            build_log = getattr(exc, "build_log", None) or []
            logs.extend(str(c.get("stream") or c.get("error") or "") for c in build_log if isinstance(c, dict))
        finally:
            try:
                client.images.remove(tag, force=True)
            except Exception:  # noqa: BLE001 - the image may not exist
                pass
            _remove_untagged_layers(client, logs)
    text = "".join(logs)
    return {"success": success, "logs": text[-8000:], "error": error, "dockerfile_modified": new_dockerfile is not None,
            "created_files": sorted(files), "seconds": round(time.perf_counter() - started, 3)}
