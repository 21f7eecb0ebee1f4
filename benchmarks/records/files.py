"""File names of a run directory, atomic writers and the JSON readers every record goes through.

Writers are atomic (same-directory temp file, fsync, ``os.replace``); :func:`append_jsonl` is for rows
written as they happen inside an unfinished sample (a crash leaves at most a truncated last line,
which :func:`read_jsonl` skips).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# run directory
CONFIG = "config.yaml"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
SAMPLES = "samples"
SHARDS = "shards"
SCORES = "scores"  # <scorer name>.json per scorer re-run over the finished run (benchmarks.scoring)
# sample folder
RESULT = "result.json"
LEDGER = "ledger.jsonl"
CONVERSATION = "conversation.jsonl"
CONTEXTS = "contexts.jsonl"
ERROR = "error.txt"
MEMORY = "memory.json"
TESTS = "tests.json"
JUDGMENT = "judgment.json"
TOOL_CALLS = "tool_calls.jsonl"
COVERAGE = "coverage.json"


class RecordError(ValueError):
    """A malformed record; the message names the file (and line or field)."""


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


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Atomically write rows as JSON lines."""
    return atomic_write_text(path, "".join(json.dumps(dict(r), ensure_ascii=False, default=str) + "\n" for r in rows))


_append_lock = threading.Lock()


def append_jsonl(path: str | Path, row: Mapping[str, Any]) -> None:
    """Append one JSON line and flush it to the file (a row written as it happens)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(dict(row), ensure_ascii=False, default=str) + "\n"
    with _append_lock, open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()


def read_json(path: str | Path) -> Any:
    """Parse one JSON file; a malformed file raises RecordError naming it and the line."""
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RecordError(f"{p}:{exc.lineno}: invalid JSON ({exc.msg})") from None


def read_jsonl(path: str | Path, *, strict: bool = True) -> list[dict[str, Any]]:
    """JSON lines of ``path`` ([] when missing). A truncated LAST line (crash mid-append) is skipped;
    another bad line raises RecordError naming ``file:line`` (``strict=False`` skips it too)."""
    p = Path(path)
    if not p.is_file():
        return []
    lines = p.read_text(encoding="utf-8").splitlines()
    rows: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if i == len(lines) - 1 or not strict:
                continue
            raise RecordError(f"{p}:{i + 1}: invalid JSON line ({exc.msg})") from None
    return rows
