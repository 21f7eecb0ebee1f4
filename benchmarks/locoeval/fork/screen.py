"""The resumable screening driver: DevEval tasks -> validated fork tasks, one JSON line per task.

For each candidate task (first the tasks where the verified set v2 found a consequential site of a
kind a team might change -- ``v2/samples.verification.jsonl``, items of kind string, raise, number,
compare, constant --, then every other usable task of the selected manifest projects):

1. **screened**: the reference is located in the snapshot;
2. **change_found**: catalogue changes (``catalogue.propose``) pass the static filters (the fork
   fragment in no visible file of the snapshot; the requirement text does not name the public
   value) -- checked before any test run --, the task's test files pass on the pristine tree under
   the recording executor (the public recording is kept for step 3), and changes alter the outcome
   of a test of the task's test files on their own (a test that passes on the release fails; the
   whole files, or the task's node ids when the files are too slow): up to ``max_changes`` on
   distinct lines, kinds taken in turn, at most ``max_tries`` single-change runs (:class:`ChangeTrials`);
3. **tests_derived**: ``tests_derive.derive_tests`` for the changes together; on failure each
   change alone, then each further change that alters an outcome alone (a fork that crashes where a
   test expected a value does not end the task while untried changes remain); the fork is judged by
   ``validate.judging_ids``: the task's node ids and the tests whose assertions were rewritten;
4. **changes_observed** and 5. **validated**: ``validate.validate_fork`` (``change_observed`` is
   step 4; the other checks step 5).

Every outcome is appended to the results file as one JSON line (``status`` validated | dropped |
error, ``stage`` the last step passed, ``reason`` the loss, ``catalogue_version``,
``derive_version``, ``proposed_changes``: ``[key, fork_text]`` of every catalogue change proposed);
tasks already in the file by the current catalogue and derivation are skipped, so an interrupted
screening resumes where it stopped (``retry_errors`` redoes the errored ones).

**Carry-forward.** A new catalogue or derivation version does not run every task again: a task whose
latest row is of an older version is located and its catalogue changes proposed (no test run); the
row is carried forward (:func:`can_carry`: a copy with the current versions and ``carried_from``,
the versions it was made with) when the project version, file and public body are the same, the
current catalogue proposes the same changes (same keys and fork texts; for rows made before
``proposed_changes`` was recorded: the same number, from a catalogue whose proposals the current
one contains, ``COUNT_COMPARABLE``), and the derivation version is the same or the row stopped
before any test run (``DERIVATION_FREE``). A validated row is also carried when the current
catalogue only adds proposals to its task and its derivation version is one whose forks the current
procedure keeps (``CARRY_VALIDATED_FROM``: derivation 5 only adds rewrites and judging tests, and a
fork validated by derivation 4 passes every check under its judging ids -- the set's
``validate_locoeval`` runs them again). Errored rows are never carried.
:func:`loss_counts` reads the file back; :func:`site_counts` is the dry estimate (catalogue sites
that pass the static filters, per kind and repository, and how many tasks would be carried).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from benchmarks.locoeval.fork.catalogue import (CATALOGUE_VERSION, KINDS, ExceptionFamily, ForkChange, Target,
                                                apply_changes, apply_to_text, overlapping, propose)
from benchmarks.locoeval.fork.tests_derive import (DERIVE_VERSION, RecordingExecutor, derive_tests,
                                                   mentioning_test_files, observing_files, record_run)
from benchmarks.locoeval.fork.validate import CHECKS, ForkTask, fragment_hits, judging_ids, validate_fork, visible_finder
from benchmarks.locoeval.verified.source import dedent_body
from benchmarks.locoeval.verified.validity import SnapshotText, text_files, token_in_text
from reconmem.platform import pyast

STAGES = ("screened", "change_found", "tests_derived", "changes_observed", "validated")
V2_DIR = Path(__file__).resolve().parents[1] / "verified" / "v2"
V2_SITE_KINDS = ("string", "raise", "number", "compare", "constant")
MAX_OBSERVER_FILES = 12
SET_NAME = "locoeval_fork"
COUNT_COMPARABLE = (6,)    # catalogue versions whose proposals the current catalogue's contain (checked per task)
DERIVATION_FREE = ("no catalogue site", "every catalogue change fails a static filter")   # drops before any test run
CARRY_VALIDATED_FROM = (4,)   # derivation versions whose validated forks the current procedure keeps (see can_carry)


@dataclass
class ScreenOptions:
    """What to screen (the ``screen`` command's options)."""

    out: Path
    projects: list[str] | None = None
    limit: int | None = None
    timeout: float = 120.0
    manifest: Path | None = None
    deveval_data: Path | None = None
    v2_only: bool = False
    max_changes: int = 3
    max_tries: int = 8
    retry_errors: bool = False
    work_root: Path | None = None
    namespaces: list[str] | None = None      # only these tasks, in this order (None: every candidate)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def is_test_file(rel: str) -> bool:
    parts = rel.split("/")
    return any(p in ("tests", "test", "testing") for p in parts[:-1]) or parts[-1].startswith(("test_", "conftest")) \
        or parts[-1].endswith("_test.py")


class ForkProject:
    """One manifest entry's snapshot, texts and exception classes (built once per screening)."""

    def __init__(self, entry: Any, root: Path, env: Any) -> None:
        self.entry = entry
        self.root = Path(root)
        self.files = dict(text_files(self.root))
        self.text = SnapshotText(self.files)
        self.family = ExceptionFamily.of_files({k: v for k, v in self.files.items() if not is_test_file(k)})
        self.env = env

    @classmethod
    def of_entry(cls, entry: Any, manifest: Any) -> "ForkProject":
        """The project of a manifest entry: its sdist snapshot and test environment."""
        from benchmarks.deveval.providers import get_snapshot
        from benchmarks.deveval.tasks import env_spec_for

        return cls(entry, Path(get_snapshot(entry.repo_spec(), manifest=manifest)), env_spec_for(entry))

    def test_files(self, task: Any) -> list[str]:
        """Snapshot-relative paths of the files holding the task's tests."""
        from benchmarks.locoeval.repo import files_of_tests

        return files_of_tests(self.root, task.tests, self.entry.project_path)

    def in_snapshot(self, rel: str, qual: list[str], hidden: list[str]):
        """``fragment -> files`` over what a method sees (``validate.visible_finder``)."""
        return visible_finder(self.files, rel, qual, hidden, self.text)


def v2_namespaces(v2_dir: Path = V2_DIR) -> list[str]:
    """Tasks of the verified set v2 with a consequential site of a kind a team might change."""
    out: list[str] = []
    path = v2_dir / "samples.verification.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if any(it.get("kind") in V2_SITE_KINDS for it in row.get("items", {}).values()) \
                and row["namespace"] not in out:
            out.append(row["namespace"])
    return out


def load_records(deveval_data: Path | None) -> dict[str, dict[str, Any]]:
    """DevEval records by namespace: v2's shipped copy, and DevEval's data.jsonl when it is there."""
    from benchmarks.deveval.tasks import default_data_path

    recs: dict[str, dict[str, Any]] = {}
    paths = [V2_DIR / "deveval_tasks.jsonl"]
    data = Path(deveval_data) if deveval_data else default_data_path()
    if data.is_file():
        paths.append(data)
    for p in paths:
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                recs.setdefault(r["namespace"], r)
    return recs


def latest_rows(out: Path) -> dict[str, dict[str, Any]]:
    """The latest row of every task in the results file (none when it does not exist)."""
    latest: dict[str, dict[str, Any]] = {}
    if out.is_file():
        for row in read_results(out):
            latest[row["namespace"]] = row
    return latest


def done_namespaces(out: Path, retry_errors: bool = False) -> set[str]:
    """Namespaces already in the results file by the current catalogue (errored ones left out when
    ``retry_errors``; the latest row of a task counts)."""
    return {ns for ns, row in latest_rows(out).items()
            if _current(row) and not (retry_errors and row.get("status") == "error")}


def proposal_keys(proposed: list[ForkChange]) -> list[list[str]]:
    """``[key, fork_text]`` of every proposed change, sorted (what a row records as ``proposed_changes``)."""
    return sorted([c.key, c.fork_text] for c in proposed)


def can_carry(prev: dict[str, Any] | None, located: dict[str, Any], proposed: list[ForkChange]) -> bool:
    """May ``prev`` (the task's latest row, of an older version) stand for the current versions? See the
    module docstring; ``located`` holds the task's current ``version``, ``file``, ``body_start``,
    ``body_end`` and ``public_body_sha256``."""
    if not prev or _current(prev) or prev.get("status") == "error":
        return False
    if any(prev.get(k) != located.get(k) for k in ("version", "file", "body_start", "body_end", "public_body_sha256")):
        return False
    validated = prev.get("status") == "validated"
    if prev.get("catalogue_version") != CATALOGUE_VERSION:
        keys = prev.get("proposed_changes")
        if keys is not None:
            before, now = sorted(list(k) for k in keys), proposal_keys(proposed)
            if before != now and not (validated and all(k in now for k in before)):
                return False
        elif not (prev.get("catalogue_version") in COUNT_COMPARABLE and prev.get("proposed") == len(proposed)):
            return False
    if prev.get("derive_version") != DERIVE_VERSION:
        derivation_free = prev.get("stage") == "screened" and str(prev.get("reason", "")).startswith(DERIVATION_FREE)
        if not (derivation_free or (validated and prev.get("derive_version") in CARRY_VALIDATED_FROM)):
            return False
    return True


def carried_row(prev: dict[str, Any], proposed: list[ForkChange]) -> dict[str, Any]:
    """``prev`` carried forward: its outcome, ``carried_from`` the versions it was made with."""
    row = {k: v for k, v in prev.items() if k not in ("carried_from", "catalogue_version", "derive_version")}
    row["carried_from"] = {"catalogue_version": prev.get("catalogue_version"),
                           "derive_version": prev.get("derive_version"), "seconds": prev.get("seconds")}
    row["proposed_changes"] = proposal_keys(proposed)
    return row


def read_results(out: Path) -> Iterator[dict[str, Any]]:
    """The results file's rows (a truncated last line is skipped)."""
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            continue


def append_result(out: Path, row: dict[str, Any]) -> None:
    """Append one row; a last line cut short by a crash is closed first (it stays unreadable)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.is_file() and out.stat().st_size:
        with out.open("rb") as fh:
            fh.seek(-1, os.SEEK_END)
            cut = fh.read(1) != b"\n"
        if cut:
            with out.open("a", encoding="utf-8") as fh:
                fh.write("\n")
    with out.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def candidates(manifest: Any, records: dict[str, dict], projects: list[str] | None,
               v2_only: bool) -> list[tuple[Any, str, str]]:
    """``[(entry, namespace, source)]``: v2's site tasks first (in v2's order), then the others."""
    entries = manifest.select(projects)
    by_ns = {loc.namespace: e for e in entries for loc in e.tasks if loc.usable}
    out, seen = [], set()
    for ns in v2_namespaces():
        if ns in by_ns and ns in records:
            out.append((by_ns[ns], ns, "v2"))
            seen.add(ns)
    if not v2_only:
        for e in entries:
            for loc in sorted(e.tasks, key=lambda t: t.namespace):
                if loc.usable and loc.namespace not in seen and loc.namespace in records:
                    out.append((e, loc.namespace, "manifest"))
    return out


def requirement_prose(record: dict[str, Any]) -> str:
    req = record.get("requirement") or {}
    return " ".join(str(req.get(k, "")) for k in ("Functionality", "Arguments"))


NO_NAMED_VALUE = ("order", "strictness", "flag", "sort", "case", "side", "missing", "strip", "base", "rounding")


def public_token(ch: ForkChange) -> str | None:
    """What a requirement text would say of the change's public value (None: nothing it would name)."""
    if ch.kind in NO_NAMED_VALUE:
        return None
    if ch.kind == "membership":
        return ch.notes[0].split("leave out ", 1)[-1] if ch.notes else None
    if ch.kind in ("collection", "affix"):          # the element the fork leaves out
        return ch.notes[-1] if ch.notes else None
    return ch.public_value


