"""Check a scripted LoCoEval sample set against its verification file: every item grounded, every
distractor consequential and revised, every task solvable from its items.

    python -m scripts.validate_locoeval --samples PATH [--verification PATH] [--deveval-data PATH]
                                        [--manifest PATH] [--workers 2] [--executor local] [--static-only]
                                        [--ids SAMPLE_ID ...]

The verification file (default: ``<samples dir>/<samples stem>.verification.jsonl``) holds one row per
(sample, requirement): ``sample_id, req_id, namespace, file, body_start, body_end, reference_sha256,
items: {gt_id: {lines: [[a, b], ...], facts: [code strings], counterfactual_body?}},
distractors: {d_id: {revised_by, body}}, alternative: {body, transforms}``. The runner never reads
it; no method sees it. Checks, per task:

- ``reference``: the task's tests pass on the unmodified snapshot;
- ``blank``: they fail with the body replaced by ``raise NotImplementedError``;
- ``distractor``: they fail with each distractor-following body (b) (a timeout is inconclusive and
  counts as a failing check);
- ``counterfactual``: they fail with each gt item's counterfactual body (when given; same rule);
- ``alternative``: they pass with the alternative body (c), whose syntax tree differs from the reference's;
- ``grounding``: every range of every gt item lies inside the reference body and its lines contain the
  item's facts; the snapshot's reference body matches ``reference_sha256``;
- ``stated``: every gt item's facts appear verbatim (whitespace-normalised) in a scripted info or
  revision turn that lists the item, before the tasks;
- ``revised``: every distractor stated in the outline is followed by a later revision turn that lists
  its ``revised_by`` item and states that item's facts.

Set level: ``shared-task`` (a task in two samples). One line per failing check, then the summary line;
exit status 1 on any failure, 2 on unusable input.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import textwrap
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

CHECKS = ("reference", "blank", "distractor", "counterfactual", "alternative", "grounding", "stated", "revised")


def _norm(s: str) -> str:
    return re.sub(r"\s+", "", s)


def verification_path(samples: Path) -> Path:
    """``<dir>/<stem>.verification.jsonl`` beside a samples file."""
    return samples.with_name(samples.name.split(".")[0] + ".verification.jsonl")


def load_verification(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
        for key in ("sample_id", "req_id", "namespace", "items", "distractors", "alternative"):
            if key not in row:
                raise ValueError(f"{path}:{n}: missing field {key!r}")
        out[(row["sample_id"], row["req_id"])] = row
    return out


def grounding_checks(req: Any, ver: dict[str, Any], ref: dict[str, Any]) -> list[tuple[str, str]]:
    """Every gt item's ranges lie inside the reference body and contain its facts; the body is the verified one."""
    fails: list[tuple[str, str]] = []
    lines = ref["file_lines"]
    bs, be = ref["body_start"], ref["body_end"]
    sha = hashlib.sha256(ref["body"].encode()).hexdigest()
    if ver.get("reference_sha256") and ver["reference_sha256"] != sha:
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
            if _norm(f) not in _norm(text):
                fails.append(("grounding", f"{it.id}: fact {f!r} is not in its grounding lines"))
    alt = (ver.get("alternative") or {}).get("body", "")
    if not alt:
        fails.append(("alternative", "no alternative body"))
    else:
        try:
            same = ast.dump(ast.parse(alt)) == ast.dump(ast.parse(textwrap.dedent(ref["body"])))
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
        if not any(s.text and all(_norm(f) in _norm(s.text) for f in facts) for s in turns):
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
        elif not any(s.text and all(_norm(f) in _norm(s.text) for f in facts) for s in later):
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.validate_locoeval", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", required=True, type=Path, help="samples .jsonl/.json")
    ap.add_argument("--verification", type=Path, default=None, help="default: <dir>/<stem>.verification.jsonl")
    ap.add_argument("--deveval-data", type=Path, default=None,
                    help="DevEval records (default: deveval_tasks.jsonl beside the samples, else the fetched data.jsonl)")
    ap.add_argument("--manifest", type=Path, default=None, help="pypi_sources.json (default: the shipped one)")
    ap.add_argument("--executor", choices=["local", "docker"], default="local")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test run")
    ap.add_argument("--static-only", action="store_true", help="skip the test runs")
    ap.add_argument("--ids", nargs="*", default=None, help="check only these sample ids")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args(argv)

    from benchmarks.deveval.evaluate import run_body, run_reference
    from benchmarks.deveval.providers import get_snapshot, reference_function, task_file
    from benchmarks.deveval.splice import BLANK_BODY
    from benchmarks.deveval.tasks import env_spec_for, load_manifest, load_tasks
    from benchmarks.locoeval.loader import load_samples
    from benchmarks.sandbox import build_executor

    t0 = time.monotonic()
    if not args.samples.is_file():
        print(f"error: --samples {args.samples} does not exist", file=sys.stderr)
        return 2
    vpath = args.verification or verification_path(args.samples)
    if not vpath.is_file():
        print(f"error: verification file {vpath} does not exist (--verification)", file=sys.stderr)
        return 2
    try:
        samples = load_samples(args.samples, ids=args.ids)
        verification = load_verification(vpath)
        data = args.deveval_data or (args.samples.parent / "deveval_tasks.jsonl")
        tasks = {t.namespace: t for t in load_tasks(data if Path(data).is_file() else None)}
        manifest = load_manifest(args.manifest)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    failures: list[str] = []
    passed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    lock = threading.Lock()

    def report(label: str, check: str, ok: bool, problem: str = "") -> None:
        with lock:
            total[check] += 1
            if ok:
                passed[check] += 1
            else:
                failures.append(f"FAIL {label}: {check}: {problem}")

    # set level: a task in two samples
    owners: dict[str, list[str]] = defaultdict(list)
    for s in samples:
        for r in s.requirements:
            owners[r.namespace].append(s.id)
    shared = {ns: ids for ns, ids in owners.items() if len(ids) > 1}
    for ns, ids in sorted(shared.items()):
        failures.append(f"FAIL {ns}: shared-task: scored in {len(ids)} samples ({', '.join(ids)})")

    jobs = []
    for s in samples:
        for r in s.requirements:
            jobs.append((s, r))
    executor = None if args.static_only else build_executor({"name": args.executor, "timeout_s": args.timeout})
    envs: dict[str, Any] = {}
    env_lock = threading.Lock()

    def one(job) -> None:
        s, r = job
        label = f"{s.id}/{r.req_id} {r.namespace}"
        ver = verification.get((s.id, r.req_id))
        task = tasks.get(r.namespace)
        entry = manifest.for_repo_spec(s.repo_spec) or manifest.project(s.project_path)
        if task is None or entry is None:
            report(label, "reference", False, "no DevEval record" if task is None else "no manifest entry")
            return
        hint = entry.task(r.namespace) if s.repo.get("version") == entry.version else None
        ref = None
        try:
            root = get_snapshot(s.repo_spec, manifest=manifest)
            ref = reference_function(root, task, hint)
            ref["file_lines"] = task_file(root, task).read_text(encoding="utf-8").splitlines()
        except Exception as exc:  # noqa: BLE001 - reported as a failing check
            report(label, "grounding", False, f"snapshot: {type(exc).__name__}: {exc}")
            return
        static = static_checks(s, r, ver, ref)
        bad = {c for c, _ in static}
        for check, problem in static:
            report(label, check, False, problem)
        for check in ("grounding", "stated", "revised"):
            if check not in bad:
                report(label, check, True)
        if executor is None or ver is None:
            return
        with env_lock:
            if entry.project_path not in envs:
                envs[entry.project_path] = env_spec_for(entry)
                executor.prepare(envs[entry.project_path])
        env = envs[entry.project_path]

        def run(body: str | None) -> str:
            if body is None:
                return run_reference(task, root, env=env, executor=executor).outcome
            return run_body(task, root, body, env=env, executor=executor, hint=hint)[0].outcome

        out = run(None)
        report(label, "reference", out == "pass", f"reference body: {out}")
        out = run(BLANK_BODY)
        report(label, "blank", out != "pass", "blank body passes")
        seen: dict[str, str] = {}
        for did, d in sorted(ver["distractors"].items()):
            out = seen.setdefault(d["body"], run(d["body"]))
            report(label, "distractor", out == "fail", f"{did}: the distractor-following body "
                   + ("passes" if out == "pass" else f"is inconclusive ({out})"))
        for iid, it in sorted(ver["items"].items()):
            body = it.get("counterfactual_body")
            if body:
                out = seen[body] if body in seen else seen.setdefault(body, run(body))
                report(label, "counterfactual", out == "fail", f"{iid}: the counterfactual body ({it.get('change')}) "
                       + ("passes" if out == "pass" else f"is inconclusive ({out})"))
        if "alternative" not in bad:
            out = run(ver["alternative"]["body"])
            report(label, "alternative", out == "pass", f"alternative body: {out}")
        if not args.quiet:
            with lock:
                print(f"checked {label}", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        list(pool.map(one, jobs))

    for line in sorted(failures):
        print(line)
    parts = ", ".join(f"{c} {passed[c]}/{total[c]}" for c in CHECKS if total[c])
    n_fail = len(failures)
    print(f"validate_locoeval: {len(jobs)} tasks in {len(samples)} samples checked; {n_fail} failing checks"
          f"{' (' + str(len(shared)) + ' shared tasks)' if shared else ''}; {parts}; "
          f"{time.monotonic() - t0:.0f} s{' (static only)' if args.static_only else ''}")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
