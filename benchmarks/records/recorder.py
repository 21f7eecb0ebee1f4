"""The sample recorder: a sample's rows written as they happen, one row schema for every benchmark.

The loop makes one :class:`SampleRecorder` per sample attempt (``RunEnv.recorder``) and writes
``memory.json`` through it when the sample ends; the benchmark reports each message, built context,
tool call and judged outcome the moment it exists. Rows are appended and flushed at once, so a crash
(even SIGKILL) mid-sample keeps the transcript so far (at most a truncated last line, which the
readers skip). Row fields (:class:`benchmarks.records.schema.Row`):

* ``conversation.jsonl`` - one message: ``{turn, role: user|assistant, content, phase?, ...labels}``;
* ``contexts.jsonl`` - one built context: ``{turn, phase?, req_id?, context: Context.to_dict(), ...}``;
* ``tool_calls.jsonl`` - one tool call of an assistant turn: ``{turn, index, ...the call's record}``.

A benchmark's own fields (LoCoEval ``kind`` / ``req_id``, CAB ``status`` / ``tool_steps`` ...) are
labelled extras of the same row.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.records import files as F
from benchmarks.records.files import append_jsonl, atomic_write_json
from benchmarks.records.schema import validate

USER, ASSISTANT = "user", "assistant"
#: JSON documents a benchmark may write whole (each replaced atomically as it grows)
DOCUMENTS = frozenset({F.TESTS, F.JUDGMENT})


class SampleRecorder:
    """Appends one sample's rows to its folder as they happen."""

    def __init__(self, sample_dir: str | Path) -> None:
        self.path = Path(sample_dir)
        self.path.mkdir(parents=True, exist_ok=True)

    def message(self, turn: int, role: str, content: str, **labels: Any) -> dict[str, Any]:
        """One conversation message (``role`` user or assistant), written now."""
        if role not in (USER, ASSISTANT):
            raise ValueError(f"conversation row role must be {USER!r} or {ASSISTANT!r}, got {role!r}")
        return self._append(F.CONVERSATION, {"turn": turn, "role": role, "content": content, **labels})

    def context(self, turn: int, context: Mapping[str, Any], **labels: Any) -> dict[str, Any]:
        """One context a method built (``Context.to_dict()``), written now."""
        return self._append(F.CONTEXTS, {"turn": turn, **labels, "context": dict(context)})

    def tool_call(self, turn: int, index: int, record: Mapping[str, Any]) -> dict[str, Any]:
        """One tool call of an assistant turn, written now."""
        row = {"turn": turn, "index": index, **record}
        append_jsonl(self.path / F.TOOL_CALLS, row)
        return row

    def document(self, name: str, obj: Any) -> None:
        """A whole JSON document of the sample (``tests.json``, ``judgment.json``), replaced atomically."""
        if name not in DOCUMENTS:
            raise ValueError(f"{name}: not a sample document ({', '.join(sorted(DOCUMENTS))})")
        atomic_write_json(self.path / name, obj)

    def memory(self, method: Any) -> None:
        """``memory.json``: the method's ``state()`` (a failing ``state()`` is recorded, never raised)."""
        try:
            state = method.state()
        except Exception as exc:  # noqa: BLE001 - a method's state() must not lose the sample's records
            state = {"error": f"state() failed: {type(exc).__name__}: {exc}"}
        atomic_write_json(self.path / F.MEMORY, state)

    def _append(self, name: str, row: dict[str, Any]) -> dict[str, Any]:
        validate("row", row, str(self.path / name))
        append_jsonl(self.path / name, row)
        return row
