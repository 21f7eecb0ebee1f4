"""The fork set's composition (benchmarks.locoeval.fork.compose) over self-made fork tasks: no screening,
no snapshot -- the tasks are made from the catalogue's own changes of a small module."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from benchmarks.locoeval.fork import compose as C
from benchmarks.locoeval.fork.catalogue import CATALOGUE_VERSION, Target, apply_changes, propose
from benchmarks.locoeval.fork.tests_derive import DERIVE_VERSION
from benchmarks.locoeval.loader import parse_sample

MODULE = '''"""A module of small functions with catalogue sites."""


def label(parts):
    """Parts joined."""
    return "-".join(parts)


def shout(name):
    """The name normalised."""
    text = name.strip()
    return text.lower()


def head(path):
    """The part before the first dot."""
    stem, _, _ = path.partition(".")
    return stem


def small(items):
    """Few items?"""
    if len(items) < 3:
        return True
    return False


def ordered(values):
    """The values in order."""
    return sorted(values)


def pad(code):
    """A zero-padded code."""
    return str(code).zfill(6)


def listing(names):
    """Names as a list."""
    return ", ".join(names)


def keys(data):
    """Keys of a mapping."""
    return dict(data, strict=True)
'''
FUNCS = ("label", "shout", "head", "small", "ordered", "pad", "listing", "keys")


def _row(project: str, name: str, module: str = MODULE) -> tuple[dict, dict]:
    target = Target.of_function(module, name, module_rel="pkg/mod.py")
    changes = [c for c in propose(target) if c.kind != "strip"][:1]
    assert changes, name
    row = {"namespace": f"pkg.mod.{name}", "project_path": project, "version": "1.0", "file": "pkg/mod.py",
           "signature_line": target.func.lineno, "body_start": target.body_start, "body_end": target.body_end,
           "changes": [c.record() for c in changes], "fork_body": apply_changes(target, changes),
           "public_body_sha256": "0" * 64, "status": "validated", "stage": "validated",
           "catalogue_version": CATALOGUE_VERSION, "derive_version": DERIVE_VERSION}
    record = {"namespace": row["namespace"], "tests": [f"tests/test_mod.py::test_{name}"],
              "requirement": {"Functionality": f"The function {name}. It converts the text to lowercase.",
                              "Arguments": ":param x: the input."}}
    return row, record


def test_a_strip_change_has_the_third_side_as_its_counterfactual():
    target = Target.of_function(MODULE, "shout")
    strip = next(c for c in propose(target) if c.kind == "strip")
    alt = C.counterfactual(strip, C.ExceptionFamily(), target, __import__("random").Random(0))
    assert alt is not None and alt[0] not in (strip.public_text, strip.fork_text) and alt[0].endswith("strip")


def _inputs(n_projects: int = 3):
    tasks, projects = [], {}
    for k in range(n_projects):
        path = f"Cat/proj{k}"
        projects[path] = C.ProjectInput(path, f"proj{k}", "1.0", None, symbols=[
            {"file": "pkg/other.py", "name": f"helper{j}", "kind": "function", "doc": f"Help with thing number {j}."}
            for j in range(12)])
        for name in FUNCS:
            row, record = _row(path, name)
            sig = MODULE.splitlines()[row["signature_line"] - 1]
            tasks.append(C.TaskInput(row, record, MODULE, sig))
    return tasks, projects


@pytest.fixture(scope="module")
def composed():
    tasks, projects = _inputs()
    return C.compose_set(tasks, projects, seed=7)


def test_composition_is_deterministic_for_a_seed_and_changes_with_it(composed):
    tasks, projects = _inputs()
    again = C.compose_set(tasks, projects, seed=7)
    assert json.dumps(again[:2], sort_keys=True) == json.dumps(composed[:2], sort_keys=True)
    other = C.compose_set(*_inputs(), seed=8)
    assert json.dumps(other[0], sort_keys=True) != json.dumps(composed[0], sort_keys=True)


def test_samples_follow_the_schema_and_the_paper_shape(composed):
    samples, verification, report = composed
    assert samples and report["composed"] == len(verification)
    for s in samples:
        parse_sample(s, where=s["id"])
        assert C.TURNS[0] <= len(s["outline"]) <= C.TURNS[1], s["id"]
        kinds = {t["kind"] for t in s["outline"]}
        assert {"requirement", "info", "distractor", "revision", "retrospective", "noise", "chat"} <= kinds
        assert [t["turn"] for t in s["outline"]] == list(range(1, len(s["outline"]) + 1))
        for r in s["requirements"]:
            turns = {t["kind"]: t["turn"] for t in s["outline"] if t.get("req_id") == r["req_id"]
                     and t["kind"] in ("distractor", "revision", "retrospective", "requirement")}
            assert turns["requirement"] < turns["distractor"] < turns["revision"] < turns["retrospective"]
    assert {s["subset"] for s in samples} == {"single-hop", "multi-hop"}
    assert {len(s["requirements"]) for s in samples} == {1}        # few tasks: one target a sample


def test_every_task_in_exactly_one_sample(composed):
    samples, verification, report = composed
    names = [r["namespace"] + "@" + s["project_path"] for s in samples for r in s["requirements"]]
    assert len(names) == len(set(names)) == report["validated"] - len(report["dropped"])
    assert {(v["sample_id"], v["req_id"]) for v in verification} == \
        {(s["id"], r["req_id"]) for s in samples for r in s["requirements"]}


def test_at_most_half_the_distractors_are_public_and_bodies_differ_from_the_fork(composed):
    samples, verification, report = composed
    modes = [d["mode"] for v in verification for d in v["distractors"].values()]
    assert modes.count("public") <= len(modes) // 2 and "counterfactual" in modes and "public" in modes
    for v in verification:
        assert [b["item_id"] for b in v["distractor_bodies"]] == list(v["distractors"])
        for b in v["distractor_bodies"]:
            d = v["distractors"][b["item_id"]]
            change = v["items"][d["revised_by"]]
            assert b["body"].strip() and C._parses(b["body"])
            assert b["body"] != fork_body_of(v) and d["fragment"] != change["fork_fragment"]
            if d["mode"] == "public":       # the library's own line and value
                assert d["fragment"] == change["fragment"] and d["value"] == change["public_value"]
            else:
                assert d["fragment"] != change["fragment"] and d["value"] != change["public_value"]


def fork_body_of(v: dict) -> str:
    """The fork body of a verification row, rebuilt from MODULE and the row's change records."""
    from benchmarks.locoeval.fork.catalogue import ForkChange

    name = v["namespace"].rsplit(".", 1)[-1]
    target = Target.of_function(MODULE, name)
    return apply_changes(target, [ForkChange.from_record(c) for c in v["items"].values()])