def static_filter(changes: list[ForkChange], prose: str, find) -> tuple[list[ForkChange], Counter]:
    """The changes whose fork fragment no visible file holds and whose public value the requirement
    text does not name (``validity.token_in_text``)."""
    kept, dropped = [], Counter()
    for ch in changes:
        token = public_token(ch)
        if fragment_hits(ch, find):
            dropped["fork fragment in snapshot"] += 1
        elif token and token_in_text(token, prose):
            dropped["requirement names the public value"] += 1
        else:
            kept.append(ch)
    return kept, dropped


def try_order(changes: list[ForkChange]) -> list[ForkChange]:
    """Kinds in turn (catalogue order), line order within a kind."""
    by_kind: dict[str, list[ForkChange]] = {}
    for ch in changes:
        by_kind.setdefault(ch.kind, []).append(ch)
    out = []
    while any(by_kind.values()):
        for k in KINDS:
            if by_kind.get(k):
                out.append(by_kind[k].pop(0))
    return out


def _task_failed(failed: list[str], test_ids: tuple[str, ...]) -> list[str]:
    return [f for f in failed if f.startswith("collect:") or
            any(f == t or f.startswith(t + "::") or f.startswith(t + "[") for t in test_ids)]


class ChangeTrials:
    """The single-change runs of one task, in ``try_order``, at most ``max_tries``.

    ``run(change) -> (observed, outcome)`` runs one change alone over the task's test scope;
    :meth:`next_observed` gives the next change that changes a test outcome, passing over (and
    keeping for later calls) those that overlap a change in ``avoid``."""

    def __init__(self, order: list[ForkChange], max_tries: int, run: Callable[[ForkChange], tuple[bool, str]]) -> None:
        self.pending = list(order)
        self.max_tries = max_tries
        self.run = run
        self.tried: list[dict[str, Any]] = []
        self.runs = 0

    def next_observed(self, avoid: list[ForkChange]) -> ForkChange | None:
        for ch in list(self.pending):
            if len(self.tried) >= self.max_tries:
                return None
            if any(overlapping(ch, c) for c in avoid):
                continue
            self.pending.remove(ch)
            observed, outcome = self.run(ch)
            self.runs += 1
            self.tried.append({"key": ch.key, "kind": ch.kind, "change": f"{ch.public_value} -> {ch.fork_value}",
                               "outcome": outcome, "observed": observed})
            if observed:
                return ch
        return None


