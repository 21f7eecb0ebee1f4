"""Pass@1 for DevEval tasks: splice a body into a pristine copy and run the task's tests.

Entry points: :func:`evaluate_completion` (a model reply for one task; used by the LoCoEval
runner; :func:`completion_or_verdict` its steps before a run, shared with the fork judge), :func:`run_body` (a given body text), :func:`oracle_task` (reference must pass, blank must
fail), :func:`pass_at_k`, and :func:`needs_network` / :func:`excluded_under` (tasks whose tests
need the network at test time: the manifest field ``needs_network``; they cannot be judged in a
container without network and are excluded there, and reported, never counted).
"""

from __future__ import annotations

import time
from math import comb
from pathlib import Path

from benchmarks.sandbox.base import ERROR, FAIL, EnvSpec, ExecutionJob, ExecutionOutcome, Executor

from .providers import LocateError, SnapshotError, get_snapshot, locate_function, task_file
from .splice import BLANK_BODY, ExtractionError, check_syntax, extract_completion, is_trivial_body, splice_body
from .tasks import DevEvalTask, Manifest, ProjectEntry, TaskLocation, env_spec_for, get_task, load_manifest


def _manifest(manifest) -> Manifest:
    if manifest is None:
        return load_manifest()
    if isinstance(manifest, Manifest):
        return manifest
    return load_manifest(manifest)


NEEDS_NETWORK_FIELD = "needs_network"


def needs_network(entry: ProjectEntry | None) -> frozenset[str]:
    """Namespaces of ``entry`` whose tests need the network (manifest field ``needs_network``).

    Set by ``scripts.compare_oracle --record-needs-network`` when a task passes the local oracle
    and fails in Docker only with a network error. A malformed field is a clear error.
    """
    if entry is None:
        return frozenset()
    value = entry.raw.get(NEEDS_NETWORK_FIELD, [])
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ValueError(f"manifest entry {entry.project_path}: field {NEEDS_NETWORK_FIELD!r} must be a list of "
                         f"task namespaces, got {value!r}")
    known = {t.namespace for t in entry.tasks}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(f"manifest entry {entry.project_path}: field {NEEDS_NETWORK_FIELD!r} names unknown "
                         f"task(s) {unknown[:3]}")
    return frozenset(value)


def excluded_under(executor: Executor | str | None, manifest=None) -> dict[str, str]:
    """``{namespace: reason}`` of the tasks an executor cannot judge (Docker: ``needs_network``).

    Runners drop these from the task set for every method and report them.
    """
    name = executor if isinstance(executor, str) or executor is None else getattr(executor, "name", "")
    if name != "docker":
        return {}
    return {ns: NEEDS_NETWORK_FIELD for entry in _manifest(manifest) for ns in needs_network(entry)}


def _hint_for(entry: ProjectEntry | None, repo_spec: dict, namespace: str) -> TaskLocation | None:
    """Manifest line numbers apply only to the manifest's own sdist."""
    if entry is None or repo_spec.get("provider") != "pypi" or repo_spec.get("version") != entry.version:
        return None
    return entry.task(namespace)


def run_body(task: DevEvalTask, snapshot_root: Path, body: str, *, env: EnvSpec, executor: Executor,
             hint: TaskLocation | None = None, timeout_s: float | None = None) -> tuple[ExecutionOutcome, dict]:
    """Splice ``body`` (indent-free) into the task's function and run its tests.

    Returns the outcome and ``{"located_by", "body_start", "body_end"}``. A body that is empty or
    only ``pass``/``...``/a docstring fails without running; a spliced file that does not compile
    is an ``error`` without running (both would fail the tests anyway).
    """
    path = task_file(snapshot_root, task)
    loc = locate_function(path, task, hint)
    info = {"located_by": loc.located_by, "body_start": loc.body_start, "body_end": loc.body_end}
    if is_trivial_body(body):
        return ExecutionOutcome(FAIL, "trivial body (empty / pass / ...): counted as a failure without running",
                                0.0, detail="trivial_body"), info
    new_text = splice_body(path.read_text(encoding="utf-8"), loc.body_start, loc.body_end, body, loc.indent)
    err = check_syntax(new_text, task.file_in_project)
    if err:
        return ExecutionOutcome(ERROR, err, 0.0, detail="syntax_error"), info
    job = ExecutionJob(project_root=snapshot_root, env=env, test_ids=list(task.tests),
                       edits={task.file_in_project: new_text}, timeout_s=timeout_s, label=task.namespace)
    return executor.run(job), info


def run_reference(task: DevEvalTask, snapshot_root: Path, *, env: EnvSpec, executor: Executor,
                  timeout_s: float | None = None) -> ExecutionOutcome:
    """Run the task's tests on the unmodified tree."""
    job = ExecutionJob(project_root=snapshot_root, env=env, test_ids=list(task.tests), timeout_s=timeout_s,
                       label=task.namespace + " [reference]")
    return executor.run(job)


