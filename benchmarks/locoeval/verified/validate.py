"""Checking a scripted LoCoEval sample set against its verification file (``scripts.validate_locoeval``).

The verification file (default ``<samples dir>/<samples stem>.verification.jsonl``) holds one row per
(sample, requirement): ``sample_id, req_id, namespace, file, body_start, body_end, reference_sha256,
items: {gt_id: {lines, facts, counterfactual_body?, kind?, literal?, counter_literal?, token?,
counter_token?}}, distractors: {d_id: {revised_by, body, token?, counter_token?}}, alternative?:
{body, transforms}``. The runner never reads it; no method sees it.

Oracle checks, per task (test runs): ``reference`` passes; ``blank`` fails; ``distractor``: every
distractor-following body fails; ``counterfactual``: every gt item's counterfactual body fails (a
timeout is inconclusive and a failing check); ``alternative`` (when the row has one) passes and
differs from the reference's syntax tree.
Static checks: ``grounding`` (every range inside the reference body and holding the item's facts;
the body is the verified one), ``stated`` (every item's facts verbatim, whitespace-normalised, in a
scripted info or revision turn that lists it), ``revised`` (every distractor followed by a revision
turn stating its ``revised_by`` item), set-level ``shared-task``.
Validity checks (``validity``; figures only with ``enforce_validity=False``): ``literal`` (no fact's
literal or counter-literal in the snapshot the method sees), ``docstring`` (no target docstring in
that snapshot when the sample says ``target_docstrings: remove``), ``sibling`` (no other function
body with token similarity >= 0.7), ``edit`` (every distractor at least 2 edits from the fact's
token), set-level ``compare-share`` (comparisons at most a quarter of the facts).
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import textwrap
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.locoeval.verified.distractors import MIN_EDIT, edit_distance
from benchmarks.locoeval.verified.screening import OutcomeCache
from benchmarks.locoeval.verified.source import norm
from benchmarks.locoeval.verified.validity import (SIBLING_LIMIT, Figures, SiblingIndex, SnapshotText, text_files,
                                                   docstring_overlap, indexed, mentioned, target_docstring,
                                                   visible_targets)
from benchmarks.runs import run_pool
from reconmem.platform import pyast

ORACLE_CHECKS = ("reference", "blank", "distractor", "counterfactual", "alternative")
STATIC_CHECKS = ("grounding", "stated", "revised")
VALIDITY_CHECKS = ("literal", "docstring", "sibling", "edit")
CHECKS = ORACLE_CHECKS + STATIC_CHECKS + VALIDITY_CHECKS
COMPARE_SHARE = 0.25
REFERENCE_KEY = "<the reference body>"   # the resume file's key for a reference run


@dataclass
class ValidateOptions:
    """The validator's inputs (the script's command-line options)."""

    samples: Path
    verification: Path | None = None
    deveval_data: Path | None = None
    manifest: Path | None = None
    executor: str = "local"
    workers: int = 1
    timeout: float = 60.0
    static_only: bool = False
    enforce_validity: bool = True
    ids: list[str] | None = None
    quiet: bool = False
    resume: Path | None = None     # append-only outcome file: a rerun repeats no conclusive test run
    forks: Path | None = None      # a fork set's records: the fork set's checks (``fork.validate_set``)


def verification_path(samples: Path) -> Path:
    """``<dir>/<stem>.verification.jsonl`` beside a samples file."""
    return samples.with_name(samples.name.split(".")[0] + ".verification.jsonl")


def load_verification(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Verification rows by (sample id, requirement id)."""
    out = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
        for key in ("sample_id", "req_id", "namespace", "items", "distractors"):
            if key not in row:
                raise ValueError(f"{path}:{n}: missing field {key!r}")
        out[(row["sample_id"], row["req_id"])] = row
    return out


