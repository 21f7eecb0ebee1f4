"""The screening driver's bookkeeping: resumable results, loss counts, static filters, try order."""

from __future__ import annotations

import json

import pytest

from benchmarks.locoeval.fork.catalogue import CATALOGUE_VERSION, Target, propose
from benchmarks.locoeval.fork.tests_derive import DERIVE_VERSION
from fork_fixtures import fork_env, tiny_project  # noqa: F401 (fixtures)
from benchmarks.locoeval.fork.screen import (STAGES, append_result, done_namespaces, loss_counts, static_filter,
                                             try_order, v2_namespaces)


def _row(ns, status, stage, reason="", version=CATALOGUE_VERSION, project="P/p"):
    return {"namespace": ns, "status": status, "stage": stage, "reason": reason, "project_path": project,
            "catalogue_version": version, "derive_version": DERIVE_VERSION}


def test_results_resume_and_count_losses_per_step(tmp_path):
    out = tmp_path / "screen.jsonl"
    rows = [_row("a", "validated", "validated"), _row("b", "dropped", None, "reference fails under this executor (timeout)"),
            _row("c", "dropped", "screened", "no catalogue site"), _row("d", "dropped", "change_found", "tests: round 1: x"),
            _row("e", "error", None, "OSError: disk"), _row("f", "dropped", "screened", "no catalogue site", version=0)]
    for r in rows:
        append_result(out, r)
    with out.open("a") as fh:
        fh.write('{"namespace": "g", "status"')            # a truncated last line
    assert done_namespaces(out) == {"a", "b", "c", "d", "e"}          # f: an older catalogue
    assert done_namespaces(out, retry_errors=True) == {"a", "b", "c", "d"}
    counts = loss_counts(out)
    assert counts["tasks"] == 5 and counts["older_rows"] == 1          # f: only a row of an older catalogue
    assert counts["reached"] == {"screened": 3, "change_found": 2, "tests_derived": 1, "changes_observed": 1,
                                 "validated": 1}
    assert counts["lost"]["change_found"] == {"no catalogue site": 1}
    assert counts["lost"]["screened"] == {"reference fails under this executor (..)": 1}
    assert counts["lost"]["error"] == {"OSError: disk": 1}
    assert counts["projects"] == {"P/p": {"screened": 5, "validated": 1}}
    assert list(counts["reached"]) == list(STAGES)
    append_result(out, _row("c", "validated", "validated"))       # a later row of a task wins
    assert loss_counts(out)["reached"]["validated"] == 2
    assert json.loads(out.read_text().splitlines()[-1])["namespace"] == "c"


SRC = '''def f(parts, limit):
    """Doc."""
    if len(parts) > 3:
        return "|".join(parts)
    return ",".join(parts)
'''


def test_static_filter_drops_fragments_in_the_snapshot_and_values_the_requirement_names():
    changes = propose(Target.of_function(SRC, "f"))
    assert {c.public_value for c in changes if c.kind == "separator"} == {"'|'", "','"}
    kept, dropped = static_filter(changes, "Joins the parts with ',' characters.", lambda frag: [])
    assert dict(dropped) == {"requirement names the public value": 1}
    assert [c.public_value for c in kept if c.kind == "separator"] == ["'|'"]
    kept, dropped = static_filter(changes, "Joins the parts.", lambda frag: ["other.py"] if '";".join' in frag else [])
    assert dict(dropped) == {"fork fragment in snapshot": 1}
    assert [c.public_value for c in kept if c.kind == "separator"] == ["'|'"]
    kept, dropped = static_filter(changes, "At most 3 parts are joined.", lambda frag: [])
    assert dict(dropped) == {"requirement names the public value": 1}
    assert "bound" not in {c.kind for c in kept} and "strictness" in {c.kind for c in kept}


def test_try_order_takes_kinds_in_turn():
    changes = propose(Target.of_function(SRC, "f"))
    kinds = [c.kind for c in try_order(changes)]
    assert len(kinds) == len(changes)
    first_round = kinds[:len(set(kinds))]
    assert len(set(first_round)) == len(first_round)


def test_v2_sites_are_read_from_the_shipped_set():
    names = v2_namespaces()
    assert len(names) == 241 and len(set(names)) == 241


