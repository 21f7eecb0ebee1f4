"""The shipped fork set's checks (``python -m scripts.validate_locoeval`` on samples beside a
``forks.jsonl``): :func:`validate_set`. Per task, through the fork's judge with the sample's other
targets holding their fork bodies, the checks of :mod:`benchmarks.locoeval.fork.validate` that apply
to a composed set (the constant bodies included), plus the distractor-following bodies, an alternative-shaped fork body, the
statements and the ceiling's oracle. A module of its own: the screening imports ``validate``, and
this one imports the judge, which reads the screening's rows."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

from benchmarks.locoeval.fork.catalogue import ForkChange
from benchmarks.locoeval.fork.tests_derive import RecordingExecutor, observing_files
from benchmarks.locoeval.fork.validate import constant_bodies, constant_problems, fragment_hits, visible_finder
from benchmarks.locoeval.verified.source import norm
from benchmarks.locoeval.verified.validate import ValidateOptions, verification_path

SET_CHECKS = ("data", "fork_passes", "public_fails", "blank_fails", "constant_fails", "distractor", "alternative",
              "not_in_snapshot", "hidden", "stated", "ceiling")


def load_fork_verification(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The composer's rows by (sample id, requirement id) (``set/FORMAT.md``); a bad row is a one-line
    error naming file:line and field."""
    from reconmem.platform.jsonfiles import iter_json_records

    out: dict[tuple[str, str], dict[str, Any]] = {}
    for where, row in iter_json_records(path):
        for key in ("sample_id", "req_id", "namespace", "distractor_bodies"):
            if key not in row:
                raise ValueError(f"{where}: missing field {key!r}")
        bodies = row["distractor_bodies"]
        if not isinstance(bodies, list) or not all(isinstance(b, dict) and isinstance(b.get("item_id"), str)
                                                   and isinstance(b.get("body"), str) for b in bodies):
            raise ValueError(f"{where}: field 'distractor_bodies': expected [{{\"item_id\": str, \"body\": str}}, ...]")
        out[(row["sample_id"], row["req_id"])] = row
    return out


def alternative_body(module_text: str, qual: list[str], body_start: int) -> tuple[str, list[str]]:
    """The body of function ``qual`` of ``module_text`` (from line ``body_start``) after the first
    verified set's AST restructuring (guard clauses to if/else, if/else swapped under the negated
    condition, conditional expressions and ``or`` defaults to if statements, comprehensions and for
    loops to explicit loops, locals renamed), and the transformations applied."""
    import copy
    from collections import Counter

    from benchmarks.locoeval.repo import find_function
    from benchmarks.locoeval.verified.first_set import first_generator
    from reconmem.platform import pyast

    v1 = first_generator()
    func = copy.deepcopy(find_function(pyast.parse(module_text), qual))
    if func is None:
        raise ValueError(f"function {'.'.join(qual)} not found")
    mod = ast.Module(body=[s for s in func.body if s.lineno >= body_start], type_ignores=[])
    applied: list[str] = []
    rs = v1._Restructure(applied)
    rs.name_counts = Counter(n.id for n in ast.walk(func) if isinstance(n, ast.Name))
    rs.visit(mod)
    mod.body = v1._guard_to_else(mod.body, applied)
    v1._rename_locals(func, mod, applied)
    ast.fix_missing_locations(mod)
    return ast.unparse(mod), applied


def stated_problems(sample: Any, req: Any, rec: Any, item_changes: dict[str, list[str]]) -> list[str]:
    """Every fork change stated by a gt item (``item_changes``) whose info / revision turn holds the
    change's fork fragment or fork value."""
    out = []
    for ch in rec.changes:
        items = [i for i, keys in item_changes.items() if ch["key"] in keys]
        texts = [st.text or "" for st in sample.outline if st.kind in ("info", "revision")
                 and set(items) & set(st.item_ids)]
        if not items:
            out.append(f"change {ch['key']}: no gt item states it")
        elif not any(norm(ch["fork_fragment"]) in norm(t) or norm(str(ch["fork_value"])) in norm(t) for t in texts):
            out.append(f"change {ch['key']}: no info / revision turn of {items} holds {ch['fork_fragment']!r}")
    return out


def ceiling_problems(sample: Any, req: Any, rec: Any) -> list[str]:
    """What the ceiling (``oracle_context``) would miss or wrongly get for a task: its oracle (the
    requirement, info and revision turns of its gt items) must hold every change's fork fragment or
    fork value and no distractor's text."""
    from benchmarks.locoeval.runner import task_oracle

    oracle = task_oracle(sample, req, {st.turn: st.text or "" for st in sample.outline})
    text = norm(" ".join(st.text for st in oracle.statements))
    out = [f"change {ch['key']}: neither {ch['fork_fragment']!r} nor {ch['fork_value']!r} in the oracle's turns"
           for ch in rec.changes if norm(ch["fork_fragment"]) not in text and norm(str(ch["fork_value"])) not in text]
    out += [f"{d.id}: the distractor's text is in the oracle's turns" for d in req.distractors if norm(d.text) in text]
    return out


