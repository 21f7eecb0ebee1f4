"""Judging a fork task: DevEval Pass@1 against the fork instead of the public library.

A task's reply is judged as :func:`benchmarks.deveval.evaluate.evaluate_completion` judges it (the
completion extracted from the reply, a trivial body failed without running, a body that does not
compile an ``error``, the task's DevEval node ids run by the run's executor on the pristine
snapshot), with the fork in place:

- the reply's body is spliced into the target function (the public body's sha256 is checked first:
  the snapshot is the one the fork was made on);
- every *other* target of the sample holds its fork body (:attr:`ForkRecord.fork_body`), so a task
  that calls another target sees the fork's behaviour;
- every test file any target of the sample rewrites is the fork's (the diffs applied together to
  the snapshot's file, :func:`benchmarks.locoeval.fork.diffs.apply_diffs`).

:func:`fork_edits` builds those edits, :class:`ForkJudge` is the benchmark's evaluator
(``(sample, requirement, reply) -> verdict``), and :func:`run_fork_body` runs a given body (the
validator's checks use it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.locoeval.fork.diffs import snapshot_text
from benchmarks.locoeval.fork.ship import (ForkDataError, ForkRecord, apply_diffs, fork_test_text, public_body_sha256,
                                           sha256_text)
from benchmarks.sandbox.base import ERROR, FAIL, ExecutionJob, ExecutionOutcome, Executor


def sample_forks(sample: Any, forks: Mapping[str, ForkRecord]) -> list[ForkRecord]:
    """The fork records of a sample's requirements, in requirement order (a missing one is an error)."""
    out = []
    for req in sample.requirements:
        if req.namespace not in forks:
            raise ForkDataError(f"sample {sample.id!r}: {req.req_id} {req.namespace}: no record in the fork data")
        out.append(forks[req.namespace])
    return out


def hidden_files(sample: Any, forks: Mapping[str, ForkRecord]) -> list[str]:
    """Every file the indexed snapshot of a fork sample leaves out: each target's ``hidden_files``."""
    return sorted({f for rec in sample_forks(sample, forks) for f in rec.hidden_files})


def fork_edits(records: Sequence[ForkRecord], target: ForkRecord | None, body: str | None,
               read: Callable[[str], str]) -> dict[str, str]:
    """The edits that put the fork of a sample in place, with ``body`` in ``target``'s function
    (``target`` None: every target holds its fork body; ``body`` None: the target as released).

    ``read``: snapshot-relative path -> the snapshot's text."""
    from benchmarks.deveval.splice import splice_body

    by_file: dict[str, list[ForkRecord]] = {}
    for rec in records:
        by_file.setdefault(rec.file, []).append(rec)
    edits: dict[str, str] = {}
    for path, recs in by_file.items():
        text = read(path)
        lines = text.splitlines()
        spans = sorted(recs, key=lambda r: r.body_start, reverse=True)
        for a, b in zip(spans, spans[1:]):
            if b.body_end >= a.body_start:
                raise ForkDataError(f"{path}: the bodies of {a.namespace} and {b.namespace} overlap")
        for rec in spans:
            if public_body_sha256("\n".join(lines[rec.body_start - 1:rec.body_end])) != rec.public_body_sha256:
                raise ForkDataError(f"{rec.namespace}: the snapshot's body at {path}:{rec.body_start}-{rec.body_end} "
                                    "is not the one the fork was made from")
            new = body if target is not None and rec.namespace == target.namespace else rec.fork_body
            if new is not None:
                text = splice_body(text, rec.body_start, rec.body_end, new, rec.indent)
        edits[path] = text
    diffs: dict[str, list[tuple[ForkRecord, str]]] = {}
    for rec in records:
        for path, t in rec.tests.items():
            diffs.setdefault(path, []).append((rec, t.diff))
    for path, pairs in sorted(diffs.items()):
        public = read(path)
        if len(pairs) == 1:
            rec = pairs[0][0]
            edits[path] = fork_test_text(rec.tests[path], public, where=f"{rec.namespace}: {path}")
            continue
        for rec, _ in pairs:
            if sha256_text(public) != rec.tests[path].public_sha256:
                raise ForkDataError(f"{rec.namespace}: {path}: the snapshot's file differs from the one the fork's "
                                    "tests were derived from")
        edits[path] = apply_diffs(public, [d for _, d in pairs], where=path)
    return edits