def _tiny_record(root, ns="tinyfork.mod.join", requirement="Join the parts."):
    import ast as pyast

    text = (root / "tinyfork" / "mod.py").read_text()
    func = next(n for n in pyast.parse(text).body if isinstance(n, pyast.FunctionDef) and n.name == ns.rsplit(".", 1)[-1])
    start = func.body[1].lineno if isinstance(func.body[0], pyast.Expr) else func.body[0].lineno
    return {"namespace": ns, "type": "function", "project_path": "Tiny/tiny", "completion_path": "Tiny/tiny/tinyfork/mod.py",
            "signature_position": [func.lineno, func.lineno], "body_position": [start, func.end_lineno],
            "tests": ["tests/test_mod.py::test_join", "tests/test_mod.py::test_too_long",
                      "tests/test_mod.py::TestJoin::test_equal"], "indent": 4,
            "requirement": {"Functionality": requirement, "Arguments": ""}}


def _screener(tmp_path, root, env, record):
    from types import SimpleNamespace

    from benchmarks.locoeval.fork.screen import ForkProject, ScreenOptions, Screener

    entry = SimpleNamespace(project_path="Tiny/tiny", version="0", task=lambda ns: None)
    s = Screener(ScreenOptions(out=tmp_path / "screen.jsonl", timeout=60, work_root=tmp_path / "work"))
    s.records = {record["namespace"]: record}
    s.projects["Tiny/tiny"] = ForkProject(entry, root, env)
    return s, entry


def test_a_task_of_the_tiny_project_is_screened_to_validated(tmp_path, tiny_project, fork_env):
    rec = _tiny_record(tiny_project)
    s, entry = _screener(tmp_path, tiny_project, fork_env, rec)
    row = s.screen_task(entry, rec["namespace"])
    assert row["status"] == "validated", row.get("reason")
    assert row["stage"] == "validated" and row["test_scope"] == "files"
    assert {c["kind"] for c in row["changes"]} <= {"bound", "strictness", "separator", "exception"}
    assert 1 <= len(row["changes"]) <= 3
    assert all(v["ok"] for v in row["checks"].values())
    assert "tests/test_mod.py" in row["derivation"]["diffs"] and "tests/test_mod.py" in row["hidden_files"]
    assert all(c["fork_text"] in row["fork_body"] for c in row["changes"] if c["kind"] != "order")


def test_a_requirement_naming_every_public_value_stops_at_the_static_filter(tmp_path, fork_env):
    from fork_fixtures import make_tiny_project

    module = ('def join(parts):\n    """Join."""\n    return ",".join(parts)\n')
    root = make_tiny_project(tmp_path / "p", module=module, tests="from tinyfork.mod import join\n\n\n"
                             "def test_join():\n    assert join(['a']) == 'a'\n", other=None)
    rec = _tiny_record(root, requirement="Joins the parts with ',' between them.")
    rec["tests"] = ["tests/test_mod.py::test_join"]
    s, entry = _screener(tmp_path, root, fork_env, rec)
    row = s.screen_task(entry, rec["namespace"])
    assert (row["status"], row["stage"]) == ("dropped", "screened")
    assert row["reason"] == "every catalogue change fails a static filter"
    assert row["static_dropped"] == {"requirement names the public value": 1}