def validate_set(opts: ValidateOptions) -> tuple[list[str], int]:
    """Every check of the fork set ``opts.forks`` (the verification file: ``opts.verification``, by
    default beside the samples; ``deveval_data`` and ``enforce_validity`` do not apply); returns the
    printed lines (FAIL lines, summary) and the exit status.

    Per task (the sample's other targets hold their fork bodies in every run): ``fork_passes`` (the
    fork body, twice), ``public_fails``, ``blank_fails``, ``constant_fails`` (each constant body
    ``return None``, ``return True``, ... that compiles for the target fails; not counted when none
    compiles, e.g. a body range that starts below a nested function's decorator), ``distractor`` (each
    body a distractor implies fails), ``alternative`` (v1's AST restructuring of the fork body passes; not counted when
    no restructuring applies), ``not_in_snapshot`` (no change's fork fragment in what the method
    sees), ``hidden`` (every test file failing under the fork is hidden), ``stated`` (with the
    verification's ``item_changes``), ``ceiling`` (:func:`ceiling_problems`), ``data`` (sample and
    fork record agree, a verification row
    with a body for every distractor); set level: ``shared-task``."""
    import threading
    import time
    from collections import Counter

    from benchmarks.deveval.providers import get_snapshot
    from benchmarks.deveval.splice import BLANK_BODY
    from benchmarks.deveval.tasks import PreparedEnvs, load_manifest
    from benchmarks.locoeval.fork.diffs import snapshot_text
    from benchmarks.locoeval.fork.judge import fork_edits, hidden_files, run_fork_body, sample_forks
    from benchmarks.locoeval.fork.runner import fork_problems
    from benchmarks.locoeval.fork.screen import MAX_OBSERVER_FILES, is_test_file
    from benchmarks.locoeval.fork.ship import SOURCES_FILE, read_forks
    from benchmarks.locoeval.fork.tests_derive import mentioning_test_files
    from benchmarks.locoeval.loader import load_samples, shared_tasks
    from benchmarks.locoeval.repo import _qualname
    from benchmarks.locoeval.verified.first_set import first_generator
    from benchmarks.locoeval.verified.screening import OutcomeCache
    from benchmarks.locoeval.verified.validity import text_files
    from benchmarks.runs import run_pool
    from benchmarks.sandbox import build_executor
    from reconmem.platform import pyast

    t0 = time.monotonic()
    samples = load_samples(opts.samples, ids=opts.ids)
    if opts.forks is None:
        raise ValueError("no fork records: validate_set needs forks (--forks)")
    forks = read_forks(opts.forks)
    verification = load_fork_verification(opts.verification or verification_path(opts.samples))
    beside = Path(opts.forks).parent / SOURCES_FILE        # the set's own manifest entries, when shipped
    manifest = load_manifest(opts.manifest or (beside if beside.is_file() else None))
    failures: list[str] = []
    passed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    not_applicable: Counter[str] = Counter()
    lock = threading.Lock()
    for (_, ns), ids in sorted(shared_tasks(samples).items()):
        failures.append(f"FAIL {ns}: shared-task: scored in {len(ids)} samples ({', '.join(ids)})")

    def report(label: str, check: str, ok: bool, problem: str = "") -> None:
        with lock:
            total[check] += 1
            passed[check] += ok
            if not ok:
                failures.append(f"FAIL {label}: {check}: {problem}")

    executor = None if opts.static_only else build_executor({"name": opts.executor, "timeout_s": opts.timeout})
    recorder = None if opts.static_only else RecordingExecutor(timeout_s=opts.timeout)
    outcomes = OutcomeCache(opts.resume) if opts.resume and executor is not None else None
    prepared_env = PreparedEnvs(executor)
    files_of: dict[str, dict[str, str]] = {}
    env_lock = threading.Lock()

    def one(job: tuple[Any, Any]) -> None:
        s, r = job
        label = f"{s.id}/{r.req_id} {r.namespace}"
        problems = fork_problems(s, forks, [r])
        ver = verification.get((s.id, r.req_id))
        bodies = {b["item_id"]: b["body"] for b in (ver or {}).get("distractor_bodies", [])}
        if ver is None:
            problems.append("no verification row")
        else:
            problems += [f"{d.id}: no distractor body in the verification file" for d in r.distractors
                         if d.id not in bodies]
            if ver["namespace"] != r.namespace:
                problems.append(f"the verification row names {ver['namespace']}")
        report(label, "data", not problems, "; ".join(problems))
        if r.namespace not in forks:
            return
        rec = forks[r.namespace]
        bad = ceiling_problems(s, r, rec)
        report(label, "ceiling", not bad, "; ".join(bad))
        if ver is not None and ver.get("item_changes"):
            bad = stated_problems(s, r, rec, ver["item_changes"])
            report(label, "stated", not bad, "; ".join(bad))
        try:
            records = sample_forks(s, forks)
            entry = manifest.for_repo_spec(s.repo_spec) or manifest.project(s.project_path)
            root = Path(get_snapshot(s.repo_spec, manifest=manifest))
            with env_lock:
                if str(root) not in files_of:
                    files_of[str(root)] = dict(text_files(root))
            files = files_of[str(root)]
            fork_text = fork_edits(records, None, None, lambda p: snapshot_text(root, p))[rec.file]
        except Exception as exc:  # noqa: BLE001 - reported as a failing check
            report(label, "data", False, f"snapshot: {type(exc).__name__}: {exc}")
            return
        hidden = hidden_files(s, forks)
        qual = _qualname(r.namespace, rec.file)
        find = visible_finder(files, rec.file, qual, hidden)
        hits = {ch["key"]: fragment_hits(ForkChange.from_record(ch), find) for ch in rec.changes}
        report(label, "not_in_snapshot", not any(hits.values()),
               "; ".join(f"{k} in {v}" for k, v in hits.items() if v))
        if executor is None:
            return
        env = prepared_env(entry)
        scope = f"fork:{opts.executor}:{entry.project_path}@{entry.version}:" + ",".join(sorted(x.namespace for x in records))

        def run(body: str | None, what: str) -> str:
            key = f"{what}\n{body}"
            if outcomes is not None and (known := outcomes.get(scope, r.namespace, key)):
                return known
            out = run_fork_body(executor, root, env, records, rec, body, timeout_s=opts.timeout, label=what).outcome
            if outcomes is not None and out in ("pass", "fail"):
                outcomes.put(scope, r.namespace, key, out)
            return out

        fork = [run(rec.fork_body, "fork 1"), run(rec.fork_body, "fork 2")]
        report(label, "fork_passes", fork == ["pass", "pass"], f"the fork body: {', '.join(fork)}")
        out = run(None, "public")
        report(label, "public_fails", out in ("fail", "error"), f"the public body: {out}")
        out = run(BLANK_BODY, "blank")
        report(label, "blank_fails", out in ("fail", "error"), f"the blank body: {out}")
        constants = {body: run(body, f"constant {body}")
                     for body in constant_bodies(files[rec.file], rec.body_start, rec.body_end, rec.indent, rec.file)}
        if constants:
            bad = constant_problems(constants)
            report(label, "constant_fails", not bad, "; ".join(bad))
        else:
            with lock:
                not_applicable["constant_fails"] += 1
        for d in r.distractors:
            body = bodies.get(d.id)
            if body is None:
                continue
            out = "pass" if norm(body) == norm(rec.fork_body) else run(body, f"distractor {d.id}")
            report(label, "distractor", out in ("fail", "error"), f"{d.id}: the body that follows it "
                   + ("passes" if out == "pass" else f"is inconclusive ({out})"))
        alt, applied = alternative_body(fork_text, qual, rec.body_start)
        if ast.dump(pyast.parse(alt)) == ast.dump(pyast.parse(rec.fork_body)):
            with lock:
                not_applicable["alternative"] += 1
        else:
            out = run(alt, "alternative")
            report(label, "alternative", out == "pass", f"the alternative body ({', '.join(applied)}): {out}")
        candidates = [f for f in mentioning_test_files(files, r.function_name, is_test_file) if f not in rec.tests]
        candidates = sorted(set(candidates[:MAX_OBSERVER_FILES]) | set(rec.tests))
        observers, _ = observing_files(executor=recorder, root=root, env=env, target_file=rec.file,
                                       fork_text=fork_text, candidates=candidates, timeout_s=opts.timeout)
        missing = sorted(set(observers) - set(hidden))
        report(label, "hidden", not missing, f"test files failing under the fork are visible: {missing}")
        if not opts.quiet:
            print(f"checked {label}", file=sys.stderr, flush=True)

    first_generator()          # compiled once, before the workers start
    jobs = [(s, r) for s in samples for r in s.requirements]
    run_pool(jobs, one, workers=max(1, opts.workers), progress=False, raise_errors=True)
    parts = ", ".join(f"{c} {passed[c]}/{total[c]}" for c in SET_CHECKS if total[c])
    na = "".join(f"; {check} not applicable ({why}) for {not_applicable[check]}" for check, why in
                 (("constant_fails", "no constant body compiles"), ("alternative", "no restructuring"))
                 if not_applicable[check])
    lines = sorted(failures) + [
        f"validate_locoeval (fork set): {len(jobs)} tasks in {len(samples)} samples checked; {len(failures)} "
        f"failing checks; {parts}{na}; {time.monotonic() - t0:.0f} s{' (static only)' if opts.static_only else ''}"]
    return lines, 1 if failures else 0