def test_distractor_and_info_turns_share_their_templates(composed):
    """No tell in the wording: both kinds are made by the same openers; the distractor is not always the
    turn after the requirement."""
    samples, _, _ = composed
    starts = {"info": set(), "distractor": set()}
    after_requirement = []
    for s in samples:
        out = s["outline"]
        for i, t in enumerate(out):
            if t["kind"] in starts:
                starts[t["kind"]].add(" ".join(t["text"].split()[:2]))
            if t["kind"] == "requirement":
                after_requirement.append(out[i + 1]["kind"] == "distractor")
    assert len(starts["info"] & starts["distractor"]) >= 3
    assert 0 < sum(after_requirement) < len(after_requirement)
    first = []            # per task: is the distractor its first detail turn?
    for s in samples:
        for r in s["requirements"]:
            details = [t["kind"] for t in s["outline"] if t.get("req_id") == r["req_id"]
                       and t["kind"] in ("info", "distractor")]
            first.append(details[0] == "distractor")
    assert 0.25 < sum(first) / len(first) < 0.75
    for s in samples:
        for r in s["requirements"]:
            for item in r["gt_items"] + r["distractors"]:
                assert not item["text"].startswith(("A decision for", "Correction for"))


def test_the_requirement_names_the_fork_value_and_the_edit_is_recorded(composed):
    samples, verification, _ = composed
    by_ns = {(v["sample_id"], v["req_id"]): v for v in verification}
    for s in samples:
        for r in s["requirements"]:
            v = by_ns[(s["id"], r["req_id"])]
            kinds = {c["kind"] for c in v["items"].values()}
            if "case" in kinds:
                assert "uppercase" in r["description"] and v["requirement_edits"]
            else:
                assert "lowercase" in r["description"] and not v["requirement_edits"]


