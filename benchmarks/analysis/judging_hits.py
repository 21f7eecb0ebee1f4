"""Task-phase contexts that contained a judging test, per LoCoEval run (``python -m scripts.judging_hits``).

A RUN_DIR is ``results/<benchmark>/<backbone>/<method>/<run_id>``. For every task-phase row of
every ``samples/<id>/contexts.jsonl``, the code items of the context (``kind == "code"``, id = the
repository path) are compared with the test entities that judge the sample's tasks (DevEval
``tests``: ``path::name`` -> ``path/name``). A context *hits* when one of its code items is a judging
test function, a class or file that contains one, or an entity inside one. ``own`` counts hits on
the tests of the very task being generated (the row's ``req_id``), ``any`` hits on the tests of any
task of the sample.

The samples come from the run's ``config.yaml`` (``benchmark.samples``) unless another sample
file is given. ``hide_task_tests`` is read from the manifest (older runs: the config).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping


def judging_entities(sample: Any) -> dict[str, set[str]]:
    """req_id -> repository paths of the test functions that judge that task."""
    out: dict[str, set[str]] = {}
    for req in sample.requirements:
        out[req.req_id] = {t.replace("::", "/") for t in req.tests}
    return out


def _touches(item_path: str, test_path: str) -> bool:
    """The item is the test, contains it (file / class), or lies inside it."""
    return item_path == test_path or test_path.startswith(item_path + "/") or item_path.startswith(test_path + "/")


def context_hits(context: Mapping[str, Any], tests: Iterable[str]) -> list[str]:
    """The code item ids of ``context`` that touch one of ``tests``."""
    tests = list(tests)
    hits = []
    for item in context.get("items") or []:
        if item.get("kind") != "code":
            continue
        path = str((item.get("meta") or {}).get("path") or item.get("id") or "")
        if path and any(_touches(path, t) for t in tests):
            hits.append(path)
    return hits


def run_config(run_dir: str | Path) -> dict[str, Any]:
    """The run's ``config.yaml`` as a dict ({} when absent), read through :class:`benchmarks.records.RunDir`."""
    from benchmarks.records import RunDir

    return RunDir(run_dir).config()


def count_run(run_dir: str | Path, samples: Mapping[str, Any]) -> dict[str, Any]:
    """Judging-test hits of one run directory (``samples``: sample id -> Sample)."""
    from benchmarks.records import RunDir

    run = Path(run_dir)
    manifest = RunDir(run).manifest_file()
    config = run_config(run)
    hide = manifest.get("hide_task_tests")
    if hide is None:
        hide = (config.get("benchmark") or {}).get("hide_task_tests")
    row: dict[str, Any] = {
        "run_dir": str(run), "method": manifest.get("method") or (config.get("method") or {}).get("name") or run.parent.name,
        "hide_task_tests": hide, "task_contexts": 0, "contexts_hit_any": 0, "contexts_hit_own": 0, "hit_items": 0,
        "examples": [],
    }
    for sample_dir in RunDir(run).sample_dirs():
        sample = samples.get(sample_dir.name)
        if sample is None:
            continue
        tests_by_req = judging_entities(sample)
        every_test = set().union(*tests_by_req.values()) if tests_by_req else set()
        for ctx_row in sample_dir.contexts():
            if ctx_row.get("phase") != "task":
                continue
            row["task_contexts"] += 1
            context = ctx_row.get("context") or {}
            any_hits = context_hits(context, every_test)
            own_hits = context_hits(context, tests_by_req.get(str(ctx_row.get("req_id")), ()))
            row["hit_items"] += len(any_hits)
            row["contexts_hit_any"] += bool(any_hits)
            row["contexts_hit_own"] += bool(own_hits)
            if own_hits and len(row["examples"]) < 3:
                row["examples"].append(f"{sample_dir.name}/{ctx_row.get('req_id')}: {own_hits[0]}")
    return row


def load_samples_by_id(spec: str) -> dict[str, Any]:
    """Sample id -> Sample of a sample file (a path resolved as the runs resolve it, or ``hf:...``)."""
    from benchmarks.harness import resolve_data_path
    from benchmarks.locoeval.loader import load_samples

    source = spec if spec.startswith("hf:") else str(resolve_data_path(spec))
    return {s.id: s for s in load_samples(source)}


def table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The printed table of :func:`count_run` rows (with up to three examples each)."""
    lines = [f"{'method':<16} {'hide_task_tests':<16} {'task ctx':>8} {'hit any':>8} {'hit own':>8} {'items':>6}  run"]
    for r in rows:
        lines.append(f"{r['method']:<16} {str(r['hide_task_tests']):<16} {r['task_contexts']:>8} "
                     f"{r['contexts_hit_any']:>8} {r['contexts_hit_own']:>8} {r['hit_items']:>6}  {r['run_dir']}")
        lines += [f"{'':<16}   e.g. {example}" for example in r["examples"]]
    return lines