def grounding_checks(req: Any, ver: dict[str, Any], ref: dict[str, Any]) -> list[tuple[str, str]]:
    """Every gt item's ranges lie inside the reference body and contain its facts; the body is the verified one."""
    fails: list[tuple[str, str]] = []
    lines = ref["file_lines"]
    bs, be = ref["body_start"], ref["body_end"]
    if ver.get("reference_sha256") and ver["reference_sha256"] != hashlib.sha256(ref["body"].encode()).hexdigest():
        fails.append(("grounding", "the snapshot's reference body differs from the one the set was verified on"))
    for it in req.gt_items:
        vi = ver["items"].get(it.id)
        if not vi or not vi.get("lines"):
            fails.append(("grounding", f"{it.id}: no grounding range"))
            continue
        text = ""
        for a, b in vi["lines"]:
            if not (bs <= a <= b <= be):
                fails.append(("grounding", f"{it.id}: lines {a}-{b} outside the reference body {bs}-{be}"))
            text += "\n".join(lines[a - 1:b]) + "\n"
        if not vi.get("facts"):
            fails.append(("grounding", f"{it.id}: no facts listed"))
        for f in vi.get("facts", []):
            if norm(f) not in norm(text):
                fails.append(("grounding", f"{it.id}: fact {f!r} is not in its grounding lines"))
    alt = (ver.get("alternative") or {}).get("body", "")
    if alt:
        try:
            same = ast.dump(pyast.parse(alt)) == ast.dump(pyast.parse(textwrap.dedent(ref["body"])))
        except SyntaxError as exc:
            fails.append(("alternative", f"does not parse: {exc.msg}"))
        else:
            if same:
                fails.append(("alternative", "same syntax tree as the reference body"))
    return fails


def conversation_checks(sample: Any, req: Any, ver: dict[str, Any]) -> list[tuple[str, str]]:
    """Facts stated in a scripted turn that lists the item; every distractor revised by a later turn."""
    fails: list[tuple[str, str]] = []
    if ver["namespace"] != req.namespace:
        fails.append(("grounding", f"verification row names {ver['namespace']}"))
    for it in req.gt_items:
        facts = (ver["items"].get(it.id) or {}).get("facts", [])
        turns = [s for s in sample.outline if s.kind in ("info", "revision") and it.id in s.item_ids]
        if not turns:
            fails.append(("stated", f"{it.id}: no info/revision turn lists it"))
            continue
        if not any(s.text and all(norm(f) in norm(s.text) for f in facts) for s in turns):
            fails.append(("stated", f"{it.id}: no turn listing it states {facts!r} verbatim"))
    if not req.distractors:
        fails.append(("revised", "the task has no distractor"))
    for d in req.distractors:
        said = [s.turn for s in sample.outline if s.kind == "distractor" and d.id in s.item_ids]
        if d.id not in ver["distractors"]:
            fails.append(("distractor", f"{d.id}: no distractor body in the verification file"))
        if not said:
            fails.append(("revised", f"{d.id}: never stated in the outline"))
            continue
        facts = (ver["items"].get(d.revised_by) or {}).get("facts", [])
        later = [s for s in sample.outline if s.kind == "revision" and d.revised_by in s.item_ids and s.turn > said[0]]
        if not later:
            fails.append(("revised", f"{d.id} (turn {said[0]}): no later revision turn lists {d.revised_by}"))
        elif not any(s.text and all(norm(f) in norm(s.text) for f in facts) for s in later):
            fails.append(("revised", f"{d.id}: the revision turn does not state {facts!r}"))
    return fails


