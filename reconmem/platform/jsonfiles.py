"""Reading JSON files with errors that name the file and line: the one reader of JSON data files.

* :func:`json_lines` -- each non-blank line of a JSON-lines file, parsed, with where it stands and
  the parse error of a line that does not parse (the caller says whether that stops the read);
* :func:`iter_json_records` -- the objects of a benchmark data file (DevEval ``data.jsonl``, CAB
  issue files, LoCoEval samples): a ``.jsonl`` file holds one object per line; any other file holds
  a JSON list of objects, or one object (optionally wrapping its list under ``list_key``);
* :func:`read_json` -- one JSON document (a manifest, a sources file).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class JsonLine:
    """One non-blank line of a JSON-lines file: ``value`` parsed, or ``error`` when it does not parse."""

    where: str  # ``file:line``
    lineno: int
    value: Any = None
    error: json.JSONDecodeError | None = None

    def problem(self) -> str:
        """The parse error as ``file:line: invalid JSON (message at column n)``."""
        assert self.error is not None
        return f"{self.where}: invalid JSON ({self.error.msg} at column {self.error.colno})"


def json_lines(path: str | Path, text: str | None = None) -> Iterator[JsonLine]:
    """The non-blank lines of the JSON-lines file ``path`` (``text``: its content when already read)."""
    p = Path(path)
    if text is None:
        text = p.read_text(encoding="utf-8")
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield JsonLine(f"{p}:{lineno}", lineno, json.loads(line))
        except json.JSONDecodeError as exc:
            yield JsonLine(f"{p}:{lineno}", lineno, error=exc)


def read_json(path: str | Path, *, name: str = "file", option: str | None = None,
              error: type[Exception] = ValueError) -> Any:
    """The JSON document in ``path``. A missing file raises FileNotFoundError naming ``name`` (and the
    ``option`` that sets the path); malformed JSON raises ``error`` naming the file and line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{name} {p} not found" + (f" (option {option})" if option else "")) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{p}:{exc.lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None


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
    for line in json_lines(p, text):
        if line.error is not None:
            raise error(line.problem())
        yield line.where, _object(line.value, line.where, error)


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
