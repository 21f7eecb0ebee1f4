"""The code entity record shared by the repository index, localization and compression."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol

DIRECTORY = "directory"
FILE = "file"
TYPE = "type"
FUNCTION = "function"
VARIABLE = "variable"
KINDS = (DIRECTORY, FILE, TYPE, FUNCTION, VARIABLE)

# Separator between a name and its occurrence number when a scope holds the same name twice
# (overloads, property setters, conditional redefinitions): "f", "f#2", "f#3" in source order.
DUPLICATE_MARK = "#"


@dataclass
class CodeEntity:
    """One node of the repository tree.

    ``path`` is the full repository path: directories ``pkg/sub``, files ``pkg/mod.py``, code
    entities ``pkg/mod.py/Class/method``. Lines are 1-based inclusive (0 for directories);
    bytes are the half-open span in the file (decorators / annotations / modifiers included).
    """

    path: str
    kind: str  # "directory" | "file" | "type" | "function" | "variable"
    name: str
    parent: str | None
    language: str | None
    file: str | None
    start_line: int
    end_line: int
    signature: str
    start_byte: int = 0
    end_byte: int = 0
    start_col: int = 0  # byte column of the first line (indentation for summaries)
    subkind: str = ""  # grammar-level kind: "class", "method", "struct", "interface", "field", ...
    doc: str = ""  # first line of the docstring (Python) when present

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class EntitySource(Protocol):
    """What compression and embedding search read from a repository index.

    :class:`reconmem.platform.code.index.RepositoryIndex` implements it; ``compress`` and ``search``
    are typed against this protocol so they never import the index module (no import cycle).
    """

    entities: dict[str, CodeEntity]

    @property
    def content_hash(self) -> str: ...

    def get(self, path: str) -> CodeEntity | None: ...

    def children(self, path: str | None) -> list[str]: ...

    def source(self, path: str) -> str: ...

    def display_source(self, path: str) -> str: ...

    def file_text(self, relpath: str) -> str: ...

    def line_prefix(self, e: CodeEntity) -> str: ...
