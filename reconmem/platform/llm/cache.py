"""Response caches of temperature-0 calls and the cache key.

Two stores with one interface (``get(key)``, ``put(key, value, model=, purpose=)``, ``len()``):

- :class:`ResponseCache` (``cache.mode: sqlite``, the default): one SQLite file, WAL journal, one
  connection per thread. Safe for many threads and processes **on one machine**. Not for a
  network file system (NFS, Lustre): SQLite's locking and WAL shared memory are not reliable there.
- :class:`ShardedResponseCache` (``cache.mode: sharded``, for clusters): one small JSON file per key
  (``<dir>/llm_cache.d/<key[:2]>/<key>.json``), written to a private temporary file and renamed into
  place. A rename is atomic on POSIX and NFS, so concurrent jobs never share an open file, never
  take a lock, and a reader sees either nothing or a whole entry. Two jobs writing the same key
  write the same response (temperature 0) and the last rename wins. Reads also fall through to a
  ``llm_cache.sqlite`` in the same directory, opened read-only, so an existing single-machine cache
  keeps serving hits after switching modes.

The key (:func:`request_key`) is the same in both modes and must never change: old caches stay valid.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

CACHE_SCHEMA_VERSION = 1
CACHE_MODES = ("sqlite", "sharded")
SQLITE_NAME = "llm_cache.sqlite"
SHARD_DIR_NAME = "llm_cache.d"


def request_key(request: Mapping[str, Any]) -> str:
    """Cache key: sha256 over model, messages and every request parameter (canonical JSON)."""
    blob = json.dumps({"v": CACHE_SCHEMA_VERSION, **request}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class Cache(Protocol):
    """What the client needs from a response cache."""

    path: Path

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, value: Mapping[str, Any], *, model: str = "", purpose: str = "") -> None: ...

    def __len__(self) -> int: ...


def _enable_wal(conn: sqlite3.Connection, attempts: int = 50) -> None:
    """Switch to the WAL journal. Two processes opening a new cache at once can get SQLITE_BUSY
    here without the busy timeout being applied (the journal-mode change takes its own lock), so
    retry with a short backoff instead of failing the run."""
    for i in range(attempts):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            time.sleep(min(0.5, 0.01 * (i + 1)))
    conn.execute("PRAGMA journal_mode=WAL")


class ResponseCache:
    """SQLite store of temperature-0 responses, safe across threads (one connection per thread) and
    processes on one machine (WAL journal, busy timeout). ``path`` may be a file or a directory."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path).expanduser()
        if path.is_dir() or (not path.suffix and not path.exists()):
            path = path / SQLITE_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._local = threading.local()
        conn = self._conn()
        conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, "
                     "purpose TEXT, value TEXT NOT NULL, created REAL)")
        conn.commit()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(str(self.path), timeout=60.0)
            _enable_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except json.JSONDecodeError:
            log.warning("LLM cache %s: unreadable entry %s ignored", self.path, key[:12])
            return None

    def put(self, key: str, value: Mapping[str, Any], *, model: str = "", purpose: str = "") -> None:
        conn = self._conn()
        with conn:
            conn.execute("INSERT OR REPLACE INTO responses (key, model, purpose, value, created) VALUES (?, ?, ?, ?, ?)",
                         (key, model, purpose, json.dumps(value, ensure_ascii=False, default=str), time.time()))

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])


class ShardedResponseCache:
    """One JSON file per key under ``<dir>/llm_cache.d/``: safe for many jobs on shared storage.

    ``path`` is the cache directory (or a ``*.sqlite`` path inside it, as the SQLite mode takes).
    """

    def __init__(self, path: str | Path) -> None:
        path = Path(path).expanduser()
        directory = path.parent if path.suffix == ".sqlite" else path
        self.path = directory / SHARD_DIR_NAME
        self.path.mkdir(parents=True, exist_ok=True)
        self._legacy_path = directory / SQLITE_NAME
        self._legacy_local = threading.local()

    def _file(self, key: str) -> Path:
        return self.path / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            text = self._file(key).read_text(encoding="utf-8")
        except FileNotFoundError:
            return self._legacy_get(key)
        try:
            return json.loads(text)["value"]
        except (json.JSONDecodeError, KeyError, TypeError):
            log.warning("LLM cache %s: unreadable entry %s ignored", self.path, key[:12])
            return None

    def put(self, key: str, value: Mapping[str, Any], *, model: str = "", purpose: str = "") -> None:
        target = self._file(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        entry = {"key": key, "model": model, "purpose": purpose, "created": time.time(), "value": dict(value)}
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{key[:16]}.", suffix=f".{os.getpid()}.tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f, ensure_ascii=False, default=str)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.path.glob("??/*.json"))

    def _legacy_get(self, key: str) -> dict[str, Any] | None:
        if not self._legacy_path.exists():
            return None
        conn = getattr(self._legacy_local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(f"file:{self._legacy_path}?mode=ro", uri=True, timeout=60.0)
            except sqlite3.Error:
                return None
            self._legacy_local.conn = conn
        try:
            row = conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            return json.loads(row[0]) if row else None
        except (sqlite3.Error, json.JSONDecodeError):
            return None


def open_cache(path: str | Path, mode: str = "sqlite") -> ResponseCache | ShardedResponseCache:
    """The response cache at ``path`` in ``mode`` ('sqlite' for one machine, 'sharded' for shared storage)."""
    if mode == "sqlite":
        return ResponseCache(path)
    if mode == "sharded":
        return ShardedResponseCache(path)
    raise ValueError(f"cache.mode={mode!r}: expected one of {', '.join(CACHE_MODES)}")