def static_checks(sample: Any, req: Any, ver: dict[str, Any] | None, ref: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(check, problem) pairs for the checks that need no test run (``ref`` None: snapshot unavailable)."""
    if ver is None:
        return [("grounding", "no verification row for this task")]
    fails = conversation_checks(sample, req, ver)
    if ref is None:
        fails.append(("grounding", "reference body not found in the snapshot"))
    else:
        fails += grounding_checks(req, ver, ref)
    return fails


def item_tokens(item: dict[str, Any]) -> tuple[str, str, str, str]:
    """(literal, counter-literal, token, counter-token) of a verification item (older rows: from
    ``facts`` and ``change``)."""
    literal = item.get("literal") or (item.get("facts") or [""])[0]
    token, counter = item.get("token"), item.get("counter_token")
    if token is None or counter is None:
        token, _, counter = (item.get("change") or "").partition(" -> ")
    counter_literal = item.get("counter_literal") or (literal.replace(token, counter, 1) if token and token in literal
                                                      else counter)
    return literal, counter_literal, token, counter


class ProjectView:
    """A project's pristine snapshot: text files, searchable text and function bodies (built once)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = dict(text_files(root))
        self.text = SnapshotText(self.files)
        self.siblings = SiblingIndex.of_tree(root, self.files)


def validate(opts: ValidateOptions) -> tuple[list[str], int]:
    """Run every check; returns the printed lines (FAIL lines, figures, summary) and the exit status."""
    from benchmarks.deveval.evaluate import run_body, run_reference
    from benchmarks.deveval.providers import get_snapshot, reference_function, task_file
    from benchmarks.deveval.splice import BLANK_BODY
    from benchmarks.deveval.tasks import PreparedEnvs, load_manifest, load_tasks
    from benchmarks.locoeval.loader import load_samples
    from benchmarks.sandbox import build_executor

    t0 = time.monotonic()
    samples = load_samples(opts.samples, ids=opts.ids)
    verification = load_verification(opts.verification or verification_path(opts.samples))
    data = opts.deveval_data or (opts.samples.parent / "deveval_tasks.jsonl")
    tasks = {t.namespace: t for t in load_tasks(data if Path(data).is_file() else None)}
    manifest = load_manifest(opts.manifest)

    failures: list[str] = []
    passed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    figures = Figures()
    lock = threading.Lock()
    views: dict[str, ProjectView] = {}

    def report(label: str, check: str, ok: bool, problem: str = "") -> None:
        with lock:
            total[check] += 1
            if ok:
                passed[check] += 1
            elif check not in VALIDITY_CHECKS or opts.enforce_validity:
                failures.append(f"FAIL {label}: {check}: {problem}")

    owners: dict[str, list[str]] = defaultdict(list)
    for s in samples:
        for r in s.requirements:
            owners[r.namespace].append(s.id)
    shared = {ns: ids for ns, ids in owners.items() if len(ids) > 1}
    for ns, ids in sorted(shared.items()):
        failures.append(f"FAIL {ns}: shared-task: scored in {len(ids)} samples ({', '.join(ids)})")

    executor = None if opts.static_only else build_executor({"name": opts.executor, "timeout_s": opts.timeout})
    prepared_env = PreparedEnvs(executor)
    env_lock = threading.Lock()
    outcomes = OutcomeCache(opts.resume) if opts.resume and executor is not None else None

    def validity(s: Any, r: Any, ver: dict[str, Any], root: Path, label: str, visible: tuple[dict, list]) -> None:
        blanked, hidden = visible
        with env_lock:
            if str(root) not in views:
                views[str(root)] = ProjectView(root)
        view = views[str(root)]
        rel = ver.get("file") or r.completion_path
        prose = next((st.text or "" for st in s.outline if st.kind == "requirement" and st.req_id == r.req_id), "")
        from benchmarks.locoeval.repo import _qualname

        doc = target_docstring(blanked.get(rel, ""), _qualname(r.namespace, rel))
        targets = [(row.get("file"), row.get("signature_line")) for (sid, _), row in verification.items() if sid == s.id]
        sib, where = view.siblings.most_similar(ref_body(root, r, s), skip=targets, exclude_files=hidden)
        kinds = set()
        lit_bad = []
        for iid, item in sorted(ver["items"].items()):
            kind = item.get("kind", "?")
            kinds.add(kind)
            literal, counter_literal, token, counter = item_tokens(item)
            hits = [h for frag in (literal, counter_literal) for h in
                    view.text.files_with(frag, exclude=[*hidden, *blanked], limit=1)
                    + [f for f, t in blanked.items() if indexed(f) and norm(frag) and norm(frag) in norm(t)]]
            with lock:
                figures.facts[kind] += 1
                figures.literal_in_snapshot[kind] += bool(hits)
                figures.token_in_docstring[kind] += bool(doc) and mentioned(item, literal, counter_literal, token,
                                                                            counter, doc)
                figures.token_in_requirement[kind] += mentioned(item, literal, counter_literal, token, counter, prose)
            if hits:
                lit_bad.append(f"{iid} ({kind}) in {hits[0]}")
        for did, d in sorted(ver["distractors"].items()):
            item = ver["items"].get(d.get("revised_by"), {})
            _, _, token, counter = item_tokens({**item, **{k: v for k, v in d.items() if k in ("token", "counter_token")}})
            dist = edit_distance(token, counter)
            with lock:
                figures.edits[item.get("kind", "?")].append(dist)
            report(label, "edit", dist >= MIN_EDIT, f"{did}: {token!r} -> {counter!r} is {dist} edit(s) away")
        with lock:
            figures.tasks += 1
            figures.docstrings_visible += bool(doc)
            figures.overlaps.append(docstring_overlap(prose, doc))
            for k in kinds:
                figures.sibling_max[k] = max(figures.sibling_max.get(k, 0.0), sib)
        report(label, "literal", not lit_bad, "; ".join(lit_bad))
        if s.target_docstrings == "remove":
            report(label, "docstring", not doc, "the target's docstring is in the snapshot the method sees")
        report(label, "sibling", sib < SIBLING_LIMIT, f"{where} has token similarity {sib:.2f}")

    def ref_body(root: Path, r: Any, s: Any) -> str:
        task = tasks[r.namespace]
        entry = manifest.for_repo_spec(s.repo_spec) or manifest.project(task.project_path)
        hint = entry.task(r.namespace) if entry and s.repo.get("version") == entry.version else None
        return textwrap.dedent(reference_function(root, task, hint)["body"])

    def one(job: tuple[Any, Any]) -> None:
        s, r = job
        label = f"{s.id}/{r.req_id} {r.namespace}"
        ver = verification.get((s.id, r.req_id))
        task = tasks.get(r.namespace)
        entry = manifest.for_repo_spec(s.repo_spec) or manifest.project(s.project_path)
        if task is None or entry is None:
            report(label, "reference", False, "no DevEval record" if task is None else "no manifest entry")
            return
        hint = entry.task(r.namespace) if s.repo.get("version") == entry.version else None
        try:
            root = Path(get_snapshot(s.repo_spec, manifest=manifest))
            ref = reference_function(root, task, hint)
            ref["file_lines"] = task_file(root, task).read_text(encoding="utf-8").splitlines()
            visible = visible_targets(root, s)
        except Exception as exc:  # noqa: BLE001 - reported as a failing check
            report(label, "grounding", False, f"snapshot: {type(exc).__name__}: {exc}")
            return
        static = static_checks(s, r, ver, ref)
        bad = {c for c, _ in static}
        for check, problem in static:
            report(label, check, False, problem)
        for check in STATIC_CHECKS:
            if check not in bad:
                report(label, check, True)
        if ver is None:
            return
        validity(s, r, ver, root, label, visible)
        if executor is None:
            return
        env = prepared_env(entry)

        scope = f"{opts.executor}:{entry.project_path}@{entry.version}"

        def run(body: str | None) -> str:
            key_body = REFERENCE_KEY if body is None else body
            if outcomes is not None and (known := outcomes.get(scope, r.namespace, key_body)):
                return known
            if body is None:
                out = run_reference(task, root, env=env, executor=executor).outcome
            else:
                out = run_body(task, root, body, env=env, executor=executor, hint=hint)[0].outcome
            if outcomes is not None and out in ("pass", "fail"):
                outcomes.put(scope, r.namespace, key_body, out)
            return out

        out = run(None)
        report(label, "reference", out == "pass", f"reference body: {out}")
        out = run(BLANK_BODY)
        report(label, "blank", out != "pass", "blank body passes")
        seen: dict[str, str] = {}
        for did, d in sorted(ver["distractors"].items()):
            out = seen[d["body"]] if d["body"] in seen else seen.setdefault(d["body"], run(d["body"]))
            report(label, "distractor", out == "fail", f"{did}: the distractor-following body "
                   + ("passes" if out == "pass" else f"is inconclusive ({out})"))
        for iid, it in sorted(ver["items"].items()):
            body = it.get("counterfactual_body")
            if body:
                out = seen[body] if body in seen else seen.setdefault(body, run(body))
                report(label, "counterfactual", out == "fail", f"{iid}: the counterfactual body ({it.get('change')}) "
                       + ("passes" if out == "pass" else f"is inconclusive ({out})"))
        alt = (ver.get("alternative") or {}).get("body")
        if alt and "alternative" not in bad:
            out = run(alt)
            report(label, "alternative", out == "pass", f"alternative body: {out}")
        if not opts.quiet:
            with lock:
                print(f"checked {label}", file=sys.stderr, flush=True)

    jobs = [(s, r) for s in samples for r in s.requirements]
    run_pool(jobs, one, workers=max(1, opts.workers), progress=False, raise_errors=True)

    share = figures.facts["compare"] / sum(figures.facts.values()) if figures.facts else 0.0
    if share > COMPARE_SHARE and opts.enforce_validity:
        failures.append(f"FAIL set: compare-share: comparisons are {share:.2f} of the facts (at most {COMPARE_SHARE})")
    lines = sorted(failures) + figures.table()
    parts = ", ".join(f"{c} {passed[c]}/{total[c]}" for c in CHECKS if total[c])
    note = "" if opts.enforce_validity else " (validity checks reported, not enforced)"
    lines.append(f"validate_locoeval: {len(jobs)} tasks in {len(samples)} samples checked; {len(failures)} failing "
                 f"checks{' (' + str(len(shared)) + ' shared tasks)' if shared else ''}; {parts}; "
                 f"{time.monotonic() - t0:.0f} s{' (static only)' if opts.static_only else ''}{note}")
    return lines, 1 if failures else 0