@dataclass
class Located:
    """A task's target located in its snapshot, with its catalogue changes (``Screener.locate``)."""

    proj: ForkProject
    task: Any
    ref: dict[str, Any]
    rel: str
    text: str
    target: Target
    test_files: list[str]
    find: Any
    proposed: list[ForkChange]
    kept: list[ForkChange]
    row: dict[str, Any]


class Screener:
    """Screens tasks one by one and appends their outcomes (see the module docstring)."""

    def __init__(self, opts: ScreenOptions) -> None:
        from benchmarks.deveval.tasks import load_manifest
        from benchmarks.sandbox import build_executor

        self.opts = opts
        self.manifest = load_manifest(opts.manifest)
        self.records = load_records(opts.deveval_data)
        work = {"work_root": str(opts.work_root)} if opts.work_root else {}
        self.judge = build_executor({"name": "local", "timeout_s": opts.timeout, **work})
        self.recorder = RecordingExecutor(timeout_s=opts.timeout, **work)
        self.projects: dict[str, ForkProject] = {}
        self.slow_files: set[tuple[str, str]] = set()     # (project, test file) whose whole run timed out
        self.broken: dict[str, str] = {}                   # project -> why its snapshot is unavailable

    def project(self, entry: Any) -> ForkProject:
        if entry.project_path in self.broken:            # its snapshot could not be had: do not fetch again
            raise RuntimeError(self.broken[entry.project_path])
        if entry.project_path not in self.projects:      # its test environment is built by its first test run
            try:
                self.projects[entry.project_path] = ForkProject.of_entry(entry, self.manifest)
            except Exception as exc:
                self.broken[entry.project_path] = f"project {entry.project_path} unavailable: {type(exc).__name__}: {exc}"
                raise
        return self.projects[entry.project_path]

    def run(self) -> Counter:
        latest = latest_rows(self.opts.out)
        done = done_namespaces(self.opts.out, self.opts.retry_errors)
        todo = [c for c in candidates(self.manifest, self.records, self.opts.projects, self.opts.v2_only)
                if c[1] not in done]
        if self.opts.namespaces is not None:
            rank = {ns: i for i, ns in enumerate(self.opts.namespaces)}
            todo = sorted((c for c in todo if c[1] in rank), key=lambda c: rank[c[1]])
        if self.opts.limit is not None:
            todo = todo[:self.opts.limit]
        log(f"fork screening: {len(todo)} task(s) to screen, {len(done)} already in {self.opts.out}")
        counts: Counter = Counter()
        for i, (entry, ns, source) in enumerate(todo, 1):
            t0 = time.monotonic()
            try:
                row = self.screen_task(entry, ns, previous=latest.get(ns))
            except Exception as exc:  # noqa: BLE001 - recorded, the screening goes on
                row = {"status": "error", "stage": None, "reason": f"{type(exc).__name__}: {exc}",
                       "traceback": pyast.format_exc()[-3000:]}
            row.update({"namespace": ns, "project_path": entry.project_path, "version": entry.version,
                        "source": source, "seconds": round(time.monotonic() - t0, 1),
                        "catalogue_version": CATALOGUE_VERSION, "derive_version": DERIVE_VERSION})
            append_result(self.opts.out, row)
            counts["carried" if "carried_from" in row else row["status"]] += 1
            log(f"[{i}/{len(todo)}] {ns}: {row['status']} (stage {row['stage']}) {row.get('reason', '')} "
                f"{row['seconds']}s" + (" (carried forward)" if "carried_from" in row else ""))
        return counts

    def locate(self, entry: Any, ns: str) -> "Located | dict[str, Any]":
        """The task's target and its catalogue changes through the static filters (no test run), or
        the row of a task whose function is not where the manifest says."""
        from benchmarks.deveval.providers import reference_function
        from benchmarks.deveval.tasks import parse_task
        from benchmarks.locoeval.repo import _qualname, find_function

        proj = self.project(entry)
        task = parse_task(self.records[ns], ns)
        ref = reference_function(proj.root, task, entry.task(ns))
        rel = ref["file"]
        text = proj.files[rel]
        qual = _qualname(ns, rel)
        func = find_function(pyast.parse(text), qual)
        if func is None or func.lineno != ref["signature_line"]:
            return {"status": "dropped", "stage": None, "reason": "function not found at the manifest's line"}
        target = Target(text, func, ref["body_start"], ref["body_end"], module_rel=rel, exceptions=proj.family)
        test_files = proj.test_files(task)
        row: dict[str, Any] = {"file": rel, "signature_line": ref["signature_line"], "body_start": ref["body_start"],
                               "body_end": ref["body_end"], "test_files": test_files,
                               "public_body_sha256": hashlib.sha256(dedent_body(ref["body"]).encode()).hexdigest(),
                               "runs": 0}
        proposed = propose(target)
        find = proj.in_snapshot(rel, qual, list(test_files))
        kept, dropped = static_filter(proposed, requirement_prose(self.records[ns]), find)
        row["proposed"] = len(proposed)
        row["proposed_changes"] = proposal_keys(proposed)
        row["static_dropped"] = dict(dropped)
        return Located(proj, task, ref, rel, text, target, test_files, find, proposed, kept, row)

    def screen_task(self, entry: Any, ns: str, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        loc = self.locate(entry, ns)
        if isinstance(loc, dict):
            return loc
        proj, task, ref, rel, text, target = loc.proj, loc.task, loc.ref, loc.rel, loc.text, loc.target
        test_files, find, proposed, kept, row = loc.test_files, loc.find, loc.proposed, loc.kept, loc.row
        if can_carry(previous, {**row, "version": entry.version}, proposed):
            carried = carried_row(previous, proposed)
            if carried["status"] == "validated" and not set(CHECKS) <= set(carried.get("checks", {})):
                return self.revalidate(loc, carried)
            return carried
        # catalogue changes and the static filters first: most tasks stop here without a test run
        if not kept:
            reason = "no catalogue site" if not proposed else "every catalogue change fails a static filter"
            return {**row, "status": "dropped", "stage": "screened", "reason": reason}
        to = self.opts.timeout
        scope = list(test_files)
        slow = any((entry.project_path, f) in self.slow_files for f in test_files)
        if not slow:
            public = record_run(self.recorder, proj.root, proj.env, scope, {}, label=f"{ns} public", timeout_s=to)
            row["runs"] += 1
            if public.outcome.outcome == "timeout":
                self.slow_files |= {(entry.project_path, f) for f in test_files}
        if slow or public.outcome.outcome == "timeout":      # whole files too slow: the task's own node ids
            scope = list(task.tests)
            public = record_run(self.recorder, proj.root, proj.env, scope, {}, label=f"{ns} public", timeout_s=to)
            row["runs"] += 1
        row["test_scope"] = "files" if scope == test_files else "node ids"
        if not public.complete or _task_failed(public.failed, task.tests):
            return {**row, "status": "dropped", "stage": "screened",
                    "reason": f"reference fails under this executor ({public.outcome.outcome})"}
        try_timeout = min(to, max(30.0, 5 * public.outcome.seconds))   # a change that hangs is no decision
        trials = ChangeTrials(try_order(kept), self.opts.max_tries,
                              lambda ch: self._try(proj, rel, text, scope, public, ch, f"{ns} try {ch.key}", try_timeout))
        chosen: list[ForkChange] = []
        while len(chosen) < self.opts.max_changes:
            ch = trials.next_observed(avoid=chosen)
            if ch is None:
                break
            chosen.append(ch)
        row["runs"] += trials.runs
        row["tried"] = trials.tried
        if not chosen:
            return {**row, "status": "dropped", "stage": "screened",
                    "reason": f"no catalogue change changes a test outcome ({len(trials.tried)} tried)"}
        # 3. the fork's tests: the changes together, then each alone, then further changes alone
        attempts: list[dict[str, Any]] = []

        def derive(changes: list[ForkChange]):
            d = derive_tests(executor=self.recorder, root=proj.root, env=proj.env, target_file=rel,
                             fork_text=apply_to_text(text, changes), test_files=test_files, timeout_s=to,
                             public=public, test_ids=scope)
            row["runs"] += d.runs
            attempts.append({"changes": [c.key for c in changes], "ok": d.ok, "reason": d.reason})
            return d

        der = derive(chosen)
        if not der.ok and len(chosen) > 1:
            for one in list(chosen):
                chosen = [one]
                der = derive(chosen)
                if der.ok:
                    break
        while not der.ok:
            runs_before = trials.runs
            nxt = trials.next_observed(avoid=[])
            row["runs"] += trials.runs - runs_before
            if nxt is None:
                break
            chosen = [nxt]
            der = derive(chosen)
        row["tried"] = trials.tried
        row["derivation_attempts"] = attempts
        row["changes"] = [c.record() for c in chosen]
        row["fork_body"] = apply_changes(target, chosen)
        row["derivation"] = der.record()
        if not der.ok:
            return {**row, "status": "dropped", "stage": "change_found", "reason": f"tests: {der.reason}"}
        return self._validate(loc, row, chosen, der.files, der.rewrites)

    def _validate(self, loc: Located, row: dict[str, Any], chosen: list[ForkChange], test_edits: dict[str, str],
                  rewrites: list[Any]) -> dict[str, Any]:
        """Steps 4-5: ``validate.validate_fork`` of the fork ``chosen`` with the fork's test files ``test_edits``."""
        proj, task, ref, rel, text = loc.proj, loc.task, loc.ref, loc.rel, loc.text
        to = self.opts.timeout
        observers = [f for f in mentioning_test_files(proj.files, task.function_name, is_test_file)
                     if f not in loc.test_files]
        row["observer_candidates"] = len(observers)
        observers = sorted(set(observers[:MAX_OBSERVER_FILES]) | set(loc.test_files))
        fork_text = apply_to_text(text, chosen)
        observing, n = observing_files(executor=self.recorder, root=proj.root, env=proj.env, target_file=rel,
                                       fork_text=fork_text, candidates=observers, timeout_s=to)
        row["runs"] += n
        ft = ForkTask(namespace=task.namespace, target_file=rel, test_ids=judging_ids(task.tests, rewrites),
                      public_text=text, body_start=ref["body_start"], body_end=ref["body_end"], indent=ref["indent"],
                      changes=chosen, test_edits=test_edits, hidden_files=sorted(set(loc.test_files) | set(observing)),
                      observer_candidates=observers)
        res = validate_fork(ft, root=proj.root, env=proj.env, executor=self.judge, recorder=self.recorder,
                            in_snapshot=loc.find, timeout_s=to)
        row["runs"] += res["runs"]
        row["checks"] = res["checks"]
        row["hidden_files"] = ft.hidden_files
        row["judging_ids"] = ft.test_ids
        if not res["checks"]["change_observed"]["ok"]:
            return {**row, "status": "dropped", "stage": "tests_derived",
                    "reason": f"a change is not observed: {res['checks']['change_observed']['detail']}"}
        if not res["ok"]:
            bad = [k for k, v in res["checks"].items() if not v["ok"]]
            return {**row, "status": "dropped", "stage": "changes_observed", "reason": "validation: " + ", ".join(bad)}
        return {**row, "status": "validated", "stage": "validated", "reason": ""}

    def revalidate(self, loc: Located, row: dict[str, Any]) -> dict[str, Any]:
        """A carried validated row whose checks are not the current ones (``validate.CHECKS``) validated
        again: its own changes (as the current catalogue proposes them) and its own fork tests (rebuilt
        from its diffs); no new derivation."""
        from benchmarks.locoeval.fork.diffs import apply_diff, snapshot_text

        by_key = {c.key: c for c in loc.proposed}
        chosen = [by_key.get(c["key"]) for c in row["changes"]]
        if any(ch is None or ch.fork_text != c["fork_text"] for ch, c in zip(chosen, row["changes"])):
            return {**row, "status": "dropped", "stage": "change_found",
                    "reason": "revalidation: the current catalogue does not propose the row's changes"}
        test_edits = {rel: apply_diff(snapshot_text(loc.proj.root, rel), diff, where=f"{loc.task.namespace}: {rel}")
                      for rel, diff in row["derivation"]["diffs"].items()}
        row = {**row, "runs": 0, "revalidated": {"checks_before": sorted(row.get("checks", {}))}}
        return self._validate(loc, row, chosen, test_edits, row["derivation"]["rewrites"])

    def _try(self, proj: ForkProject, rel: str, text: str, scope: list[str], public: Any, ch: ForkChange,
             label: str, timeout_s: float) -> tuple[bool, str]:
        """``(observed, outcome)``: does ``ch`` alone make a test of ``scope`` fail that passes on the
        release (or the run error out)?"""
        rec = record_run(self.recorder, proj.root, proj.env, scope, {rel: apply_to_text(text, [ch])},
                         label=label, timeout_s=timeout_s)
        new = set(rec.failed) - set(public.failed)
        observed = bool(new) or (not rec.complete and rec.outcome.outcome == "error")
        return observed, rec.outcome.outcome


def site_counts(opts: ScreenOptions, screener: Screener | None = None) -> dict[str, Any]:
    """The dry estimate over the candidates of ``opts`` (no test run): tasks with a catalogue change
    that passes the static filters, per kind (a task counts once per kind) and per repository, and
    how many tasks the next ``screen`` would carry forward, screen again or screen for the first time."""
    s = screener or Screener(opts)
    latest = latest_rows(opts.out)
    per_kind: Counter = Counter()
    kind_repos: dict[str, set[str]] = {}
    repos: Counter = Counter()
    outcome: Counter = Counter()
    todo = candidates(s.manifest, s.records, opts.projects, opts.v2_only)
    for i, (entry, ns, _) in enumerate(todo[:opts.limit] if opts.limit is not None else todo, 1):
        try:
            loc = s.locate(entry, ns)
        except Exception as exc:  # noqa: BLE001 - counted, the estimate goes on
            outcome[f"error: {type(exc).__name__}"] += 1
            continue
        prev = latest.get(ns)
        if isinstance(loc, dict):
            outcome["function not found"] += 1
            continue
        if prev is not None and _current(prev):
            outcome["current row"] += 1
        elif can_carry(prev, {**loc.row, "version": entry.version}, loc.proposed):
            outcome["would be carried"] += 1
        else:
            outcome["would be screened" + (" again" if prev else "")] += 1
        if loc.kept:
            repos[entry.project_path] += 1
            for k in {c.kind for c in loc.kept}:
                per_kind[k] += 1
                kind_repos.setdefault(k, set()).add(entry.project_path)
        if i % 100 == 0:
            log(f"sites: {i} task(s) located, {sum(repos.values())} with a site")
    return {"catalogue_version": CATALOGUE_VERSION, "tasks": len(todo), "with_site": sum(repos.values()),
            "repositories": len(repos), "per_kind": {k: {"tasks": n, "repositories": len(kind_repos[k])}
                                                     for k, n in per_kind.most_common()},
            "next_screen": dict(outcome.most_common()), "per_repository": dict(sorted(repos.items()))}


def screen(opts: ScreenOptions) -> Counter:
    """Screen the candidates of ``opts`` into ``opts.out`` (resumable); returns status counts."""
    return Screener(opts).run()


def default_results_path() -> Path:
    from reconmem.platform.downloads import cache_root

    return cache_root() / SET_NAME / "screen.jsonl"


def _current(row: dict[str, Any]) -> bool:
    return row.get("catalogue_version") == CATALOGUE_VERSION and row.get("derive_version") == DERIVE_VERSION


def loss_counts(out: Path) -> dict[str, Any]:
    """Per step, how many tasks reached it, and the reasons of the losses (the latest row per task
    made by the current catalogue and derivation; ``older_rows``: tasks with older rows only)."""
    rows: dict[str, dict[str, Any]] = {}
    older: set[str] = set()
    for row in read_results(out):
        if _current(row):
            rows[row["namespace"]] = row
        else:
            older.add(row["namespace"])
    reached = Counter()
    reasons: dict[str, Counter] = {}
    for row in rows.values():
        stage = row.get("stage")
        upto = STAGES.index(stage) + 1 if stage in STAGES else 0
        for s in STAGES[:upto]:
            reached[s] += 1
        if row.get("status") != "validated":
            lost_at = "error" if row.get("status") == "error" else (STAGES[upto] if upto < len(STAGES) else "?")
            reasons.setdefault(lost_at, Counter())[_reason_key(row.get("reason", ""))] += 1
    projects = Counter(r["project_path"] for r in rows.values())
    validated = Counter(r["project_path"] for r in rows.values() if r.get("status") == "validated")
    return {"tasks": len(rows), "older_rows": len(older - set(rows)), "reached": {s: reached[s] for s in STAGES},
            "lost": {k: dict(v.most_common()) for k, v in reasons.items()},
            "projects": {p: {"screened": n, "validated": validated[p]} for p, n in sorted(projects.items())}}


def _reason_key(reason: str) -> str:
    """A reason without its task-specific parts (for counting)."""
    import re

    key = re.sub(r"round \d+: ", "", reason)
    key = re.sub(r"\(.*?\)|\{.*\}", "(..)", key)
    key = re.sub(r"\S+\.py\S*|\d+", "N", key)
    return key[:100]
