"""RepositoryIndex: the tree of directories, files and code entities of one repository.

Build walks the repository (skipping VCS folders, hidden folders, ``node_modules``, virtualenvs,
vendored trees, binary / minified / oversized files), parses each supported source file with
tree-sitter and extracts entities (see ``reconmem.platform.code.extract``). Paths are repository-relative
with ``/``: directories ``pkg/sub``, files ``pkg/mod.py``, entities ``pkg/mod.py/Class/method``.
Top-level directories and files have ``parent=None``; only directories that (transitively) hold an
indexed file are entities.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from reconmem.platform.code.entities import DIRECTORY, FILE, FUNCTION, CodeEntity
from reconmem.platform.code.languages import get_parser, language_for, normalise_languages

log = logging.getLogger(__name__)

INDEX_VERSION = "1"  # bump when extraction changes (part of the content hash -> entity-vector cache key)

SKIP_DIRS = frozenset(
    {
        "node_modules", "bower_components", "jspm_packages", "__pycache__", "site-packages", "dist-packages",
        "venv", "virtualenv", "vendor", "vendored", "_vendor", "third_party", "thirdparty", "third-party",
        "__MACOSX", "CVS",
    }
)
BINARY_SNIFF_BYTES = 8192
MINIFIED_LINE_CHARS = 2000  # a file whose average line is this long is generated/minified


def _dedent_after_first_line(text: str, prefix: str) -> str:
    """``text`` (whose first line starts after ``prefix``) with ``prefix`` removed from its other lines.

    A line without ``prefix`` keeps its text (empty when blank).
    """
    if not prefix:
        return text
    lines = text.split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        if line.startswith(prefix):
            out.append(line[len(prefix):])
        else:
            out.append(line if line.strip() else "")
    return "\n".join(out)


def _is_virtualenv(path: Path) -> bool:
    return (path / "pyvenv.cfg").exists() or (path / "conda-meta").is_dir()


def _looks_generated(data: bytes) -> bool:
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return True
    lines = data.count(b"\n") + 1
    return len(data) / lines > MINIFIED_LINE_CHARS


def _extractor_fingerprint() -> str:
    """sha256 of the modules whose code decides the extracted entities (cache key part)."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        h = hashlib.sha256(f"reconmem-index-v{INDEX_VERSION}\0".encode())
        here = Path(__file__).resolve().parent
        for name in ("index.py", "extract.py", "entities.py", "languages.py"):
            h.update(name.encode() + b"\0" + (here / name).read_bytes())
        try:
            from importlib.metadata import version

            h.update(f"tree-sitter-language-pack=={version('tree-sitter-language-pack')}".encode())
        except Exception:  # noqa: BLE001 - unknown version: the source hash still guards the key
            pass
        _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


_FINGERPRINT: str | None = None


def _snapshot_cache_file(cache_dir: str | Path | None | bool, files: list[tuple[str, str, bytes]], wanted: Any,
                         max_file_bytes: int) -> Path | None:
    if cache_dir is False:
        return None
    if cache_dir is None or cache_dir is True:
        from reconmem.platform.downloads import cache_root

        cache_dir = cache_root() / "index"
    h = hashlib.sha256(f"{_extractor_fingerprint()}\0{sorted(wanted)}\0{max_file_bytes}\0".encode())
    for rel, lang, data in files:
        h.update(f"{rel}\0{lang}\0".encode() + hashlib.sha256(data).digest())
    return Path(cache_dir).expanduser() / f"{h.hexdigest()[:40]}.json"