def completion_or_verdict(namespace: str, reply_text: str, function_name: str, *, entry: ProjectEntry | None,
                          executor: Executor, t0: float, located_by: str | None = None) -> tuple[dict, dict | None]:
    """What a judge of a reply decides before running it: the verdict's common fields with the
    reply's completion (``completion``: the extracted body), and the verdict itself when the reply is
    not run (no code in it: ``no_code``; its tests need the network under Docker: ``needs_network``),
    else None. ``t0``: when judging started (``time.monotonic()``)."""
    base = {"namespace": namespace, "completion": "", "returncode": None, "located_by": located_by}
    try:
        completion = extract_completion(reply_text, function_name)
    except ExtractionError as exc:
        return base, {**base, "outcome": FAIL, "passed": False, "log": f"no completion: {exc}",
                      "seconds": time.monotonic() - t0, "detail": "no_code"}
    base["completion"] = completion.body
    if getattr(executor, "name", "") == "docker" and namespace in needs_network(entry):
        return base, {**base, "outcome": ERROR, "passed": False, "excluded": NEEDS_NETWORK_FIELD,
                      "log": f"{namespace}: its tests need the network (manifest field {NEEDS_NETWORK_FIELD!r}); "
                             f"not judged under executor=docker (network disabled) - exclude it from the task set",
                      "seconds": time.monotonic() - t0, "detail": "needs_network"}
    return base, None


def evaluate_completion(namespace: str, reply_text: str, *, repo_spec: dict, executor: Executor,
                        manifest=None, task: DevEvalTask | None = None, data_path: str | Path | None = None,
                        env: EnvSpec | None = None, timeout_s: float | None = None) -> dict:
    """Pass@1 of one model reply for one DevEval task.

    ``repo_spec``: a provider spec (see :func:`benchmarks.deveval.providers.get_snapshot`).
    ``manifest``: a :class:`Manifest`, a path, or None for the shipped one; it supplies the test
    environment (and, for its own sdist, the task's line numbers). ``task``/``data_path``: the
    DevEval record, else looked up in DevEval's data.jsonl. ``env``: overrides the environment
    (needed for projects missing from the manifest).

    Returns ``{"outcome", "passed", "log", "seconds", "completion", "namespace", "returncode",
    "located_by", "detail"}``; ``outcome`` is pass | fail | error | timeout | oom.
    """
    t0 = time.monotonic()
    man = _manifest(manifest)
    task = task or get_task(namespace, data_path)
    entry = man.for_repo_spec(repo_spec) or man.project(task.project_path)
    base, verdict = completion_or_verdict(namespace, reply_text, task.function_name, entry=entry, executor=executor,
                                          t0=t0)
    if verdict is not None:
        return verdict
    if env is None:
        if entry is None:
            raise ValueError(f"no manifest entry for {task.project_path} / {repo_spec}: pass env=EnvSpec(...)")
        env = env_spec_for(entry)
    try:
        root = get_snapshot(repo_spec, manifest=man)
        outcome, info = run_body(task, root, base["completion"], env=env, executor=executor,
                                 hint=_hint_for(entry, repo_spec, namespace), timeout_s=timeout_s)
    except (SnapshotError, LocateError) as exc:
        return {**base, "outcome": ERROR, "passed": False, "log": str(exc), "seconds": time.monotonic() - t0,
                "detail": "snapshot"}
    return {**base, "outcome": outcome.outcome, "passed": outcome.passed, "log": outcome.log,
            "seconds": outcome.seconds, "returncode": outcome.returncode, "located_by": info["located_by"],
            "detail": outcome.detail}


def oracle_task(task: DevEvalTask, snapshot_root: Path, *, env: EnvSpec, executor: Executor,
                hint: TaskLocation | None = None, timeout_s: float | None = None) -> dict:
    """Reference body must pass; a blank body (``raise NotImplementedError``) must fail."""
    t0 = time.monotonic()
    try:
        loc = locate_function(task_file(snapshot_root, task), task, hint)
    except LocateError as exc:
        return {"namespace": task.namespace, "usable": False, "ref": None, "blank": None,
                "error": str(exc), "seconds": 0.0}
    ref = run_reference(task, snapshot_root, env=env, executor=executor, timeout_s=timeout_s)
    blank, _ = run_body(task, snapshot_root, BLANK_BODY, env=env, executor=executor, hint=hint, timeout_s=timeout_s)
    return {"namespace": task.namespace, "project_path": task.project_path, "located_by": loc.located_by,
            "usable": ref.passed and not blank.passed,
            "ref": {"outcome": ref.outcome, "rc": ref.returncode, "seconds": round(ref.seconds, 2),
                    "overhead_s": ref.overhead_s, "log_tail": ref.log[-3000:] if not ref.passed else ""},
            "blank": {"outcome": blank.outcome, "rc": blank.returncode, "seconds": round(blank.seconds, 2),
                      "overhead_s": blank.overhead_s, "log_tail": blank.log[-1500:] if blank.passed else ""},
            "seconds": round(time.monotonic() - t0, 2)}


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased Pass@k for one task with ``n`` samples of which ``c`` passed."""
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def reference_for(namespace: str, repo_spec: dict, *, manifest=None, task: DevEvalTask | None = None,
                  data_path: str | Path | None = None) -> dict:
    """The reference implementation of a task in the spec's snapshot (for the LoCoEval builder).

    See :func:`benchmarks.deveval.providers.reference_function` for the keys.
    """
    from .providers import reference_function

    man = _manifest(manifest)
    task = task or get_task(namespace, data_path)
    entry = man.for_repo_spec(repo_spec) or man.project(task.project_path)
    root = get_snapshot(repo_spec, manifest=man)
    return reference_function(root, task, _hint_for(entry, repo_spec, namespace))