def run_fork_body(executor: Executor, root: Path, env: Any, records: Sequence[ForkRecord], target: ForkRecord,
                  body: str | None, *, timeout_s: float | None = None, label: str = "") -> ExecutionOutcome:
    """Run ``target``'s DevEval node ids with ``body`` in its function (None: as released) and the
    rest of the sample's fork in place. A trivial body fails and a body that does not compile is
    an ``error``, both without running (as DevEval Pass@1)."""
    from benchmarks.deveval.splice import check_syntax, is_trivial_body

    if body is not None and is_trivial_body(body):
        return ExecutionOutcome(FAIL, "trivial body (empty / pass / ...): counted as a failure without running",
                                0.0, detail="trivial_body")
    edits = fork_edits(records, target, body, lambda p: snapshot_text(root, p))
    err = check_syntax(edits[target.file], target.file)
    if err:
        return ExecutionOutcome(ERROR, err, 0.0, detail="syntax_error")
    job = ExecutionJob(project_root=root, env=env, test_ids=list(target.test_ids), edits=edits, timeout_s=timeout_s,
                       label=f"{target.namespace} [fork{' ' + label if label else ''}]")
    return executor.run(job)


class ForkJudge:
    """``(sample, requirement, reply) -> verdict`` (the keys of ``evaluate_completion``'s result)
    against the fork of the sample (``forks``: the shipped records by namespace). The executor
    (``executor_cfg``, the run's ``cfg.executor``) is built on first use, once for every thread.
    ``env_for``: sample -> test environment, for a project outside the manifest (tests); default:
    the manifest entry's."""

    def __init__(self, forks: Mapping[str, ForkRecord], *, sources_manifest: Any = None, executor_cfg: Any = None,
                 executor: Executor | None = None, timeout_s: float | None = None,
                 env_for: Callable[[Any], Any] | None = None) -> None:
        self.forks = dict(forks)
        self._manifest_src = sources_manifest
        self._manifest: Any = None
        self._executor_cfg = executor_cfg
        self._executor = executor
        self._timeout = timeout_s
        self._env_for = env_for
        self._lock = threading.Lock()

    def _setup(self) -> tuple[Any, Executor]:
        from benchmarks.deveval.tasks import Manifest, load_manifest
        from benchmarks.sandbox import build_executor

        with self._lock:
            if self._manifest is None:
                src = self._manifest_src
                self._manifest = src if isinstance(src, Manifest) else load_manifest(src)
            if self._executor is None:
                self._executor = build_executor(self._executor_cfg)
        return self._manifest, self._executor

    def __call__(self, sample: Any, req: Any, reply_text: str) -> dict[str, Any]:
        from benchmarks.deveval.evaluate import completion_or_verdict
        from benchmarks.deveval.providers import SnapshotError, get_snapshot
        from benchmarks.deveval.tasks import env_spec_for

        t0 = time.monotonic()
        manifest, executor = self._setup()
        records = sample_forks(sample, self.forks)
        target = self.forks[req.namespace]
        entry = manifest.for_repo_spec(sample.repo_spec) or manifest.project(sample.project_path)
        base, verdict = completion_or_verdict(req.namespace, reply_text, req.function_name, entry=entry,
                                              executor=executor, t0=t0, located_by="fork record")
        if verdict is not None:
            return verdict
        if entry is None and self._env_for is None:
            raise ForkDataError(f"sample {sample.id!r}: no manifest entry for {sample.project_path}")
        env = self._env_for(sample) if self._env_for is not None else env_spec_for(entry)
        try:
            root = Path(get_snapshot(sample.repo_spec, manifest=manifest))
        except SnapshotError as exc:
            return {**base, "outcome": ERROR, "passed": False, "log": str(exc), "seconds": time.monotonic() - t0,
                    "detail": "snapshot"}
        out = run_fork_body(executor, root, env, records, target, base["completion"],
                            timeout_s=self._timeout)
        return {**base, "outcome": out.outcome, "passed": out.passed, "log": out.log, "seconds": out.seconds,
                "returncode": out.returncode, "detail": out.detail}