def _load_snapshot(path: Path) -> tuple[dict[str, CodeEntity], dict[str, str]] | None:
    """Entities and errors of a cached snapshot (None when absent or unreadable)."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        fields = data["fields"]
        entities = {row[0]: CodeEntity(**dict(zip(fields, row))) for row in data["entities"]}
        return entities, dict(data["errors"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _save_snapshot(path: Path, entities: dict[str, CodeEntity], errors: dict[str, str]) -> None:
    """Write the parsed snapshot atomically (a failure only costs the next build a re-parse)."""
    import dataclasses
    import json
    import tempfile

    fields = [f.name for f in dataclasses.fields(CodeEntity)]
    payload = {"fields": fields, "errors": errors,
               "entities": [[getattr(e, f) for f in fields] for e in entities.values()]}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".json.tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("repository index: snapshot cache not written (%s): %s", path, exc)
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


class RepositoryIndex:
    """Entities of one repository, with localization, compression and embedding search."""

    def __init__(self, root: Path, entities: dict[str, CodeEntity], file_bytes: dict[str, bytes], *, skipped: dict[str, str] | None = None, errors: dict[str, str] | None = None, build_seconds: float = 0.0):
        self.root = root
        self.entities = entities
        self._file_bytes = file_bytes
        self._children: dict[str | None, list[str]] = {}
        for path, e in entities.items():
            self._children.setdefault(e.parent, []).append(path)
        order = {p: i for i, p in enumerate(entities)}
        for lst in self._children.values():
            lst.sort(key=lambda p: order[p])
        self.skipped = skipped or {}  # relpath -> reason
        self.errors = errors or {}  # relpath -> parse problem (file still indexed as far as possible)
        self.build_seconds = build_seconds
        self._localizer: Any = None
        self._lock = threading.Lock()
        self._content_hash: str | None = None
        self.from_cache = False  # True when build() loaded the parsed entities from the snapshot cache
        self.build_timings: dict[str, float] = {}  # seconds by build phase

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, root: str | Path, *, languages: Iterable[str] | str | None = None, max_file_bytes: int = 1_000_000,
              cache_dir: str | Path | None | bool = None) -> "RepositoryIndex":
        """Parse every supported source file under ``root`` and index its entities.

        Parsed entities are cached per repository snapshot in ``cache_dir`` (default
        ``$RECONMEM_CACHE/index``; ``False`` disables it): the key is the sha256 of every candidate
        file's path and bytes, the options and the extractor's own source, so a second build of the
        same snapshot (another sample, another process) only walks, reads and hashes the files.
        """
        started = time.perf_counter()
        root_path = Path(root).expanduser()
        if not root_path.is_dir():
            raise FileNotFoundError(f"RepositoryIndex.build: repository root is not a directory: {root_path}")
        root_path = root_path.resolve()
        wanted = normalise_languages(languages)
        skipped: dict[str, str] = {}
        files = cls._read_files(root_path, wanted, max_file_bytes, skipped)
        read_s = time.perf_counter() - started
        parse_started = time.perf_counter()
        cache_file = _snapshot_cache_file(cache_dir, files, wanted, max_file_bytes)
        cached = _load_snapshot(cache_file) if cache_file is not None else None
        if cached is not None:
            entities, errors = cached
        else:
            entities, errors = {}, {}
            for rel, lang, data in files:
                cls._add_directories(rel, entities)
                parent = rel.rsplit("/", 1)[0] if "/" in rel else None
                n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
                entities[rel] = CodeEntity(
                    path=rel, kind=FILE, name=rel.rsplit("/", 1)[-1], parent=parent, language=lang, file=rel,
                    start_line=1, end_line=max(1, n_lines), signature=rel, start_byte=0, end_byte=len(data),
                    subkind="file",
                )
                for e in cls._parse_file(rel, data, lang, errors):
                    entities[e.path] = e
        parse_s = time.perf_counter() - parse_started
        if cached is None and cache_file is not None:
            _save_snapshot(cache_file, entities, errors)
        file_bytes = {rel: data for rel, _, data in files}
        index = cls(root_path, entities, file_bytes, skipped=skipped, errors=errors,
                    build_seconds=time.perf_counter() - started)
        index.from_cache = cached is not None
        index.build_timings = {"walk_read_hash": read_s, "parse_extract" if cached is None else "load_snapshot": parse_s,
                               "total": index.build_seconds}
        return index

    @staticmethod
    def _read_files(root_path: Path, wanted: Any, max_file_bytes: int, skipped: dict[str, str]) -> list[tuple[str, str, bytes]]:
        """(relpath, language, bytes) of every indexable file, sorted; records skipped files in ``skipped``."""
        files: list[tuple[str, str]] = []  # (relpath, language)
        for dirpath, dirnames, filenames in os.walk(root_path, followlinks=False):
            current = Path(dirpath)
            keep = []
            for d in sorted(dirnames):
                full = current / d
                if d.startswith(".") or d in SKIP_DIRS or d.endswith(".egg-info") or full.is_symlink() or _is_virtualenv(full):
                    continue
                keep.append(d)
            dirnames[:] = keep
            for fname in sorted(filenames):
                full = current / fname
                rel = full.relative_to(root_path).as_posix()
                lang = language_for(fname)
                if lang is None or lang not in wanted or full.is_symlink():
                    continue
                files.append((rel, lang))
        files.sort()
        out: list[tuple[str, str, bytes]] = []
        for rel, lang in files:
            full = root_path / rel
            try:
                size = full.stat().st_size
                if size > max_file_bytes:
                    skipped[rel] = f"larger than max_file_bytes={max_file_bytes} ({size} bytes)"
                    continue
                data = full.read_bytes()
            except OSError as exc:
                skipped[rel] = f"unreadable: {exc}"
                continue
            if _looks_generated(data):
                skipped[rel] = "binary or minified"
                continue
            out.append((rel, lang, data))
        return out

    @staticmethod
    def _add_directories(rel: str, entities: dict[str, CodeEntity]) -> None:
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in entities:
                entities[d] = CodeEntity(
                    path=d, kind=DIRECTORY, name=parts[i - 1], parent="/".join(parts[: i - 1]) or None,
                    language=None, file=None, start_line=0, end_line=0, signature=d + "/", subkind="directory",
                )

    @staticmethod
    def _parse_file(rel: str, data: bytes, lang: str, errors: dict[str, str]) -> list[CodeEntity]:
        from reconmem.platform.code.extract import extract_entities

        try:
            tree = get_parser(lang).parse(data)
            root = tree.root_node
            if root.has_error:
                errors[rel] = "syntax errors (tree-sitter recovered; entities extracted where possible)"
            return extract_entities(rel, data, lang, root)
        except Exception as exc:  # a grammar/extractor problem must not stop indexing
            log.warning("repository index: cannot parse %s: %s", rel, exc)
            errors[rel] = f"{type(exc).__name__}: {exc}"
            return []

    # ------------------------------------------------------------------ structure
    def __len__(self) -> int:
        return len(self.entities)

    def __contains__(self, path: object) -> bool:
        return path in self.entities

    def get(self, path: str) -> CodeEntity | None:
        """The entity at exactly ``path`` (no normalisation; see :meth:`localize`)."""
        return self.entities.get(path)

    def parent(self, path: str) -> str | None:
        """Path of the parent entity (None for top-level entries and unknown paths)."""
        e = self.entities.get(path)
        return e.parent if e else None

    def children(self, path: str | None) -> list[str]:
        """Direct children in source / listing order (``None`` = the top level)."""
        return list(self._children.get(path, ()))

    def descendants(self, path: str) -> list[str]:
        """All entities below ``path`` (depth-first, source order)."""
        out: list[str] = []
        stack = list(reversed(self.children(path)))
        while stack:
            p = stack.pop()
            out.append(p)
            stack.extend(reversed(self.children(p)))
        return out

    def counts(self) -> dict[str, int]:
        """Number of entities by kind."""
        out: dict[str, int] = {}
        for e in self.entities.values():
            out[e.kind] = out.get(e.kind, 0) + 1
        return out

    def files(self) -> list[str]:
        return [p for p, e in self.entities.items() if e.kind == FILE]

    def file_text(self, relpath: str) -> str:
        data = self._file_bytes.get(relpath)
        if data is None:
            raise KeyError(f"not an indexed file: {relpath!r}")
        return data.decode("utf-8", "replace")

    def source(self, path: str) -> str:
        """Exact source text of an entity (whole file for files; a listing for directories)."""
        e = self.entities.get(path)
        if e is None:
            raise KeyError(f"unknown entity path: {path!r}")
        if e.kind == DIRECTORY:
            return "\n".join(self.children(path))
        data = self._file_bytes[e.file or path]
        if e.kind == FILE:
            return data.decode("utf-8", "replace")
        return data[e.start_byte : e.end_byte].decode("utf-8", "replace")

    def display_source(self, path: str) -> str:
        """An entity's code as shown to a model, its first line at column 0.

        :meth:`source` starts at the entity's first byte, so a method's first line (its decorator
        or ``def``) has lost the indentation its other lines keep. Here the first line's
        indentation (:meth:`line_prefix`) is removed from every line that has it, which puts the
        entity at column 0 as consistently indented code; lines indented less than the first
        (inside strings or brackets) keep their text, blank ones become empty. Files and
        directories read as :meth:`source`. Retrieval (embeddings, BM25) reads :meth:`source`.
        """
        text = self.source(path)
        e = self.entities[path]
        if e.kind in (DIRECTORY, FILE):
            return text
        return _dedent_after_first_line(text, self.line_prefix(e))

    def line_prefix(self, e: CodeEntity) -> str:
        """The whitespace before an entity on its first line ('' when code precedes it)."""
        if e.file is None or e.kind in (DIRECTORY, FILE):
            return ""
        data = self._file_bytes[e.file]
        line_start = data.rfind(b"\n", 0, e.start_byte) + 1
        prefix = data[line_start : e.start_byte].decode("utf-8", "replace")
        return prefix if not prefix.strip() else ""

    # ------------------------------------------------------------------ localization / compression
    def localize(self, anchor: str) -> str | None:
        """Paper §2.2.1 (Eq. 5-7): exact lookup, else best same-name non-directory entity, else None."""
        if self._localizer is None:
            from reconmem.platform.code.localize import Localizer

            with self._lock:
                if self._localizer is None:
                    self._localizer = Localizer(self.entities)
        return self._localizer.localize(anchor)

    def compress(self, path: str, *, hcc: bool = True) -> str:
        """Context text for one entity: HCC summary (Fig. 4) or, with ``hcc=False``, full source."""
        from reconmem.platform.code.compress import compress_entity

        return compress_entity(self, path, hcc=hcc)

    # ------------------------------------------------------------------ embeddings
    @property
    def content_hash(self) -> str:
        """sha256 over the indexed files' paths and bytes (+ index version)."""
        if self._content_hash is None:
            h = hashlib.sha256(f"reconmem-index-v{INDEX_VERSION}\0".encode())
            for rel in sorted(self._file_bytes):
                h.update(rel.encode() + b"\0" + hashlib.sha256(self._file_bytes[rel]).digest())
            self._content_hash = h.hexdigest()
        return self._content_hash

    def entity_text(self, path: str, max_code_chars: int = 512) -> str:
        """Text embedded for an entity: path, signature and a truncated code snippet."""
        from reconmem.platform.code.search import entity_text

        return entity_text(self, path, max_code_chars=max_code_chars)

    def entity_vectors(self, embedder: Any, kinds: Sequence[str] = (FUNCTION,)) -> tuple[list[str], Any]:
        """(paths, matrix) of entity embeddings for ``kinds``; cached per repository content + embedder."""
        from reconmem.platform.code.search import entity_vectors

        return entity_vectors(self, embedder, kinds)

    def search(self, query: str, embedder: Any, *, k: int, kinds: Sequence[str] = (FUNCTION,),
               retriever: Any = None) -> list[tuple[str, float]]:
        """Top-``k`` entities of ``kinds`` for ``query`` by ``retriever`` (a
        :class:`~reconmem.platform.code.retrieval.RetrieverSpec` or its name; None: dense cosine)."""
        from reconmem.platform.code.retrieval import search

        return search(self, query, embedder, k=k, kinds=kinds, retriever=retriever)