def test_the_script_counts_and_shows_rows_and_names_a_missing_file(tmp_path, capsys):
    from scripts.build_fork_set import main

    out = tmp_path / "screen.jsonl"
    assert main(["counts", "--out", str(out)]) == 2
    assert f"results file {out} not found (option --out)" in capsys.readouterr().err
    row = {**_row("a.f", "validated", "validated"),
           "changes": [{"kind": "sort", "fragment": "sorted(x)", "fork_fragment": "sorted(x, reverse=True)",
                        "statement": "S", "public_statement": "P", "revision": "R"}],
           "checks": {"fork_passes": {"ok": True, "detail": "pass, pass"}},
           "derivation": {"diffs": {"tests/t.py": "--- a/tests/t.py\n+++ b/tests/t.py\n"}}}
    append_result(out, row)
    assert main(["counts", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["reached"]["validated"] == 1
    assert main(["show", "a.f", "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "[sort] sorted(x)  ->  sorted(x, reverse=True)" in shown and "check fork_passes: ok" in shown
    assert "diff of tests/t.py:" in shown
    assert main(["show", "b.g", "--out", str(out)]) == 2
    assert "no row for 'b.g'" in capsys.readouterr().err


def _carry_prev(**kw):
    base = {"namespace": "a.f", "status": "dropped", "stage": "screened", "reason": "no catalogue change changes a "
            "test outcome (2 tried)", "version": "1.0", "file": "m.py", "body_start": 3, "body_end": 5,
            "public_body_sha256": "h", "catalogue_version": CATALOGUE_VERSION - 1, "derive_version": DERIVE_VERSION}
    return {**base, **kw}


def test_can_carry_needs_the_same_proposals_and_a_derivation_the_row_did_not_use():
    from benchmarks.locoeval.fork.screen import CARRY_VALIDATED_FROM, can_carry, carried_row, proposal_keys

    proposed = propose(Target.of_function(SRC, "f"))
    keys = proposal_keys(proposed)
    located = {"version": "1.0", "file": "m.py", "body_start": 3, "body_end": 5, "public_body_sha256": "h"}
    assert can_carry(_carry_prev(proposed_changes=keys), located, proposed)
    other = [[k, t + " "] if i == 0 else [k, t] for i, (k, t) in enumerate(keys)]
    assert not can_carry(_carry_prev(proposed_changes=other), located, proposed)      # another fork text
    assert not can_carry(_carry_prev(proposed_changes=keys[1:]), located, proposed)   # a change more now
    # rows made before proposed_changes was recorded: a comparable catalogue and the same number
    assert can_carry(_carry_prev(catalogue_version=6, proposed=len(proposed)), located, proposed) \
        == (CATALOGUE_VERSION != 6)
    assert not can_carry(_carry_prev(catalogue_version=6, proposed=len(proposed) - 1), located, proposed)
    assert not can_carry(_carry_prev(catalogue_version=5, proposed=len(proposed)), located, proposed)
    # only the derivation changed: rows that stopped before deriving tests carry, the others do not
    now = {"catalogue_version": CATALOGUE_VERSION, "derive_version": DERIVE_VERSION - 1, "proposed_changes": keys}
    assert not can_carry(_carry_prev(**now), located, proposed)      # the single-change runs are of the derivation
    assert can_carry(_carry_prev(**now, reason="no catalogue site"), located, proposed)
    # a validated fork: kept when the catalogue only adds proposals and its derivation's forks are kept
    valid = {"status": "validated", "stage": "validated", "reason": ""}
    assert can_carry(_carry_prev(**valid, proposed_changes=keys[1:]), located, proposed)
    assert not can_carry(_carry_prev(**valid, proposed_changes=other), located, proposed)
    assert can_carry(_carry_prev(**{**now, **valid, "derive_version": CARRY_VALIDATED_FROM[0]}), located, proposed)
    assert not can_carry(_carry_prev(**{**now, **valid, "derive_version": min(CARRY_VALIDATED_FROM) - 1}),
                         located, proposed)
    assert not can_carry(_carry_prev(**now, reason="reference fails under this executor (fail)"), located, proposed)
    assert not can_carry(_carry_prev(**now, stage="change_found", reason="tests: x"), located, proposed)
    assert not can_carry(_carry_prev(**{**now, "derive_version": DERIVE_VERSION}), located, proposed)  # current
    # never an error, another release or another body
    assert not can_carry(_carry_prev(status="error", proposed_changes=keys), located, proposed)
    assert not can_carry(_carry_prev(proposed_changes=keys, version="1.1"), located, proposed)
    assert not can_carry(_carry_prev(proposed_changes=keys, public_body_sha256="g"), located, proposed)
    assert not can_carry(None, located, proposed)
    row = carried_row(_carry_prev(proposed_changes=keys, seconds=12.5), proposed)
    assert row["carried_from"] == {"catalogue_version": CATALOGUE_VERSION - 1, "derive_version": DERIVE_VERSION,
                                   "seconds": 12.5}
    assert "catalogue_version" not in row and row["reason"].startswith("no catalogue change")


def test_a_carried_task_runs_no_test_and_a_changed_one_is_screened_again(tmp_path, tiny_project, fork_env,
                                                                        monkeypatch):
    from benchmarks.locoeval.fork import screen as screen_mod
    from benchmarks.locoeval.fork.validate import CHECKS

    rec = _tiny_record(tiny_project)
    s, entry = _screener(tmp_path, tiny_project, fork_env, rec)
    ns = rec["namespace"]
    located = s.locate(entry, ns)

    def no_run(*a, **k):
        raise AssertionError("a test ran")
    monkeypatch.setattr(screen_mod, "record_run", no_run)
    prev = {**located.row, "namespace": ns, "status": "validated", "stage": "validated", "reason": "",
            "version": "0", "changes": [{"kind": "bound"}], "seconds": 40.0, "checks": {c: {"ok": True} for c in CHECKS},
            "catalogue_version": CATALOGUE_VERSION - 1, "derive_version": DERIVE_VERSION}
    row = s.screen_task(entry, ns, previous=prev)
    assert row["carried_from"]["catalogue_version"] == CATALOGUE_VERSION - 1
    assert row["status"] == "validated" and row["changes"] == [{"kind": "bound"}]
    changed = {**prev, "proposed_changes": [[k, t + " "] for k, t in prev["proposed_changes"]]}   # other fork texts
    with pytest.raises(AssertionError, match="a test ran"):        # screened again: its first test run
        s.screen_task(entry, ns, previous=changed)
    # the driver appends the carried row with the current versions; the dry estimate counts it
    out = tmp_path / "screen.jsonl"
    append_result(out, prev)
    monkeypatch.setattr(screen_mod, "candidates", lambda *a, **k: [(entry, ns, "manifest")])
    s.opts.out = out
    assert screen_mod.site_counts(s.opts, screener=s)["next_screen"] == {"would be carried": 1}
    assert s.run() == {"carried": 1}
    last = json.loads(out.read_text().splitlines()[-1])
    assert (last["catalogue_version"], last["derive_version"]) == (CATALOGUE_VERSION, DERIVE_VERSION)
    assert last["carried_from"]["seconds"] == 40.0 and last["status"] == "validated"
    assert done_namespaces(out) == {ns}
    est = screen_mod.site_counts(s.opts, screener=s)
    assert est["next_screen"] == {"current row": 1} and est["with_site"] == 1 and est["repositories"] == 1
    assert set(est["per_kind"]) <= {"bound", "strictness", "separator", "exception", "missing", "strip", "empty"}


def test_change_trials_pass_over_overlaps_keep_them_for_later_and_stop_at_max_tries():
    from types import SimpleNamespace

    from benchmarks.locoeval.fork.screen import ChangeTrials

    changes = [SimpleNamespace(key=k, kind="bound", public_value="1", fork_value="2", lines=(i, i))
               for i, k in enumerate("abcde")]
    observed = {"a": False, "b": True, "c": True, "d": True, "e": True}
    ran = []

    def run(ch):
        ran.append(ch.key)
        return observed[ch.key], "fail" if observed[ch.key] else "pass"
    import benchmarks.locoeval.fork.screen as screen_mod
    trials = ChangeTrials(changes, max_tries=4, run=run)
    orig = screen_mod.overlapping
    screen_mod.overlapping = lambda x, y: {x.key, y.key} == {"b", "c"}
    try:
        first = trials.next_observed(avoid=[])
        second = trials.next_observed(avoid=[first])           # c overlaps b: passed over, kept
        third = trials.next_observed(avoid=[])                  # later, alone: c is tried
    finally:
        screen_mod.overlapping = orig
    assert (first.key, second.key, third.key) == ("b", "d", "c")
    assert ran == ["a", "b", "d", "c"] and trials.runs == 4
    assert trials.next_observed(avoid=[]) is None                  # max_tries reached: e never runs
    assert [t["observed"] for t in trials.tried] == [False, True, True, True]


def test_judging_ids_add_the_rewritten_tests_no_task_id_covers():
    from benchmarks.locoeval.fork.validate import judging_ids

    rewrites = [{"test": "t.py::test_a"}, {"test": "t.py::TestB::test_c[1-x]"}, {"test": "t.py::TestB::test_c[2]"},
                {"test": "t.py::test_z"}, {"test": ""}]
    assert judging_ids(["t.py::test_a", "t.py::TestB::test_d"], rewrites) == \
        ["t.py::test_a", "t.py::TestB::test_d", "t.py::TestB::test_c", "t.py::test_z"]
    assert judging_ids(["t.py::TestB"], [{"test": "t.py::TestB::test_c"}]) == ["t.py::TestB"]


def test_a_fork_whose_first_changes_do_not_derive_tries_the_next_change_alone(tmp_path, tiny_project, fork_env,
                                                                             monkeypatch):
    from benchmarks.locoeval.fork import screen as screen_mod
    from benchmarks.locoeval.fork.tests_derive import derive_tests as real_derive

    rec = _tiny_record(tiny_project)
    s, entry = _screener(tmp_path, tiny_project, fork_env, rec)
    s.opts.max_changes = 1
    calls = []

    def derive(**kw):                       # the first change's tests cannot be derived (as when the fork crashes)
        calls.append(kw["fork_text"])
        if len(calls) == 1:
            from benchmarks.locoeval.fork.tests_derive import Derivation
            return Derivation(ok=False, reason="round 1: t::x fails without a recorded assertion", runs=2)
        return real_derive(**kw)
    monkeypatch.setattr(screen_mod, "derive_tests", derive)
    row = s.screen_task(entry, rec["namespace"])
    attempts = row["derivation_attempts"]
    assert len(attempts) >= 2 and attempts[0]["ok"] is False and "without a recorded assertion" in attempts[0]["reason"]
    assert attempts[-1]["ok"] is (row["status"] == "validated")
    assert row["status"] == "validated", row.get("reason")
    assert [c["key"] for c in row["changes"]] == attempts[-1]["changes"] != attempts[0]["changes"]
    assert sum(t["observed"] for t in row["tried"]) == len(attempts)
    assert row["judging_ids"][:len(rec["tests"])] == rec["tests"]


def test_a_namespaces_file_selects_and_orders_the_tasks(tmp_path, tiny_project, fork_env, monkeypatch, capsys):
    from benchmarks.locoeval.fork import screen as screen_mod
    from scripts.build_fork_set import main

    assert main(["screen", "--namespaces-file", str(tmp_path / "none.txt"), "--out", str(tmp_path / "s.jsonl")]) == 2
    assert f"namespaces file {tmp_path / 'none.txt'} not found (option --namespaces-file)" in capsys.readouterr().err
    rec = _tiny_record(tiny_project)
    s, entry = _screener(tmp_path, tiny_project, fork_env, rec)
    monkeypatch.setattr(screen_mod, "candidates",
                        lambda *a, **k: [(entry, "a.x", "manifest"), (entry, "b.y", "manifest"), (entry, "c.z", "v2")])
    seen = []
    monkeypatch.setattr(s, "screen_task", lambda e, ns, previous=None: seen.append(ns) or
                        {"status": "dropped", "stage": None, "reason": "r"})
    s.opts.namespaces = ["c.z", "a.x", "not.a.candidate"]
    assert s.run() == {"dropped": 2}
    assert seen == ["c.z", "a.x"]


def test_a_carried_validated_row_without_the_current_checks_is_validated_again(tmp_path, tiny_project, fork_env):
    from benchmarks.locoeval.fork.screen import CARRY_VALIDATED_FROM
    from benchmarks.locoeval.fork.validate import CHECKS

    rec = _tiny_record(tiny_project)
    s, entry = _screener(tmp_path, tiny_project, fork_env, rec)
    ns = rec["namespace"]
    row = s.screen_task(entry, ns)
    assert row["status"] == "validated", row.get("reason")
    old = {**row, "namespace": ns, "version": "0", "derive_version": CARRY_VALIDATED_FROM[0],
           "catalogue_version": CATALOGUE_VERSION,
           "checks": {k: v for k, v in row["checks"].items() if k != "constant_fails"}}
    again = s.screen_task(entry, ns, previous=old)
    assert again["status"] == "validated" and set(CHECKS) <= set(again["checks"])
    assert again["revalidated"] == {"checks_before": sorted(set(CHECKS) - {"constant_fails"})}
    assert again["changes"] == row["changes"] and again["runs"] > 0 and "carried_from" in again
    # a row whose changes the catalogue no longer proposes is dropped, with its reason
    odd = {**old, "changes": [{**row["changes"][0], "fork_text": row["changes"][0]["fork_text"] + " "}]}
    gone = s.screen_task(entry, ns, previous=odd)
    assert (gone["status"], gone["reason"]) == ("dropped", "revalidation: the current catalogue does not propose "
                                                           "the row's changes")
