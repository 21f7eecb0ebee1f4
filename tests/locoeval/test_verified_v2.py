"""The second verified-set generator (benchmarks/locoeval/verified/): facts, distractors from the
project's vocabulary, the validity measures, screening with an outcome cache, composition, and an
end-to-end generation over boltons with scripted test outcomes that the validator accepts."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmarks.locoeval.verified.distractors import MIN_EDIT, Vocabulary, edit_distance, string_shape
from benchmarks.locoeval.verified.facts import BodyFacts
from benchmarks.locoeval.verified.source import norm
from benchmarks.locoeval.verified.validity import (SiblingIndex, SnapshotText, docstring_overlap, token_in_text)

ROOT = Path(__file__).resolve().parents[2]
BOLTONS_DATA = ROOT / "tests" / "data" / "deveval" / "data.jsonl"

MODULE = '''
import os

LIMIT = 8
MAX_DEPTH = 16


class ParseError(Exception):
    pass


def helper(x):
    return x


def other_helper(x):
    return x * 2


class Box:
    def __init__(self):
        self.items = []
        self.capacity = 4

    def grow(self, n):
        return self.items

    def put(self, item, sep=", "):
        """Put an item."""
        if len(self.items) >= self.capacity:
            raise ParseError("box is full: %r" % (item,))
        self.items.append(item)
        return helper(sep.join(["alpha", "beta"]) + str(LIMIT * 3))


def check(value):
    if not value:
        raise ValueError("empty")
    if value == "x-y":
        raise KeyError(value)
    return os.path.join("usr", "local-lib")
'''


def _body_facts(name: str) -> BodyFacts:
    tree = ast.parse(MODULE)
    voc = Vocabulary.of_module(MODULE, tree)
    func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)
    start = func.body[1].lineno if ast.get_docstring(func) else func.body[0].lineno
    return BodyFacts(MODULE, func, start, func.end_lineno, voc, class_name="Box" if name == "put" else None)


def test_edit_distance_and_shapes():
    assert edit_distance("Cookie", "Cookies") == 1 and edit_distance("<", "<=") == 1
    assert edit_distance("ValueError", "KeyError") == 5 and edit_distance("", "ab") == 2
    assert string_shape("Content-Type")[0] == "dashed" and string_shape("%s=%s") == ("other", 2, "lower")
    assert string_shape("utf-8")[2] == "lower" and string_shape("Reply-To")[2] == "mixed"
    assert string_shape(", ")[0] == "symbol" and string_shape("")[0] == "symbol"


def test_alternatives_come_from_the_module_and_are_never_one_edit_away():
    bf = _body_facts("put")
    sites = {s.kind: s for s in bf.sites()}
    assert set(sites) >= {"raise", "compare", "string", "number", "call", "attribute", "constant"}
    assert [a for a, _ in sites["raise"].alternatives][:2] == ["KeyError", "ValueError"]   # raised in this module
    assert sites["constant"].token == "LIMIT" and sites["constant"].alternatives[0][0] == "MAX_DEPTH"
    assert sites["call"].alternatives  # another method of the class / module function
    assert all(a.startswith("self.") for a, _ in sites["attribute"].alternatives)
    for site in sites.values():
        for alt, _ in site.alternatives:
            if site.kind != "compare":
                assert edit_distance(alt, site.token) >= MIN_EDIT, (site.kind, site.token, alt)
    assert sites["compare"].alternatives == [("<", "negation")]


def test_fact_literal_counterfactual_and_statements():
    bf = _body_facts("put")
    site = next(s for s in bf.sites() if s.kind == "raise")
    fact = bf.fact(site, site.alternatives[0])
    assert fact.literal == 'raise ParseError("box is full: %r" % (item,))'
    assert fact.counter_literal == 'raise KeyError("box is full: %r" % (item,))'
    assert fact.condition == "len(self.items) >= self.capacity"
    ref = bf.reference_body()
    changed = [(a, b) for a, b in zip(ref.splitlines(), fact.counterfactual_body.splitlines()) if a != b]
    assert len(changed) == 1 and "KeyError" in changed[0][1]
    said = fact.statements("put")
    assert fact.literal in said["text"] and fact.counter_literal in said["distractor"]
    assert fact.literal in said["revision"] and "earlier" in said["revision"]
    cmp_site = next(s for s in bf.sites() if s.kind == "compare")
    cmp_fact = bf.fact(cmp_site, cmp_site.alternatives[0])
    assert cmp_fact.literal == "len(self.items) >= self.capacity"
    assert cmp_fact.counter_literal == "len(self.items) < self.capacity"
    assert all(ast.parse(bf.fact(s, s.alternatives[0]).counterfactual_body) for s in bf.sites())


def test_snapshot_text_sibling_index_and_prose_checks(tmp_path):
    files = {"a.py": "def f(x):\n    return x   +  1\n", "t/test_a.py": "assert f(1) == 2\n"}
    text = SnapshotText(files)
    assert text.files_with("return x + 1") == ["a.py"]
    assert text.files_with("return x + 1", exclude=["a.py"]) == []
    assert text.files_with("f(1)==2") == ["t/test_a.py"]
    body = "total = 0\nfor v in values:\n    total += v * 2\nreturn total\n"
    src = {"m.py": "def g(values):\n" + textwrap.indent(body, "    ")
           + "\ndef h(items):\n    return [i for i in items]\n"}
    idx = SiblingIndex.of_tree(tmp_path, src)
    sim, where = idx.most_similar(body.replace("2", "3"))
    assert sim > 0.9 and where == "m.py:1"
    assert idx.most_similar(body, skip=[("m.py", 1)])[0] < 0.7
    assert docstring_overlap("Return the sum of the doubled values", "") == 0.0
    assert docstring_overlap("Return the sum of the doubled values", "Sum of doubled values.") == 1.0
    assert token_in_text("ValueError", "raises a ValueError when empty")
    assert token_in_text("'utf-8'", "decoded as utf-8 text") and not token_in_text("'x'", "an x here")
    assert not token_in_text("<", "when a < b")


def test_blanking_can_remove_the_docstring_and_its_leading_comments():
    from benchmarks.locoeval.repo import blank_source

    src = "def f(a):\n    # keep a positive\n    \"\"\"Doc: uses ValueError.\"\"\"\n    # inner note\n    return a\n"
    kept = blank_source(src, [["f"]])
    assert "Doc: uses ValueError." in kept and "inner note" in kept and "return a" not in kept
    gone = blank_source(src, [["f"]], strip_docstrings=True)
    assert gone == "def f(a):\n    raise NotImplementedError\n"


def test_outcome_cache_is_append_only_and_resumable(tmp_path):
    from benchmarks.locoeval.verified.screening import OutcomeCache

    cache = OutcomeCache(tmp_path / "o.jsonl")
    cache.put("p@1", "ns.f", "return 1", "fail")
    cache.put("p@1", "ns.f", "return 2", "pass")
    with (tmp_path / "o.jsonl").open("a") as fh:
        fh.write('{"key": "trunc')  # a crash mid-write
    again = OutcomeCache(tmp_path / "o.jsonl")
    assert again.get("p@1", "ns.f", "return 1") == "fail" and again.get("p@1", "ns.f", "return 2") == "pass"
    assert again.get("p@2", "ns.f", "return 1") is None


def test_screening_keeps_consequential_facts_and_needs_a_distractor():
    from benchmarks.locoeval.verified.screening import Candidate, static_screen, test_screen

    bf = _body_facts("put")
    ref = {"body": bf.body_text, "signature": "    def put(self, item, sep=', '):"}
    cand = Candidate("m.Box.put", "P/m", ref, {"requirement": {"Functionality": "Put an item in the box."}})
    static_screen(cand, bf, in_snapshot=lambda frag: [], sibling=(0.2, "x.py:1"))
    assert cand.status == "pending" and len(cand.options) >= 4
    assert not any(f.token in ref["signature"] for f in cand.options if f.kind not in ("bool", "compare"))
    reference = bf.reference_body()
    runs = []

    def run(body: str) -> str:
        runs.append(body)
        return "pass" if body == reference or "ValueError" in body else "fail"

    test_screen(cand, run)
    assert cand.status == "kept" and 2 <= len(cand.kept) <= 3 and runs[0] == reference
    assert len({f.lines[0][0] for f in cand.kept}) == len(cand.kept)
    blocked = Candidate("m.Box.put", "P/m", ref, {})
    static_screen(blocked, bf, in_snapshot=lambda frag: ["other.py"], sibling=(0.2, ""))
    assert blocked.status == "static_drop" and not blocked.options
    similar = Candidate("m.Box.put", "P/m", ref, {})
    assert static_screen(similar, bf, in_snapshot=lambda f: [], sibling=(0.8, "y.py:3")).status == "static_drop"


def test_compare_share_cap_and_sample_sizes():
    import random

    from benchmarks.locoeval.verified.compose import plan_sizes
    from benchmarks.locoeval.verified.facts import Fact
    from benchmarks.locoeval.verified.generate import capped
    from benchmarks.locoeval.verified.screening import Candidate

    def fact(kind: str, line: int) -> Fact:
        return Fact(kind, [[line, line]], "x", "y", "a", "bb", "module", "", f"{kind}:{line}")

    cands = []
    for i in range(8):
        c = Candidate(f"m.f{i}", "P/m", {}, {})
        c.kept = [fact("raise", 1), fact("compare", 2)] + ([fact("compare", 3)] if i % 2 else []) if i < 4 \
            else [fact("raise", 1), fact("string", 2)]
        cands.append(c)
    used = capped(cands)
    facts = [f for v in used.values() for f in v]
    assert sum(f.kind == "compare" for f in facts) / len(facts) <= 0.25
    assert {f"m.f{i}" for i in range(4, 8)} <= set(used) and len(used) >= 6
    assert all(len(v) >= 2 for v in used.values())
    sizes = plan_sizes(23, random.Random(0))
    assert sum(sizes) == 23 and all(1 <= s <= 4 for s in sizes)


def test_filter_runs_reads_no_memory_records(tmp_path):
    from benchmarks.locoeval.verified.generate import solved_by

    run = tmp_path / "run"
    (run / "samples" / "s1").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"method": "no_memory"}))
    (run / "samples" / "s1" / "result.json").write_text(json.dumps(
        {"sample_id": "s1", "status": "ok", "tasks": [{"req_id": "R1", "namespace": "a.f", "passed": True},
                                                      {"req_id": "R2", "namespace": "a.g", "passed": False}]}))
    assert solved_by([run]) == {"a.f": str(run)}
    (run / "manifest.json").write_text(json.dumps({"method": "full"}))
    with pytest.raises(ValueError, match="expected 'no_memory'"):
        solved_by([run])


@pytest.fixture(scope="module")
def generated(tmp_path_factory, boltons_root):
    """A small v2 set over boltons, every counterfactual 'failing' except raise swaps to ValueError
    (scripted outcomes; no test run)."""
    from benchmarks.locoeval.verified.generate import Options, generate

    out = tmp_path_factory.mktemp("v2")

    def outcome(task, root, body):
        from benchmarks.deveval.providers import reference_function
        from benchmarks.deveval.tasks import load_manifest
        from benchmarks.locoeval.verified.source import dedent_body

        entry = load_manifest().project(task.project_path)
        ref = dedent_body(reference_function(root, task, entry.task(task.namespace))["body"])
        return "pass" if body == ref else "fail"

    stats = generate(Options(out_dir=out, deveval_data=BOLTONS_DATA, projects=["boltons"], tasks=8,
                             cache_dir=out / "cache", outcome=outcome))
    return out, stats


def test_generated_set_shape(generated):
    from benchmarks.locoeval.loader import load_samples

    out, stats = generated
    samples = load_samples(out / "samples.jsonl")
    assert stats["tasks"] >= 8 and stats["samples"] == len(samples)
    assert stats["samples_by_subset"].get("single-hop") == stats["samples_by_subset"].get("multi-hop")
    for s in samples:
        assert s.target_docstrings == "remove" and 30 <= len(s.outline) <= 69 and 1 <= len(s.requirements) <= 4
    rows = [json.loads(x) for x in (out / "samples.verification.jsonl").read_text().splitlines()]
    for row in rows:
        for d in row["distractors"].values():
            assert edit_distance(d["token"], d["counter_token"]) >= MIN_EDIT
            assert d["kind"] not in ("compare", "bool")
        assert 2 <= len(row["items"]) <= 3 and row["sibling_max"] < 0.7
    gen = json.loads((out / "generation.json").read_text())
    assert gen["projects"][0]["pypi_name"] == "boltons" and gen["statistics"]["tasks"] == stats["tasks"]
    screening = json.loads((out / "screening.json").read_text())
    assert sum(v["status"] == "kept" for v in screening.values()) == stats["tasks"]


def test_validator_accepts_the_generated_set_and_flags_a_leak(generated, tmp_path):
    out, _ = generated
    proc = subprocess.run([sys.executable, "-m", "scripts.validate_locoeval", "--samples", str(out / "samples.jsonl"),
                           "--deveval-data", str(BOLTONS_DATA), "--static-only", "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert " 0 failing checks" in lines[-1] and "literal " in lines[-1] and "sibling " in lines[-1]
    assert any(ln.startswith("validity figures") for ln in lines)
    all_row = next(ln for ln in lines if ln.strip().startswith("all "))
    assert all_row.split()[2] == "0"  # literal-in-snapshot
    # a copy whose first info turn's literal is planted in the repository: flagged, exit 1
    row = json.loads((out / "samples.verification.jsonl").read_text().splitlines()[0])
    item = next(iter(row["items"].values()))
    row["items"][next(iter(row["items"]))] = {**item, "literal": "return 0", "facts": item["facts"]}
    sample = next(json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()
                  if json.loads(x)["id"] == row["sample_id"])
    (tmp_path / "s.jsonl").write_text(json.dumps(sample) + "\n")
    rows = [json.loads(x) for x in (out / "samples.verification.jsonl").read_text().splitlines()
            if json.loads(x)["sample_id"] == row["sample_id"]]
    rows = [row if r["req_id"] == row["req_id"] else r for r in rows]
    (tmp_path / "s.verification.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = subprocess.run([sys.executable, "-m", "scripts.validate_locoeval", "--samples", str(tmp_path / "s.jsonl"),
                           "--deveval-data", str(BOLTONS_DATA), "--static-only", "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and ": literal: " in proc.stdout, proc.stdout[-3000:]


def test_visible_targets_match_the_runners_blanked_copy(generated, boltons_root, tmp_path):
    """The validator's in-memory view of the method's snapshot equals the copy the runner indexes."""
    from benchmarks.locoeval.loader import load_samples
    from benchmarks.locoeval.repo import blanked_copy
    from benchmarks.locoeval.runner import task_test_files
    from benchmarks.locoeval.verified.validity import visible_targets

    out, _ = generated
    sample = load_samples(out / "samples.jsonl")[0]
    blanked, hidden = visible_targets(boltons_root, sample)
    copy = blanked_copy(boltons_root, [(r.namespace, r.completion_path) for r in sample.requirements],
                        cache_dir=tmp_path, project_path=sample.project_path, hidden_files=task_test_files(sample),
                        strip_docstrings=True)
    for rel, text in blanked.items():
        assert (copy / rel).read_text(encoding="utf-8") == text
    assert hidden and not any((copy / h).exists() for h in hidden)
    for r in sample.requirements:
        assert norm(r.description[:40]) not in norm((copy / r.completion_path).read_text(encoding="utf-8")) \
            or not r.description


# ------------------------------------------------------------------ the shipped second set
SET2 = ROOT / "benchmarks" / "locoeval" / "verified" / "v2"


@pytest.fixture(scope="module")
def shipped():
    import warnings

    from benchmarks.locoeval.loader import SharedTaskWarning, load_samples

    with warnings.catch_warnings():
        warnings.simplefilter("error", SharedTaskWarning)  # a task in two samples fails here
        samples = load_samples(SET2 / "samples.jsonl")
    rows = [json.loads(x) for x in (SET2 / "samples.verification.jsonl").read_text().splitlines() if x.strip()]
    return samples, rows, json.loads((SET2 / "generation.json").read_text())


def test_shipped_set_shape(shipped):
    from collections import Counter

    from benchmarks.locoeval.schema import STEP_KINDS

    samples, rows, gen = shipped
    subsets = Counter(s.subset for s in samples)
    assert subsets["single-hop"] == subsets["multi-hop"] == len(samples) // 2
    stats = gen["statistics"]
    assert stats["samples"] == len(samples) and stats["tasks"] == len(rows) == sum(len(s.requirements) for s in samples)
    assert stats["repositories"] == len({s.project_path for s in samples})
    for s in samples:
        assert 30 <= len(s.outline) <= 69 and 1 <= len(s.requirements) <= 4, s.id
        assert s.target_docstrings == "remove" and all(st.text for st in s.outline), s.id
        assert set(STEP_KINDS) - {"noise"} <= {st.kind for st in s.outline}, s.id
    # noise turns quote other documented public functions; a one-module project may have none left
    assert sum(any(st.kind == "noise" for st in s.outline) for s in samples) >= 0.95 * len(samples)
    facts = [it for r in rows for it in r["items"].values()]
    assert sum(f["kind"] == "compare" for f in facts) <= 0.25 * len(facts)
    for r in rows:
        assert 2 <= len(r["items"]) <= 3 and r["sibling_max"] < 0.7
        for d in r["distractors"].values():
            assert edit_distance(d["token"], d["counter_token"]) >= MIN_EDIT and d["kind"] not in ("bool", "compare")


def test_shipped_set_uses_oracle_validated_tasks_once_with_their_records(shipped):
    from benchmarks.deveval.tasks import load_manifest, load_tasks
    from benchmarks.locoeval.verified.validate import conversation_checks

    samples, rows, _ = shipped
    used = [(s.project_path, r.namespace) for s in samples for r in s.requirements]
    assert len(used) == len(set(used))
    manifest = load_manifest()
    for s in samples:                 # the entry at the sample's pinned version (superseded or current)
        entry = manifest.for_repo_spec(s.repo_spec)
        assert entry is not None and entry.version == s.repo["version"], s.id
        for r in s.requirements:
            loc = entry.task(r.namespace)
            assert loc is not None and loc.usable, r.namespace
    assert {t.namespace for t in load_tasks(SET2 / "deveval_tasks.jsonl")} == {ns for _, ns in used}
    by_key = {(r["sample_id"], r["req_id"]): r for r in rows}
    label = re.compile(r"\bR\d+\.(I|D)\d+\b|distractor|\bgt[_ ]items?\b", re.I)
    for s in samples:
        assert s.meta["task_namespaces"] == [r.namespace for r in s.requirements]
        for r in s.requirements:
            assert conversation_checks(s, r, by_key[(s.id, r.req_id)]) == [], (s.id, r.req_id)
        assert not any(label.search(st.text) for st in s.outline), s.id


def test_config_points_at_the_shipped_second_set():
    from hydra import compose, initialize_config_dir

    from benchmarks.harness import resolve_data_path

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["benchmark=locoeval_verified_v2"])
    assert resolve_data_path(str(cfg.benchmark.samples)).resolve() == (SET2 / "samples.jsonl").resolve()
    assert resolve_data_path(str(cfg.benchmark.deveval_data)).resolve() == (SET2 / "deveval_tasks.jsonl").resolve()
    assert cfg.benchmark.name == "locoeval_verified_v2" and list(cfg.benchmark.uses_backbones) == ["backbone"]


@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)
def test_shipped_second_set_passes_full_validation():
    """Every task's tests (reference, blank, distractor, counterfactuals) and every validity check."""
    proc = subprocess.run([sys.executable, "-m", "scripts.validate_locoeval", "--samples", str(SET2 / "samples.jsonl"),
                           "--workers", "2", "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=4 * 3600)
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert " 0 failing checks" in proc.stdout.splitlines()[-1]
