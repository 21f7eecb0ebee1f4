"""Composing screened tasks into scripted LoCoEval-format samples.

Per task: a ``requirement`` turn (the DevEval requirement and the signature), one ``info`` turn per
fact that is not the distractor, the ``distractor`` (a vocabulary-based fact stated as its
counterfactual), its ``revision`` and a ``retrospective`` recap. Fillers bring a conversation to a
seeded length in TURNS: ``noise`` (questions about other public functions and classes of the
repository, quoting their names, files and docstring first lines) and ``chat``.
*Single-hop*: each task's turns form one contiguous block. *Multi-hop*: every task is introduced
early, the details of all tasks are shuffled together between fillers, revisions and recaps come late.
"""

from __future__ import annotations

import ast
import collections
import hashlib
import random
import textwrap
from pathlib import Path
from typing import Any

from benchmarks.locoeval.verified.source import norm, one_line
from benchmarks.locoeval.verified.screening import Candidate, distractor_eligible
from reconmem.platform import pyast

TURNS = (30, 69)
SIZES = (1, 2, 3, 4)        # requirements per sample: seeded permutations, mean 2.5
SUFFIX = " Please answer briefly."
NOISE_TEMPLATES = (
    "Unrelated question while I remember: what does `{name}` in `{file}` do? Its docstring starts \"{doc}\"",
    "Different part of the code base: when would I use `{name}` from `{file}`? The docs say \"{doc}\"",
    "Side question about `{file}`: is `{name}` something other modules here call, or mainly public API? "
    "It says \"{doc}\"",
    "A colleague asked me about `{name}` ({file}): \"{doc}\" -- how would you explain it in two sentences?",
    "Before I forget: how would I write a quick test for `{name}` in `{file}`? Its docstring: \"{doc}\"",
    "Off topic: if I wanted to change `{name}` in `{file}` (\"{doc}\"), what should I be careful about?",
)
CLASS_TEMPLATES = (
    "Unrelated question: what is the class `{name}` in `{file}` for? Its docstring starts \"{doc}\"",
    "Different part of the repository: is `{name}` ({file}) meant to be subclassed or used directly? It says \"{doc}\"",
)
CHAT_LINES = (
    "Thanks, that helps. Let's keep going.",
    "OK, good. Give me a second to look at the file.",
    "Alright. I'll take a short coffee break and then we continue.",
    "Makes sense. Please keep your answers short today.",
    "Great, thanks for bearing with me.",
    "Hmm, let me think about that for a moment.",
    "Fine. I'll note that down.",
    "Sounds good to me.",
)


