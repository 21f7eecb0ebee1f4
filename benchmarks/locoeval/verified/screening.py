"""Screening one DevEval task for the verified set: static filters first, then test runs.

Static (no test run; see ``validity``): the reference body has no sibling with token similarity
>= 0.7; every fact option's literal and counter-literal are absent from the snapshot a method
would see (own file blanked and without the docstring, the judging test files removed), its
tokens absent from the signature, its counterfactual body parses. An option whose token or
counter-token the requirement text mentions is kept but cannot be the distractor.

Test runs (cached on disk, resumable): the reference body passes under this executor; fact
options are tried kind by kind in turn (vocabulary-based kinds first, comparisons last), never two
on one source line or one whose fragment another's turn states, and a fact is kept only if its
counterfactual body FAILS the tests (a timeout is inconclusive and not kept). A task is usable
with at least two kept facts, one of them vocabulary-based and not mentioned by the requirement
(it becomes the distractor).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.locoeval.verified.facts import BodyFacts, Fact, FactSite
from benchmarks.locoeval.verified.source import dedent_body, norm
from benchmarks.locoeval.verified.validity import SIBLING_LIMIT, token_in_text
from reconmem.platform import pyast

MAX_FACTS = 3
MIN_FACTS = 2
MAX_TRIES = 6
SITE_OPTIONS = 2
VOCABULARY_KINDS = ("raise", "constant", "string", "number", "call", "attribute")
PROSE_EXEMPT = ("bool", "compare")     # their tokens (True, <, in) say nothing in prose


class OutcomeCache:
    """Test outcomes by (project version, namespace, body sha256) in an append-only JSONL file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.data: dict[str, str] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a truncated last line
                self.data[row["key"]] = row["outcome"]

    @staticmethod
    def key(scope: str, namespace: str, body: str) -> str:
        return f"{scope}:{namespace}:{hashlib.sha256(body.encode()).hexdigest()[:20]}"

    def get(self, scope: str, namespace: str, body: str) -> str | None:
        return self.data.get(self.key(scope, namespace, body))

    def put(self, scope: str, namespace: str, body: str, outcome: str) -> None:
        k = self.key(scope, namespace, body)
        with self.lock:
            self.data[k] = outcome
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"key": k, "outcome": outcome}) + "\n")
                fh.flush()
                os.fsync(fh.fileno())


@dataclass
class Candidate:
    """One task under screening."""

    namespace: str
    project_path: str
    ref: dict[str, Any]                       # benchmarks.deveval.providers.reference_function
    record: dict[str, Any]                    # the DevEval record, verbatim
    options: list[Fact] = field(default_factory=list)
    kept: list[Fact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sibling: tuple[float, str] = (0.0, "")
    status: str = "pending"                   # pending | static_drop | kept | dropped

    @property
    def fn(self) -> str:
        return self.namespace.rsplit(".", 1)[-1]

    def summary(self) -> dict[str, Any]:
        return {"status": self.status, "notes": self.notes, "sibling_max": round(self.sibling[0], 3),
                "sibling": self.sibling[1], "options": len(self.options),
                "facts_kept": [f"{f.kind}: {f.change}" for f in self.kept]}


def requirement_prose(record: dict[str, Any]) -> str:
    """The DevEval requirement text a requirement turn quotes."""
    req = record.get("requirement") or {}
    return " ".join(str(req.get(k, "")) for k in ("Functionality", "Arguments"))


def static_screen(cand: Candidate, body_facts: BodyFacts, *, in_snapshot: Callable[[str], list[str]],
                  sibling: tuple[float, str]) -> Candidate:
    """Fill ``cand.options`` with the fact options that pass the static filters."""
    cand.sibling = sibling
    if sibling[0] >= SIBLING_LIMIT:
        cand.status = "static_drop"
        cand.notes.append(f"sibling {sibling[1]} has token similarity {sibling[0]:.2f}")
        return cand
    prose = requirement_prose(cand.record)
    signature = cand.ref["signature"]
    dropped: dict[str, int] = {}
    for site in body_facts.sites():
        cand.options += _site_options(site, body_facts, prose, signature, in_snapshot, dropped)
    if dropped:
        cand.notes.append("static: " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())))
    lines = {f.lines[0][0] for f in cand.options}
    if len(lines) < MIN_FACTS or not any(distractor_eligible(f) for f in cand.options):
        cand.status = "static_drop"
        cand.notes.append(f"{len(cand.options)} fact option(s) on {len(lines)} line(s) pass the static filters")
    return cand


