"""Per-task validation of a fork: the checks a fork task must pass before it can join the set.

:func:`validate_fork` runs, through the ordinary judging path (the task's DevEval node ids, the
local executor, the fork's test files in place of the originals):

- ``fork_passes``: the fork's reference passes the fork's tests, twice (deterministic);
- ``public_fails``: the public library's body fails them;
- ``blank_fails``: the blank body (``raise NotImplementedError``) fails them;
- ``constant_fails``: each body of :data:`CONSTANT_BODIES` that compiles as the target's body
  (``return None``, ``return True``, ...) fails them (tests a constant passes do not pin the fork);
- ``change_observed``: reverting any single fork change makes them fail (every change is observed);
- ``not_in_snapshot``: each change's fork fragment (for ``order``: the swapped statements) occurs in
  no file of the snapshot the method sees (own file blanked, the hidden test files removed); a fork
  string of four or more characters occurs nowhere there either;
- ``hidden``: every test file in which a test passes on the pristine tree and fails with the fork
  (the task's own test files and the other test files naming the function, original tests) is in
  the task's hidden files.

A failure is ``fail`` or ``error``; a timeout or memory kill is inconclusive and fails the check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from benchmarks.deveval.splice import BLANK_BODY, check_syntax, splice_body
from benchmarks.locoeval.fork.catalogue import ForkChange, apply_to_text
from benchmarks.locoeval.fork.tests_derive import RecordingExecutor, observing_files
from benchmarks.locoeval.verified.source import norm
from benchmarks.sandbox.base import ERROR, FAIL, PASS, ExecutionJob, ExecutionOutcome, Executor

CHECKS = ("fork_passes", "public_fails", "blank_fails", "constant_fails", "change_observed", "not_in_snapshot",
          "hidden")
CONSTANT_BODIES = ("return None", "return True", "return False", "return ''", "return 0", "return []", "return {}")


@dataclass
class ForkTask:
    """What validating one fork task needs (all paths relative to the snapshot root)."""

    namespace: str
    target_file: str
    test_ids: list[str]
    public_text: str                          # the target module as released
    body_start: int                           # the target body's lines (1-based, inclusive)
    body_end: int
    indent: int
    changes: list[ForkChange]
    test_edits: dict[str, str]                # the fork's test files: path -> text
    hidden_files: list[str]
    observer_candidates: list[str] = field(default_factory=list)

    def fork_text(self, changes: list[ForkChange] | None = None) -> str:
        return apply_to_text(self.public_text, self.changes if changes is None else changes)

    def body_text(self, body: str) -> str:
        """The target module as released with ``body`` as the target's body."""
        return splice_body(self.public_text, self.body_start, self.body_end, body, self.indent)

    def constant_texts(self) -> dict[str, str]:
        """:func:`constant_bodies` of the target: constant body -> the module with it."""
        return constant_bodies(self.public_text, self.body_start, self.body_end, self.indent, self.target_file)


def judging_ids(task_tests: Sequence[str], rewrites: Sequence[Any]) -> list[str]:
    """The tests that judge a fork: the task's DevEval node ids, then (sorted) the tests of its test
    files whose assertions the derivation rewrote and no task id covers -- the tests that observe the
    fork beyond DevEval's list. A parametrized case stands for its whole test (``file::test``).
    ``rewrites``: ``Rewrite`` objects or their records."""
    out = list(task_tests)
    extra = set()
    for r in rewrites:
        test = r.get("test", "") if isinstance(r, dict) else r.test
        test = test.split("[", 1)[0]
        if test and not any(test == t or test.startswith(t + "::") for t in out):
            extra.add(test)
    return out + sorted(extra)


def constant_bodies(module_text: str, body_start: int, body_end: int, indent: int, filename: str) -> dict[str, str]:
    """Each of :data:`CONSTANT_BODIES` that compiles as the body at ``body_start..body_end`` of
    ``module_text``, with the module text it gives (the body replaces the whole body, so each
    compiles where the module around it does)."""
    out = {}
    for body in CONSTANT_BODIES:
        text = splice_body(module_text, body_start, body_end, body, indent)
        if check_syntax(text, filename) is None:
            out[body] = text
    return out


def constant_problems(outcomes: dict[str, str]) -> list[str]:
    """The ``constant_fails`` check over ``{constant body: outcome}``: each body that passes the
    fork's tests or whose run was inconclusive (a timeout or memory kill)."""
    return [f"the constant body `{body}` " + ("passes the fork's tests" if out == PASS else f"is inconclusive ({out})")
            for body, out in outcomes.items() if out not in (FAIL, ERROR)]


