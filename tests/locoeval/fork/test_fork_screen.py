"""The screening driver's bookkeeping: resumable results, loss counts, static filters, try order."""

from __future__ import annotations

import json

from benchmarks.locoeval.fork.catalogue import CATALOGUE_VERSION, Target, propose
from benchmarks.locoeval.fork.tests_derive import DERIVE_VERSION
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
    assert counts["tasks"] == 6
    assert counts["reached"] == {"screened": 4, "change_found": 2, "tests_derived": 1, "changes_observed": 1,
                                 "validated": 1}
    assert counts["lost"]["change_found"] == {"no catalogue site": 2}
    assert counts["lost"]["screened"] == {"reference fails under this executor (..)": 1}
    assert counts["lost"]["error"] == {"OSError: disk": 1}
    assert counts["projects"] == {"P/p": {"screened": 6, "validated": 1}}
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