def _site_options(site: FactSite, bf: BodyFacts, prose: str, signature: str,
                  in_snapshot: Callable[[str], list[str]], dropped: dict[str, int]) -> list[Fact]:
    """Up to SITE_OPTIONS facts of one site (its first alternatives that pass the static filters):
    the second is tried only if the first's counterfactual passes the tests."""
    out: list[Fact] = []
    for alt in site.alternatives[:4]:
        if len(out) >= SITE_OPTIONS:
            break
        fact = bf.fact(site, alt)
        reason = _static_reason(fact, prose, signature, in_snapshot)
        if reason is None:
            out.append(fact)
        else:
            dropped[reason] = dropped.get(reason, 0) + 1
    return out


def distractor_eligible(fact: Fact) -> bool:
    """Can this fact be the distractor (vocabulary-based, not mentioned by the requirement)?"""
    return fact.kind in VOCABULARY_KINDS and not fact.in_requirement


def _static_reason(fact: Fact, prose: str, signature: str, in_snapshot: Callable[[str], list[str]]) -> str | None:
    try:
        pyast.parse(fact.counterfactual_body)
    except SyntaxError:
        return "counterfactual does not parse"
    if fact.kind in PROSE_EXEMPT:
        if fact.literal in prose or fact.counter_literal in prose:
            return "literal in requirement"
    else:
        fact.in_requirement = token_in_text(fact.token, prose) or token_in_text(fact.counter_token, prose)
    if fact.kind not in PROSE_EXEMPT and (fact.token in signature or fact.counter_token in signature):
        return "token in signature"
    if in_snapshot(fact.literal):
        return "literal in snapshot"
    if in_snapshot(fact.counter_literal):
        return "counter-literal in snapshot"
    return None


def test_screen(cand: Candidate, run: Callable[[str], str]) -> Candidate:
    """Reference must pass; keep up to MAX_FACTS options whose counterfactual body fails."""
    out = run(dedent_body(cand.ref["body"]))
    if out != "pass":
        cand.status = "dropped"
        cand.notes.append(f"reference body: {out} under this executor")
        return cand
    ordered = try_order(cand.options)
    tries = 0
    for i, fact in enumerate(ordered):
        if len(cand.kept) >= MAX_FACTS or tries >= MAX_TRIES:
            break
        if any(overlap(k, fact) for k in cand.kept):
            continue
        if not any(distractor_eligible(k) for k in cand.kept) and not any(map(distractor_eligible, ordered[i:])):
            break  # nothing left that could be the distractor
        tries += 1
        out = run(fact.counterfactual_body)
        if out == "fail":
            cand.kept.append(fact)
        else:
            cand.notes.append(f"{'not consequential' if out == 'pass' else 'inconclusive (' + out + ')'}: "
                              f"{fact.kind} {fact.change}")
    ok = len(cand.kept) >= MIN_FACTS and any(distractor_eligible(f) for f in cand.kept)
    cand.status = "kept" if ok else "dropped"
    if not ok:
        cand.notes.append(f"{len(cand.kept)} consequential fact(s)")
    return cand


def overlap(a: Fact, b: Fact) -> bool:
    """Do two facts share a source line or their change, or does what one turn states contain the
    other's fragment?"""
    if a.lines[0][0] == b.lines[0][0] or (a.token, a.counter_token) == (b.token, b.counter_token):
        return True
    said_a = [norm(x) for x in (a.literal, a.condition) if x]
    said_b = [norm(x) for x in (b.literal, b.condition) if x]
    return any(x in y or y in x for x in said_a for y in said_b)


def try_order(options: list[Fact]) -> list[Fact]:
    """Options kind by kind in turn (vocabulary kinds first, then bool, then compare); within a
    kind, distractor-eligible ones first, then line order."""
    from benchmarks.locoeval.verified.facts import KIND_ORDER

    def tier(f: Fact) -> int:
        return 0 if f.kind in VOCABULARY_KINDS else (1 if f.kind == "bool" else 2)

    rank: dict[str, int] = {}
    keyed = []
    for f in sorted(options, key=lambda f: (not distractor_eligible(f), f.lines[0][0])):
        rank[f.kind] = rank.get(f.kind, -1) + 1
        keyed.append(((tier(f), rank[f.kind], KIND_ORDER.index(f.kind), f.lines[0][0]), f))
    return [f for _, f in sorted(keyed, key=lambda kv: kv[0])]