def judge(executor: Executor, root: Path, env: Any, task: ForkTask, module_text: str | None,
          *, timeout_s: float | None = None, label: str = "") -> ExecutionOutcome:
    """The task's node ids with ``module_text`` as the target file (None: as released) and the fork's tests."""
    edits = dict(task.test_edits)
    if module_text is not None:
        edits[task.target_file] = module_text
    return executor.run(ExecutionJob(project_root=root, env=env, test_ids=list(task.test_ids), edits=edits,
                                     timeout_s=timeout_s, label=f"{task.namespace} [{label}]"))


def _fails(out: ExecutionOutcome) -> bool:
    return out.outcome in (FAIL, ERROR)


def visible_finder(files: dict[str, str], rel: str, qual: list[str], hidden: list[str],
                   text: Any = None) -> Callable[[str], list[str]]:
    """``fragment -> files`` over what a method sees of a snapshot (``files``: path -> text):
    ``rel`` blanked without its docstring, ``hidden`` gone. ``text``: a prebuilt ``SnapshotText``."""
    from benchmarks.locoeval.repo import blank_source
    from benchmarks.locoeval.verified.validity import SnapshotText, indexed

    snapshot = text if text is not None else SnapshotText(files)
    visible_own = norm(blank_source(files[rel], [qual], filename=rel, strip_docstrings=True))

    def find(fragment: str) -> list[str]:
        hits = snapshot.files_with(fragment, exclude=[rel, *hidden], limit=1)
        return hits or ([rel] if indexed(rel) and norm(fragment) in visible_own else [])
    return find


def fragment_hits(change: ForkChange, in_snapshot: Callable[[str], list[str]]) -> list[str]:
    """Files of the visible snapshot holding the change's fork fragment (or, for strings of four or
    more characters, its fork value)."""
    probe = change.fork_text if change.kind == "order" else change.fork_fragment
    hits = list(in_snapshot(probe))
    if change.kind in ("separator", "format"):
        value = change.fork_text.strip("rRbBuU")[1:-1]
        if len(value) >= 4:
            hits += in_snapshot(value)
    return sorted(set(hits))


def validate_fork(task: ForkTask, *, root: Path, env: Any, executor: Executor, recorder: RecordingExecutor,
                  in_snapshot: Callable[[str], list[str]], timeout_s: float | None = None) -> dict[str, Any]:
    """``{"ok", "checks": {name: {"ok", "detail"}}, "runs"}`` for one fork task."""
    checks: dict[str, dict[str, Any]] = {}
    runs = 0

    def run(text: str | None, label: str) -> ExecutionOutcome:
        nonlocal runs
        runs += 1
        return judge(executor, root, env, task, text, timeout_s=timeout_s, label=label)

    fork = task.fork_text()
    outs = [run(fork, "fork 1"), run(fork, "fork 2")]
    checks["fork_passes"] = {"ok": all(o.outcome == PASS for o in outs),
                             "detail": ", ".join(o.outcome for o in outs)}
    pub = run(None, "public")
    checks["public_fails"] = {"ok": _fails(pub), "detail": pub.outcome}
    blank = run(task.body_text(BLANK_BODY), "blank")
    checks["blank_fails"] = {"ok": _fails(blank), "detail": blank.outcome}
    constants = {body: run(text, body).outcome for body, text in task.constant_texts().items()}
    bad = constant_problems(constants)
    fine = f"{len(constants)} constant bodies fail" if constants else "no constant body compiles"
    checks["constant_fails"] = {"ok": not bad, "detail": "; ".join(bad) or fine}
    reverted = {}
    for ch in task.changes:
        others = [c for c in task.changes if c is not ch]
        if not others:
            reverted[ch.key] = pub.outcome          # reverting the only change is the public body
            continue
        reverted[ch.key] = run(task.fork_text(others), f"revert {ch.key}").outcome
    checks["change_observed"] = {"ok": all(v in (FAIL, ERROR) for v in reverted.values()), "detail": reverted}
    hits = {ch.key: fragment_hits(ch, in_snapshot) for ch in task.changes}
    checks["not_in_snapshot"] = {"ok": not any(hits.values()), "detail": {k: v for k, v in hits.items() if v}}
    observers, n = observing_files(executor=recorder, root=root, env=env, target_file=task.target_file,
                                   fork_text=fork, candidates=task.observer_candidates, timeout_s=timeout_s)
    runs += n
    missing = sorted(set(observers) - set(task.hidden_files))
    checks["hidden"] = {"ok": not missing, "detail": {"observing": observers, "not_hidden": missing}}
    return {"ok": all(c["ok"] for c in checks.values()), "checks": checks, "runs": runs}