def test_requirement_edits_by_kind():
    from benchmarks.locoeval.fork.catalogue import ForkChange

    def ch(kind, public_text, fork_text, public_value, fork_value):
        return ForkChange(kind=kind, key=f"{kind}:1:0", lines=[1, 1], start=0, end=1, public_text=public_text,
                          fork_text=fork_text, public_value=public_value, fork_value=fork_value, fragment="x",
                          fork_fragment="y")

    req = {"requirement": {"Functionality": "If the length is less than or equal to the width, return it. "
                                            "It finds the first occurrence of a dot. Less than four parts. "
                                            "Returns a comma-separated list.\nExample:\n>>> f(1)\n[1, 2]",
                           "Arguments": "Call `g` with `allow_dots` set to True."}}
    texts, edits = C.edit_requirement(req, [ch("strictness", "<=", "<", "<=", "<"),
                                            ch("side", "find", "rfind", ".find()", ".rfind()"),
                                            ch("bound", "4", "5", "4", "5"),
                                            ch("separator", "','", "';'", "','", "';'"),
                                            ch("flag", "True", "False", "allow_dots=True", "allow_dots=False")])
    f = texts["Functionality"]
    assert "less than the width" in f and "or equal" not in f
    assert "last occurrence" in f and "Less than five parts" in f and "semicolon-separated" in f
    assert ">>>" not in f and "allow_dots` set to False" in texts["Arguments"]
    assert len(edits) == 6 and edits[0]["why"].startswith("a doctest example")


def test_requirement_edits_of_the_newer_kinds():
    from benchmarks.locoeval.fork.catalogue import ForkChange

    def ch(kind, pv, fv):
        return ForkChange(kind=kind, key=f"{kind}:1:0", lines=[1, 1], start=0, end=1, public_text="a",
                          fork_text="b", public_value=pv, fork_value=fv, fragment="x", fork_fragment="y")

    req = {"requirement": {"Functionality": "Pages are rounded up to the ceiling, numbered starting from 0, "
                                            "with leading and trailing spaces removed.", "Arguments": ""}}
    texts, edits = C.edit_requirement(req, [ch("rounding", "ceil()", "floor()"), ch("base", "0", "1"),
                                            ch("strip", ".strip()", ".rstrip()")])
    assert texts["Functionality"] == ("Pages are rounded down to the floor, numbered starting from 1, "
                                      "with trailing spaces removed.")
    assert len(edits) == 3


def test_public_share_is_kept_by_tasks_without_a_distractor():
    """Tasks that only admit a public distractor beyond half of the distractors keep their decisions but get no
    distractor (and no revision), with a reason."""
    tasks, projects = _inputs(1)
    only_public = [t for t in tasks if json.loads(json.dumps(t.row))["changes"][0]["kind"] in ("side", "strictness")]
    extra = []
    for k in range(6):
        for t in only_public:
            row = dict(t.row, namespace=t.row["namespace"] + f"_{k}")
            extra.append(C.TaskInput(row, t.record, t.module_text, t.signature))
    samples, verification, report = C.compose_set(tasks + extra, projects, seed=1)
    modes = [d["mode"] for v in verification for d in v["distractors"].values()]
    assert modes.count("public") <= len(modes) // 2
    assert report["no_distractor"] and all("public share" in d["reason"] for d in report["no_distractor"])
    assert report["composed"] + len(report["dropped"]) == len(tasks + extra)
    bare = {d["namespace"] for d in report["no_distractor"]}
    for v in verification:
        assert (v["namespace"] in bare) == (not v["distractors"]) == (not v["distractor_bodies"])
    for sample in samples:
        for step in sample["outline"]:
            rid = step.get("req_id")
            ns = next((r["namespace"] for r in sample["requirements"] if r["req_id"] == rid), None)
            if ns in bare:
                assert step["kind"] not in ("distractor", "revision")
        assert 30 <= len(sample["outline"]) <= 69


def test_a_counterfactual_the_fork_tests_do_not_catch_is_no_distractor():
    """A scripted check (no test run) that says every ``.title()`` body passes the fork's tests."""
    tasks, projects = _inputs(2)
    seen = []

    def fails(namespace: str, body: str) -> bool:
        seen.append(namespace)
        return ".title()" not in body

    samples, verification, report = C.compose_set(tasks, projects, seed=3, fails=fails)
    values = [d["value"] for v in verification for d in v["distractors"].values()]
    assert ".title()" not in values and seen
    assert {r["value"] for r in report["counterfactuals_rejected"]} == {".title()"}
    assert report["distractor_check"] != "not run"
    plain = C.compose_set(*_inputs(2), seed=3)[1]
    assert ".title()" in [d["value"] for v in plain for d in v["distractors"].values()]


