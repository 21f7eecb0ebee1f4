"""Are two runs' records the same, timing aside? (reruns, busy machines, resumes; ``python -m scripts.compare_runs``)

A RUN_DIR is ``results/<benchmark>/<backbone>/<method>/<run_id>`` (or a directory above several,
e.g. ``results/demo/local``: every run directory below it is paired by its relative path). For each
sample present in either run, every record file (``result.json``, ``conversation.jsonl``,
``contexts.jsonl``, ``memory.json``, ``tests.json``, ``ledger.jsonl``) is compared as JSON after
dropping what measures time or bookkeeping rather than behaviour:

* keys :data:`VOLATILE_KEYS` anywhere (``seconds``, ``wall_seconds``, ``timing_ms``, ``attempt``,
  ``cached``, ``cached_calls``, llama.cpp's ``prefilled_tokens`` / ``restored_tokens``, ``retries``),
  and every key ending in ``_seconds`` (a duration, e.g. CAB's ``index_seconds``);
* in strings: pytest's duration ("1 failed in 0.04s"), the sandbox's temporary run directory
  (``/tmp/reconmem-run-<random>/``), object addresses (``<function f at 0x7f...>``) and UUIDs (a
  project's own test may print ``uuid4()``) -- they vary per process.

Everything else -- every reply, every context item and its score, every token count, every
verdict -- must be equal (:func:`compare_runs`; :func:`report_lines` prints one line per file that differs,
with the first differing JSON path and both values, and a summary).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks import records as rec

RECORD_FILES = (rec.RESULT, rec.CONVERSATION, rec.CONTEXTS, rec.TOOL_CALLS, rec.MEMORY, rec.TESTS, rec.JUDGMENT,
                rec.LEDGER)
VOLATILE_KEYS = frozenset({
    "seconds", "wall_seconds", "timing_ms", "attempt", "cached", "cached_calls", "started", "finished",
    "elapsed_seconds", "duration_seconds", "original_seconds",
    # how much work llama.cpp did, not what it answered: depends on its prompt cache's state (a resumed
    # run starts it empty) -- and retries depend on the network
    "prefilled_tokens", "restored_tokens", "retries",
})
_PYTEST_DURATION = re.compile(r"\bin \d+(?:\.\d+)?s\b")
_ADDRESS = re.compile(r"\b0x[0-9a-f]{6,16}\b")  # object reprs in pytest's assertion output
_RUN_DIR = re.compile(r"reconmem-run-[A-Za-z0-9_]+")  # the sandbox's per-run temporary directory
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")  # a project test's uuid4()


def is_timing_key(key: str) -> bool:
    """Whether a record key holds a time or bookkeeping (dropped before comparing)."""
    return key in VOLATILE_KEYS or key.endswith("_seconds")


def normalised(value: Any) -> Any:
    """``value`` without :data:`VOLATILE_KEYS` and ``*_seconds`` keys; durations, addresses and UUIDs in
    strings blanked."""
    if isinstance(value, dict):
        return {k: normalised(v) for k, v in value.items() if not is_timing_key(k)}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    if isinstance(value, str):
        value = _RUN_DIR.sub("reconmem-run-<tmp>", _PYTEST_DURATION.sub("in <t>s", value))
        return _UUID.sub("<uuid>", _ADDRESS.sub("0x<addr>", value))
    return value


def first_difference(a: Any, b: Any, path: str = "$") -> tuple[str, Any, Any] | None:
    """The first JSON path at which ``a`` and ``b`` differ, with both values; None when equal."""
    if type(a) is not type(b):
        return path, a, b
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}", a.get(key, "<absent>"), b.get(key, "<absent>")
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return (f"{path}.length", len(a), len(b)) if len(a) != len(b) else None
    return None if a == b else (path, a, b)


def _load(path: Path) -> Any:
    rows = {rec.CONVERSATION: rec.SampleDir.conversation, rec.CONTEXTS: rec.SampleDir.contexts}.get(path.name)
    if rows is not None:  # through the records reader: rows of older runs migrated to the current schema
        return rows(rec.SampleDir(path.parent))
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None
        return rows
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None


def run_dirs(root: Path) -> dict[str, Path]:
    """Relative path -> run directory for ``root`` itself or every run directory below it."""
    return {str(r.path.relative_to(root)): r.path for r in rec.RunDir.discover(root)} if root.exists() else {}


def compare_runs(a: Path, b: Path) -> dict[str, Any]:
    """Compare the records of two runs (or two trees of runs); see the module docstring."""
    runs_a, runs_b = run_dirs(a), run_dirs(b)
    if not runs_a:
        raise ValueError(f"{a}: no run directory (no samples/ below it)")
    if not runs_b:
        raise ValueError(f"{b}: no run directory (no samples/ below it)")
    files = same = 0
    differences: list[dict[str, Any]] = []
    for rel in sorted(set(runs_a) | set(runs_b)):
        if rel not in runs_a or rel not in runs_b:
            differences.append({"run": rel, "file": None, "path": "run", "a": rel in runs_a, "b": rel in runs_b})
            continue
        samples_a = {d.name: d for d in rec.RunDir(runs_a[rel]).sample_dirs()}
        samples_b = {d.name: d for d in rec.RunDir(runs_b[rel]).sample_dirs()}
        for sample in sorted(set(samples_a) | set(samples_b)):
            for name in RECORD_FILES:
                fa = rec.RunDir(runs_a[rel]).sample(sample).file(name)
                fb = rec.RunDir(runs_b[rel]).sample(sample).file(name)
                if not fa.exists() and not fb.exists():
                    continue
                files += 1
                if fa.exists() != fb.exists():
                    differences.append({"run": rel, "file": f"{sample}/{name}", "path": "file",
                                        "a": fa.exists(), "b": fb.exists()})
                    continue
                found = first_difference(normalised(_load(fa)), normalised(_load(fb)))
                if found is None:
                    same += 1
                else:
                    differences.append({"run": rel, "file": f"{sample}/{name}", "path": found[0],
                                        "a": found[1], "b": found[2]})
    return {"runs": len(set(runs_a) | set(runs_b)), "files": files, "identical": same, "differences": differences}


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def report_lines(report: dict[str, Any]) -> list[str]:
    """One line per differing file (first differing JSON path, both values), then the summary line."""
    lines = []
    for d in report["differences"]:
        where = d["run"] if d["file"] is None else f"{d['run']}/{d['file']}"
        lines.append(f"differs: {where} at {d['path']}: {_short(d['a'])} != {_short(d['b'])}")
    verdict = "identical" if not report["differences"] else f"{len(report['differences'])} differ"
    lines.append(f"compare_runs: {report['runs']} run(s), {report['files']} record files, {report['identical']} "
                 f"identical minus timing -> {verdict}")
    return lines