def repository_symbols(root: Path, exclude_files: set[str]) -> list[dict[str, str]]:
    """Public top-level functions / classes with a docstring, outside tests and the target files."""
    out = []
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        parts = rel.split("/")
        if any(p in ("tests", "test", "docs", "examples", "build") for p in parts[:-1]) \
                or parts[-1].startswith(("test", "setup", "conftest")) or rel in exclude_files:
            continue
        try:
            tree = pyast.parse(f.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                continue
            first = one_line((ast.get_docstring(node) or "").split("\n\n")[0])
            if len(first) < 12:
                continue
            if len(first) > 140:
                first = first[:137].rsplit(" ", 1)[0] + "..."
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            out.append({"file": rel, "name": node.name, "kind": kind, "doc": first.replace('"', "'")})
    return out


def requirement_text(cand: Candidate) -> str:
    """The requirement turn: the DevEval requirement and the exact signature."""
    req = cand.record.get("requirement", {})
    func = one_line(str(req.get("Functionality", "")))
    args = one_line(str(req.get("Arguments", "")))
    sig = one_line(textwrap.dedent(cand.ref["signature"]))
    parts = [f"Next piece of work: I need `{cand.fn}` in `{cand.ref['file']}` with the signature `{sig}`.", func]
    if args:
        parts.append(f"Arguments and return value: {args}")
    parts.append("Don't write it yet -- I'll give you the details first.")
    return " ".join(p for p in parts if p)


def plan_sizes(n_tasks: int, rng: random.Random) -> list[int]:
    """Requirements per sample for one project's tasks: seeded permutations of SIZES, the last cut short."""
    sizes: list[int] = []
    while sum(sizes) < n_tasks:
        block = list(SIZES)
        rng.shuffle(block)
        for s in block:
            left = n_tasks - sum(sizes)
            if left <= 0:
                break
            sizes.append(min(s, left))
    return sizes


def _step(kind: str, text: str, brief: str, req_id: str | None = None, item_ids: list[str] | None = None,
          topic: str | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"kind": kind}
    if req_id:
        step["req_id"] = req_id
    if item_ids:
        step["item_ids"] = item_ids
    if topic:
        step["topic"] = topic
    step["brief"] = brief
    step["text"] = text
    return step


def compose_sample(sample_id: str, subset: str, entry: Any, group: list[Candidate], symbols: list[dict[str, str]],
                   rng: random.Random) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One sample object and its verification rows."""
    reqs, verif, blocks, literals = [], [], [], set()
    for k, cand in enumerate(group, 1):
        rid, fn = f"R{k}", cand.fn
        facts = list(cand.kept)
        vocab = [i for i, f in enumerate(facts) if distractor_eligible(f)]
        d_idx = vocab[rng.randrange(len(vocab))]
        gt_items, ver_items = [], {}
        for i, f in enumerate(facts, 1):
            said = f.statements(fn)
            gt_items.append({"id": f"{rid}.I{i}", "text": said["text"], "evidence": [f.literal]})
            ver_items[f"{rid}.I{i}"] = f.record()
            literals |= {norm(f.literal), norm(f.counter_literal)}
        dist, dist_gt = facts[d_idx], f"{rid}.I{d_idx + 1}"
        said = dist.statements(fn)
        reqs.append({"req_id": rid, "namespace": cand.namespace, "completion_path": cand.ref["file"],
                     "signature": cand.ref["signature"], "tests": list(cand.record["tests"]),
                     "description": one_line(str(cand.record.get("requirement", {}).get("Functionality", ""))),
                     "gt_items": gt_items,
                     "distractors": [{"id": f"{rid}.D1", "text": said["distractor"], "revised_by": dist_gt}]})
        verif.append({"sample_id": sample_id, "req_id": rid, "namespace": cand.namespace, "file": cand.ref["file"],
                      "signature_line": cand.ref["signature_line"], "body_start": cand.ref["body_start"],
                      "body_end": cand.ref["body_end"],
                      "reference_sha256": hashlib.sha256(cand.ref["body"].encode()).hexdigest(),
                      "sibling_max": round(cand.sibling[0], 3), "sibling": cand.sibling[1],
                      "items": ver_items,
                      "distractors": {f"{rid}.D1": {"revised_by": dist_gt, "change": dist.change, "kind": dist.kind,
                                                    "token": dist.token, "counter_token": dist.counter_token,
                                                    "source": dist.source, "body": dist.counterfactual_body}}})
        intro = _step("requirement", requirement_text(cand) + SUFFIX, f"Introduce `{fn}`.", rid, topic=fn)
        infos = [_step("info", f.statements(fn)["text"] + SUFFIX, f"State a detail of `{fn}`.", rid,
                       [f"{rid}.I{i}"], fn) for i, f in enumerate(facts, 1) if i != d_idx + 1]
        dis = _step("distractor", said["distractor"] + SUFFIX, f"State a wrong detail of `{fn}` (revised later).",
                    rid, [f"{rid}.D1"], fn)
        rev = _step("revision", said["revision"] + SUFFIX, f"Revise the wrong detail of `{fn}`.", rid, [dist_gt], fn)
        retro = _step("retrospective", f"Quick recap before we move on: what have we agreed so far about `{fn}`?"
                      + SUFFIX, f"Ask for a recap of `{fn}`.", rid, [g["id"] for g in gt_items][:2], fn)
        blocks.append((intro, infos, dis, rev, retro))

    names = {c.fn for c in group}
    usable = [s for s in symbols if s["name"] not in names and not any(x in norm(s["doc"]) for x in literals)]
    core = 1 + sum(1 + len(b[1]) + 3 for b in blocks)
    target = rng.randint(max(TURNS[0], core + 2), max(TURNS[1], core + 2))
    fillers = _fillers(target - core, usable, rng)
    opening = _step("chat", f"Hi! Today I'm working in the {entry.pypi_name} repository (version {entry.version}). "
                            f"We'll go through a few functions step by step." + SUFFIX, "Open the session.")
    layout = _single_hop if subset == "single-hop" else _multi_hop
    outline = [opening] + layout(blocks, fillers, rng)
    steps = [{"turn": n, **s} for n, s in enumerate(_revision_before_recap(outline), 1)]
    sample = {"id": sample_id, "subset": subset, "project_path": entry.project_path,
              "repo": {"provider": "pypi", "name": entry.pypi_name, "version": entry.version,
                       "sha256": entry.sdist_sha256},
              "target_docstrings": "remove",
              "requirements": reqs, "outline": steps,
              "tasks": [{"req_id": r["req_id"], "kind": "function_generation",
                         "query": f"Please implement `{r['namespace'].rsplit('.', 1)[-1]}` now, following "
                                  f"everything we agreed about it."} for r in reqs],
              "meta": {"set": "locoeval_verified_v2", "generator": "benchmarks.locoeval.verified.generate",
                       "task_namespaces": [r["namespace"] for r in reqs]}}
    return sample, verif


def _single_hop(blocks: list[tuple], fillers: list[dict], rng: random.Random) -> list[dict]:
    slots: list[list[dict]] = [[] for _ in range(len(blocks) + 1)]
    for f in fillers:
        slots[rng.randrange(len(slots))].append(f)
    out: list[dict] = []
    for i, (intro, infos, dis, rev, retro) in enumerate(blocks):
        out += slots[i] + [intro, dis, *infos, rev, retro]
    return out + slots[-1]


def _multi_hop(blocks: list[tuple], fillers: list[dict], rng: random.Random) -> list[dict]:
    intros = [b[0] for b in blocks]
    details = [s for b in blocks for s in [b[2], *b[1]]]
    rng.shuffle(details)
    early = fillers[:max(1, len(fillers) // 4)]
    rest = fillers[len(early):]
    out: list[dict] = []
    for i, s in enumerate(intros):
        out.append(s)
        if i < len(early):
            out.append(early[i])
    out += early[len(intros):]
    middle = list(details)
    for f in rest[:len(rest) * 2 // 3]:
        middle.insert(rng.randint(1, len(middle)), f)
    tail = [b[3] for b in blocks] + [b[4] for b in blocks] + rest[len(rest) * 2 // 3:]
    rng.shuffle(tail)
    return out + middle + tail


def _revision_before_recap(outline: list[dict]) -> list[dict]:
    out = list(outline)
    for rid in {s.get("req_id") for s in out if s["kind"] == "revision"}:
        ri = next(i for i, s in enumerate(out) if s["kind"] == "revision" and s.get("req_id") == rid)
        ti = next((i for i, s in enumerate(out) if s["kind"] == "retrospective" and s.get("req_id") == rid), None)
        if ti is not None and ti < ri:
            out[ti], out[ri] = out[ri], out[ti]
    return out


def _fillers(n: int, symbols: list[dict[str, str]], rng: random.Random) -> list[dict]:
    pool = list(symbols)
    rng.shuffle(pool)
    chats = list(CHAT_LINES)
    rng.shuffle(chats)
    n_chat = max(1, round(n * 0.3))
    kinds = ["chat"] * n_chat + ["noise"] * (n - n_chat)
    rng.shuffle(kinds)
    if "noise" not in kinds and kinds:
        kinds[-1] = "noise"
    out, ni, ci = [], 0, 0
    for k in kinds:
        if k == "noise" and pool:
            sym = pool[ni % len(pool)]
            ni += 1
            tmpl = rng.choice(CLASS_TEMPLATES if sym["kind"] == "class" else NOISE_TEMPLATES)
            out.append(_step("noise", tmpl.format(**sym) + SUFFIX, f"Unrelated question about `{sym['name']}`.",
                             topic=sym["name"]))
        else:
            out.append(_step("chat", chats[ci % len(chats)], "Small talk / acknowledgement."))
            ci += 1
    return out


def set_statistics(samples: list[dict[str, Any]], verification: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Counts of a sample set: subsets, projects, tasks, turns (min / median / max), turn and fact kinds."""
    turns = sorted(len(s["outline"]) for s in samples)
    tasks_by_subset: collections.Counter = collections.Counter()
    for s in samples:
        tasks_by_subset[s["subset"]] += len(s["requirements"])
    out: dict[str, Any] = {
        "samples": len(samples), "samples_by_subset": dict(collections.Counter(s["subset"] for s in samples)),
        "tasks": sum(len(s["requirements"]) for s in samples), "tasks_by_subset": dict(tasks_by_subset),
        "repositories": len({s["project_path"] for s in samples}),
        "requirements_per_sample": dict(sorted(collections.Counter(len(s["requirements"]) for s in samples).items())),
        "turns": {"min": turns[0], "median": turns[len(turns) // 2] if len(turns) % 2 else
                  (turns[len(turns) // 2 - 1] + turns[len(turns) // 2]) / 2, "max": turns[-1]} if turns else {},
        "turn_kinds": dict(sorted(collections.Counter(st["kind"] for s in samples for st in s["outline"]).items()))}
    if verification is not None:
        out["fact_kinds"] = dict(sorted(collections.Counter(it["kind"] for v in verification
                                                            for it in v["items"].values()).items()))
        out["distractor_kinds"] = dict(sorted(collections.Counter(d.get("kind", "?") for v in verification
                                                                  for d in v["distractors"].values()).items()))
    return out
