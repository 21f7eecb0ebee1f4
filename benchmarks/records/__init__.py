"""The one record format of a run directory and its one reader (docs/RECORDS.md).

* :mod:`.status` - the :class:`Status` vocabulary and what each status means (final, scored, excluded);
* :mod:`.schema` - typed models of every record (result, manifest, summary, ledger event, rows),
  validated on read and write, and the manifest's :data:`SCHEMA_VERSION`;
* :mod:`.files` - file names, atomic writers, the JSON readers;
* :mod:`.rundir` - :class:`RunDir`, the only code that knows the layout and merges shards;
* :mod:`.recorder` - :class:`SampleRecorder`, a sample's rows written as they happen;
* :mod:`.migrate` - old manifests brought to the current schema (or refused in one line);
* :mod:`.derived` - usage, selection entries and the result of a sample that never finished.
"""

from benchmarks.records.derived import (
    attempt_events, is_scripted, manifest_selection, missing_result, selected_entry, usage_of,
)
from benchmarks.records.files import (
    CONFIG, CONTEXTS, CONVERSATION, COVERAGE, ERROR, JUDGMENT, LEDGER, MANIFEST, MEMORY, RESULT, SAMPLES, SCORES,
    SHARDS, SUMMARY, TESTS, TOOL_CALLS, RecordError, append_jsonl, atomic_write_json, atomic_write_text, read_json,
    read_jsonl, safe_name, write_jsonl,
)
from benchmarks.records.migrate import migrate_manifest
from benchmarks.records.recorder import ASSISTANT, USER, SampleRecorder
from benchmarks.records.rundir import RunDir, SampleDir, merge_shard_manifests, merge_shard_summaries
from benchmarks.records.schema import (
    SCHEMA_VERSION, Family, LedgerEvent, Manifest, Result, Row, SelectedSample, Summary, TaskOutcome, Usage, validate,
)
from benchmarks.records.status import Status, excluded_reason, sample_class

__all__ = [
    "CONFIG", "CONTEXTS", "CONVERSATION", "COVERAGE", "ERROR", "JUDGMENT", "LEDGER", "MANIFEST", "MEMORY", "RESULT",
    "SAMPLES", "SCHEMA_VERSION", "SCORES", "SHARDS", "SUMMARY", "TESTS", "TOOL_CALLS", "Family", "LedgerEvent", "Manifest",
    "RecordError", "Result", "Row", "RunDir", "SampleDir", "SampleRecorder", "ASSISTANT", "USER", "SelectedSample", "Status", "Summary", "TaskOutcome",
    "Usage", "append_jsonl", "atomic_write_json", "atomic_write_text", "attempt_events", "excluded_reason",
    "is_scripted", "manifest_selection", "merge_shard_manifests", "merge_shard_summaries", "migrate_manifest",
    "missing_result", "read_json", "read_jsonl", "safe_name", "sample_class", "selected_entry", "usage_of",
    "validate", "write_jsonl",
]
