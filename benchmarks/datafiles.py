"""Reading benchmark data files of JSON records with errors that name the file and line.

One reader for every loader (DevEval ``data.jsonl``, CAB issue files, LoCoEval samples): a
``.jsonl`` file holds one object per line (blank lines skipped); any other file holds a JSON list
of objects, or one object (optionally wrapping its list under ``list_key``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def iter_json_records(path: str | Path, *, error: type[Exception] = ValueError,
                      list_key: str | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(location, record)``; location is ``file:line`` (JSON lines) or ``file[i]`` (JSON list).

    ``.jsonl`` files are read line by line; other files as one JSON document, falling back to JSON
    lines when the document does not parse but its first line does. Malformed JSON or a non-object
    record raises ``error`` naming the location.
    """
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    if p.suffix != ".jsonl":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if not _first_line_parses(text):
                raise error(f"{p}:{exc.lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        else:
            yield from _document_records(p, data, error, list_key)
            return
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{p}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        yield where, _object(row, where, error)


def _document_records(p: Path, data: Any, error: type[Exception],
                      list_key: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(data, dict):
        data = data[list_key] if list_key and isinstance(data.get(list_key), list) else [data]
    if not isinstance(data, list):
        raise error(f"{p}: expected a list of objects or an object, got {type(data).__name__}")
    for i, row in enumerate(data):
        yield f"{p}[{i}]", _object(row, f"{p}[{i}]", error)


def _first_line_parses(text: str) -> bool:
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    try:
        json.loads(first)
    except json.JSONDecodeError:
        return False
    return True


def _object(row: Any, where: str, error: type[Exception]) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise error(f"{where}: record is a {type(row).__name__}, expected an object")
    return row