def test_multi_target_samples_once_the_tasks_allow_enough_samples():
    from types import SimpleNamespace

    def tasks(n):
        return [SimpleNamespace(namespace=f"m.f{i}", project=SimpleNamespace(project_path=f"P/p{i % 40}"))
                for i in range(n)]

    few = C.plan(tasks(100), seed=0)
    assert {len(g) for _, g, _ in few} == {1} and len(few) == 100
    many = C.plan(tasks(int(C.MIN_SAMPLES * 2.5)), seed=0)
    sizes = [len(g) for _, g, _ in many]
    assert max(sizes) > 1 and sum(sizes) == int(C.MIN_SAMPLES * 2.5)
    assert all(len({t.project.project_path for t in g}) == 1 for _, g, _ in many)
    subsets = [s for _, _, s in many]
    assert abs(subsets.count("single-hop") - subsets.count("multi-hop")) <= 1


def test_a_multi_hop_sample_with_several_targets():
    tasks, projects = _inputs(1)
    prepared = [C.prepare(t, projects["Cat/proj0"], __import__("random").Random(0)) for t in tasks[:4]]
    C.assign_distractors(prepared, __import__("random").Random(0))
    for seed in range(5):
        sample, ver = C.compose_sample("p-01-mh", "multi-hop", projects["Cat/proj0"], prepared,
                                       __import__("random").Random(seed))
        parse_sample(sample, where="p-01-mh")
        out = sample["outline"]
        first_detail = min(t["turn"] for t in out if t["kind"] in ("info", "distractor"))
        assert max(t["turn"] for t in out if t["kind"] == "requirement") < first_detail
        for r in sample["requirements"]:
            turn = {t["kind"]: t["turn"] for t in out if t.get("req_id") == r["req_id"]}
            assert turn["distractor"] < turn["revision"] < turn["retrospective"]
        assert len(ver) == 4 and C.TURNS[0] <= len(out) <= C.TURNS[1]


def test_validated_rows_take_the_newest_version_and_the_latest_row(tmp_path):
    row, _ = _row("Cat/p", "label")
    older = dict(row, namespace="pkg.mod.shout", catalogue_version=CATALOGUE_VERSION - 1)
    dropped_later = dict(row, namespace="pkg.mod.head")
    lines = [row, older, dropped_later, dict(dropped_later, status="dropped")]
    screen = tmp_path / "screen.jsonl"
    screen.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert [r["namespace"] for r in C.validated_rows(screen)] == ["pkg.mod.label"]
    with pytest.raises(C.ComposeError, match="not found"):
        C.validated_rows(tmp_path / "missing.jsonl")


def test_compose_command_names_a_missing_screen_file(tmp_path, capsys):
    from scripts.build_fork_set import main

    assert main(["compose", "--screen", str(tmp_path / "none.jsonl"), "--set-dir", str(tmp_path)]) == 2
    assert "none.jsonl" in capsys.readouterr().err


def test_a_row_whose_changes_do_not_give_its_fork_body_is_dropped():
    tasks, projects = _inputs(1)
    bad = tasks[0]
    bad.row = dict(bad.row, fork_body="return None")
    _, _, report = C.compose_set(tasks, projects, seed=0)
    assert any(d["namespace"] == bad.row["namespace"] and "fork_body" in d["reason"] for d in report["dropped"])


def test_the_shipped_set_is_consistent():
    """The committed set: every sample valid, every task once, at most half public, bodies recorded."""
    set_dir = Path(C.SET_DIR)
    if not (set_dir / "samples.jsonl").is_file():
        pytest.skip("no composed set shipped yet")
    samples = [json.loads(ln) for ln in (set_dir / "samples.jsonl").read_text().splitlines() if ln.strip()]
    verification = [json.loads(ln) for ln in (set_dir / "samples.verification.jsonl").read_text().splitlines()
                    if ln.strip()]
    names = [r["namespace"] for s in samples for r in s["requirements"]]
    assert len(names) == len(set(names)) == len(verification)
    modes = [d["mode"] for v in verification for d in v["distractors"].values()]
    assert modes.count("public") <= len(modes) // 2
    for s in samples:
        parse_sample(s, where=s["id"])
        assert C.TURNS[0] <= len(s["outline"]) <= C.TURNS[1]
    generation = json.loads((set_dir / "generation.json").read_text())
    bare = {d["namespace"] for d in generation.get("no_distractor", [])}
    for v in verification:
        if v["namespace"] in bare:  # only a public distractor was possible and the public share was full
            assert not v["distractors"] and not v["distractor_bodies"]
            continue
        assert len(v["distractor_bodies"]) == len(v["distractors"]) >= 1
        assert all(b["body"].strip() for b in v["distractor_bodies"])
        ast.parse("def f():\n" + "\n".join("    " + ln for ln in v["distractor_bodies"][0]["body"].splitlines()))
