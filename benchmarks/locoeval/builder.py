"""Build LoCoEval-format samples from DevEval tasks and their repositories with an LLM.

Pipeline (LoCoEval construction as described in ReConMem §3.2.1 and ../shared/specs/locoeval.md):

1. **Tasks**: DevEval tasks of one project whose oracle passes and blank fails
   (``pypi_sources.json``), read from the repository snapshot (signature + reference body).
2. **GT information items**: one ``builder`` LLM call per task extracts items from the reference
   body. Each item is **verified against the code** (:func:`verify_item`): it must list
   ``evidence`` strings, every evidence string must occur verbatim (whitespace-normalised) in the
   reference body with the docstring removed, at least one must be a substantive token (3+ chars,
   not just a keyword), and the item's text must itself mention at least one evidence string.
   Unverified items are dropped; a task without a verified item is dropped.
3. **Distractors**: some items (``distractor_rate``, at least one per sample when possible) are
   mutated by a ``builder`` call into a plausible but wrong variant; a mutation is accepted only if
   it differs from the item and drops at least one of the item's evidence strings. In the outline
   the distractor is stated first and **revised later** by a revision step restating the item.
4. **Filter**: tasks that a repository-retrieval-only prompt already solves (no conversation; the
   top-k repository functions of the blanked snapshot as context) are removed -- this runs the
   Pass@1 layer (:func:`retrieval_only_solves`).
5. **Grouping**: the remaining tasks of a project are shuffled (seeded) and grouped 1-4 per sample.
   The subsets are independent: groups alternate between the subsets (group 0 single-hop, group 1
   multi-hop, ...), so a task is used in at most one sample of a build; ``allow_shared_tasks=True``
   (``--allow-shared-tasks``) restores the old behaviour of turning every group into one sample per
   subset. Every sample records the tasks it uses in ``meta.task_namespaces``.
6. **Outline**: 30-69 turns (length drawn per sample) with the patterns iterative requirement
   (distractor -> later revision), noisy input (unrelated developer questions), retrospective
   questions and parallel topics (questions about other functions of the same repository).
   *single-hop*: each task's steps form one contiguous block; *multi-hop*: all tasks are
   introduced early and their information steps are interleaved and spread over the conversation.
   The outline is laid out procedurally (seeded) -- the LLM is used where language is needed
   (items, mutations); the mock user writes the actual queries at evaluation time.

Deterministic given the seed and the LLM response cache (temperature 0).
"""

from __future__ import annotations

import ast
import random
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.locoeval.prompts import render
from benchmarks.locoeval.repo import _qualname, find_function, resolve_file
from benchmarks.locoeval.schema import parse_sample
from reconmem.platform import pyast
from reconmem.platform.jsonfiles import iter_json_records

MIN_TURNS, MAX_TURNS = 30, 69

NOISE_BRIEFS = (
    "Ask how to make pytest show print() output.",
    "Ask the difference between `pip install -e .` and `pip install .`.",
    "Ask how to squash the last three git commits into one.",
    "Ask what a good way is to pin dependencies in requirements.txt.",
    "Ask how to profile a slow Python script quickly.",
    "Ask whether to use tox or nox for testing against several Python versions.",
    "Ask how to configure a pre-commit hook that runs a linter.",
    "Ask what the difference between `is` and `==` is in Python.",
    "Ask how to set an environment variable only for one shell command.",
    "Ask how to write a changelog entry for a bug fix.",
    "Ask how to make a GitHub Actions workflow cache pip downloads.",
    "Ask what semantic versioning says about a bug-fix release.",
    "Ask how to find which commit introduced a regression with git bisect.",
    "Ask how to type-hint a function that accepts any iterable.",
    "Ask whether f-strings or str.format should be used in new code.",
    "Ask how to run only the tests whose names match a keyword in pytest.",
    "Ask how to read a large file line by line without loading it all.",
    "Ask what __slots__ is good for.",
    "Ask how to measure test coverage of a package.",
    "Ask how to publish a package to TestPyPI.",
    "Ask how to resolve a merge conflict in a lock file.",
    "Ask how to debug a test that only fails on CI.",
    "Ask what the GIL means for CPU-bound threads.",
    "Ask how to silence one specific DeprecationWarning in tests.",
)


@dataclass
class TaskSource:
    """One DevEval task with what the builder needs from the snapshot."""

    namespace: str
    project_path: str
    completion_path: str  # relative to the repository root
    signature: str
    body: str  # reference body without the docstring
    tests: list[str]
    requirement: dict[str, Any]
    repo: dict[str, Any]

    @property
    def name(self) -> str:
        return self.namespace.rsplit(".", 1)[-1]


@dataclass
class BuiltRequirement:
    task: TaskSource
    items: list[dict[str, Any]]
    distractors: list[dict[str, Any]] = field(default_factory=list)
    rejected_items: list[dict[str, Any]] = field(default_factory=list)


# ------------------------------------------------------------------------------ task sources
def load_deveval(path: str | Path) -> dict[str, dict[str, Any]]:
    """DevEval ``data.jsonl`` keyed by namespace."""
    out = {}
    for where, row in iter_json_records(path):
        if "namespace" not in row:
            raise ValueError(f"{where}: DevEval record has no 'namespace' field")
        out[row["namespace"]] = row
    return out


def usable_namespaces(entry: Mapping[str, Any]) -> list[str]:
    """Tasks of a pypi_sources.json entry whose oracle passes and blank fails."""
    return [t["namespace"] for t in entry.get("tasks", []) if t.get("oracle_pass") and t.get("blank_fails")]


def repo_spec_for(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {"provider": "pypi", "name": entry["pypi_name"], "version": entry["version"], "sha256": entry["sdist_sha256"]}


def read_task(root: Path, record: Mapping[str, Any], repo: Mapping[str, Any]) -> TaskSource:
    """Signature and reference body (docstring removed) of a DevEval task from the snapshot."""
    f = resolve_file(root, record["completion_path"], record["project_path"])
    rel = f.relative_to(root).as_posix()
    source = f.read_text(encoding="utf-8")
    func = find_function(pyast.parse(source), _qualname(record["namespace"], rel))
    if func is None:
        raise ValueError(f"{rel}: function for {record['namespace']} not found")
    lines = source.splitlines()
    first = func.body[0]
    has_doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
        and isinstance(first.value.value, str)
    sig = "\n".join(lines[func.lineno - 1: first.lineno - 1]).rstrip()
    body_stmts = func.body[1:] if has_doc else func.body
    body = "\n".join(lines[body_stmts[0].lineno - 1: func.end_lineno]) if body_stmts else ""
    return TaskSource(namespace=record["namespace"], project_path=record["project_path"], completion_path=rel,
                      signature=sig, body=textwrap.dedent(body), tests=list(record["tests"]),
                      requirement=dict(record.get("requirement", {})), repo=dict(repo))


# --------------------------------------------------------------------------- items + checks
_KEYWORDS = {"return", "if", "else", "elif", "for", "in", "not", "and", "or", "is", "None", "True", "False",
             "def", "self", "raise", "try", "except", "pass", "while", "with", "as", "import", "from"}


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def _norm_nospace(s: str) -> str:
    return re.sub(r"\s+", "", s)


def verify_item(item: Mapping[str, Any], body: str) -> tuple[bool, str]:
    """Is the item grounded in the reference body? Returns (ok, reason)."""
    text = str(item.get("text", "")).strip()
    evidence = [str(e) for e in item.get("evidence", []) if str(e).strip()]
    if not text:
        return False, "empty text"
    if not evidence:
        return False, "no evidence strings"
    code = _norm_nospace(body)
    for e in evidence:
        if _norm_nospace(e) not in code:
            return False, f"evidence {e!r} does not occur in the reference body"
    if not any(len(e.strip()) >= 3 and e.strip() not in _KEYWORDS for e in evidence):
        return False, "evidence is only keywords / trivial tokens"
    t = _norm_nospace(text)
    if not any(_norm_nospace(e) in t for e in evidence):
        return False, "the item text mentions none of its evidence strings"
    return True, "ok"


def verify_distractor(distractor_text: str, item: Mapping[str, Any]) -> tuple[bool, str]:
    """A mutation must differ from the item and drop at least one of its evidence strings."""
    d = _norm_nospace(distractor_text)
    if not d:
        return False, "empty"
    if d == _norm_nospace(str(item["text"])):
        return False, "identical to the item"
    if all(_norm_nospace(e) in d for e in item.get("evidence", [])):
        return False, "keeps every evidence string of the item (not a mutation)"
    return True, "ok"


def _items_validator(value: Any) -> Any:
    items = value.get("items") if isinstance(value, dict) else value
    if not isinstance(items, list):
        raise ValueError("expected {'items': [...]}")
    return {"items": [i for i in items if isinstance(i, dict)]}


def extract_items(llm: Any, task: TaskSource, *, min_items: int = 2, max_items: int = 5) -> tuple[list[dict], list[dict]]:
    """(verified items, rejected items with reasons) for one task -- one ``builder`` call."""
    prompt = render("builder_extract", project=task.project_path, namespace=task.namespace, file=task.completion_path,
                    signature=task.signature, body=task.body, min_items=min_items, max_items=max_items)
    value = llm.chat_json([{"role": "user", "content": prompt}], purpose="builder", validate=_items_validator)
    items = (value or {}).get("items", [])
    kept, rejected = [], []
    for it in items:
        cand = {"text": str(it.get("text", "")).strip(), "evidence": [str(e) for e in it.get("evidence", [])]}
        ok, why = verify_item(cand, task.body)
        (kept if ok else rejected).append(cand if ok else {**cand, "reason": why})
    return kept[:max_items], rejected


def mutate_item(llm: Any, task: TaskSource, item: Mapping[str, Any]) -> str | None:
    """A verified distractor text for ``item`` or None -- one ``builder`` call."""
    prompt = render("builder_mutate", namespace=task.namespace, item=item["text"])
    value = llm.chat_json([{"role": "user", "content": prompt}], purpose="builder")
    text = str(value.get("text", "")).strip() if isinstance(value, dict) else ""
    ok, _ = verify_distractor(text, item)
    return text if ok else None


# --------------------------------------------------------------------------------- filtering
def retrieval_only_solves(task: TaskSource, *, llm: Any, index: Any, embedder: Any,
                          evaluate: Callable[[str, str], Mapping[str, Any]], k: int = 10) -> bool:
    """Does a prompt with only the top-k repository functions (blanked snapshot) already pass?

    ``evaluate(namespace, reply_text)`` is the Pass@1 layer (``evaluate_completion`` bound to the
    repository and executor). The call is tagged ``builder``.
    """
    query = f"Implement `{task.name}`: {task.requirement.get('Functionality', '')}"
    hits = index.search(query, embedder, k=k) if index is not None else []
    context = "\n\n".join(f"# {path}\n{index.display_source(path)}" for path, _ in hits)
    prompt = render("retrieval_only", query=query, name=task.name, file=task.completion_path,
                    signature=textwrap.dedent(task.signature), repo_context=context or "(none)")
    reply = llm.chat([{"role": "user", "content": prompt}], purpose="builder")
    return bool(evaluate(task.namespace, reply.text).get("passed"))


# ----------------------------------------------------------------------------------- grouping
def group_tasks(items: Sequence[Any], rng: random.Random, *, sizes: Sequence[int] = (1, 2, 3, 4),
                weights: Sequence[float] = (0.15, 0.35, 0.35, 0.15)) -> list[list[Any]]:
    """Shuffle and cut into groups of 1-4 (mean ~2.5 with the default weights)."""
    pool = list(items)
    rng.shuffle(pool)
    groups = []
    while pool:
        size = min(rng.choices(list(sizes), weights=list(weights))[0], len(pool))
        groups.append(pool[:size])
        pool = pool[size:]
    return groups


# ------------------------------------------------------------------------------------ outline
def _step(kind: str, brief: str, req_id: str | None = None, item_ids: Sequence[str] = (), topic: str | None = None) -> dict:
    s: dict[str, Any] = {"kind": kind, "brief": brief}
    if req_id:
        s["req_id"] = req_id
    if item_ids:
        s["item_ids"] = list(item_ids)
    if topic:
        s["topic"] = topic
    return s


def _core_steps(req_id: str, built: BuiltRequirement, rng: random.Random) -> tuple[list[dict], list[dict], dict]:
    """(intro steps, info/distractor steps in order, revision+retrospective steps) for one requirement."""
    t = built.task
    func = t.requirement.get("Functionality", "").strip()
    intro = [_step("requirement", f"Introduce the next piece of work: `{t.name}` in `{t.completion_path}`. "
                   f"{func} Do not give implementation details yet.", req_id, topic=t.name)]
    revised = {d["revised_by"] for d in built.distractors}
    infos = []
    for it in built.items:
        if it["id"] in revised:
            continue
        infos.append(_step("info", f"Tell the assistant this detail about `{t.name}`.", req_id, [it["id"]], topic=t.name))
    for d in built.distractors:
        infos.append(_step("distractor", f"Tell the assistant this detail about `{t.name}` (as you currently believe it).",
                           req_id, [d["id"]], topic=t.name))
    rng.shuffle(infos)
    later = {"revisions": [{**_step("revision", f"Correct what you said earlier about `{t.name}`: state the right detail "
                                    "and say it replaces the earlier one.", req_id, [d["revised_by"]], topic=t.name),
                            "_after": d["id"]}
                           for d in built.distractors],
             "retrospective": _step("retrospective", f"Ask the assistant to recall what was decided so far about `{t.name}`.",
                                    req_id, [i["id"] for i in built.items[:2]], topic=t.name)}
    return intro, infos, later


def build_outline(reqs: Sequence[tuple[str, BuiltRequirement]], subset: str, rng: random.Random, *,
                  parallel_topics: Sequence[str] = (), n_turns: int | None = None,
                  min_turns: int = MIN_TURNS, max_turns: int = MAX_TURNS) -> list[dict]:
    """A numbered outline of ``n_turns`` (drawn in [min_turns, max_turns]) steps."""
    target = n_turns if n_turns is not None else rng.randint(min_turns, max_turns)
    cores = [(rid, *_core_steps(rid, b, rng)) for rid, b in reqs]
    if subset == "single-hop":
        core: list[dict] = []
        boundaries = []
        for rid, intro, infos, later in cores:
            block = intro + infos + later["revisions"] + [later["retrospective"]]
            core.extend(block)
            boundaries.append(len(core))
        n_fill = max(0, target - len(core))
        # fillers go only between / after task blocks, so each task's information stays together
        slots = [0] + boundaries
        fill_at = sorted(rng.choice(slots) for _ in range(n_fill))
    else:
        intros = [s for _, intro, _, _ in cores for s in intro]
        infos_all = [(rid, s) for rid, _, infos, _ in cores for s in infos]
        rng.shuffle(infos_all)
        body = [s for _, s in infos_all]
        core = intros + body
        # revisions after their distractor, retrospectives late
        for rid, _, _, later in cores:
            for rev in later["revisions"]:
                d_pos = next(i for i, s in enumerate(core) if s["kind"] == "distractor" and s["item_ids"] == [rev["_after"]])
                core.insert(rng.randint(d_pos + 1, len(core)), rev)
            core.insert(rng.randint(len(core) // 2, len(core)), later["retrospective"])
        n_fill = max(0, target - len(core))
        fill_at = sorted(rng.randint(len(intros), len(core)) for _ in range(n_fill))
    fillers = _fillers(n_fill, rng, parallel_topics)
    outline: list[dict] = []
    fi = 0
    for pos in range(len(core) + 1):
        while fi < len(fill_at) and fill_at[fi] == pos:
            outline.append(fillers[fi])
            fi += 1
        if pos < len(core):
            outline.append(core[pos])
    return [{"turn": n, **{k: v for k, v in s.items() if not k.startswith("_")}} for n, s in enumerate(outline, 1)]


def _fillers(n: int, rng: random.Random, parallel_topics: Sequence[str]) -> list[dict]:
    out = []
    noise = list(NOISE_BRIEFS)
    rng.shuffle(noise)
    topics = list(parallel_topics)
    rng.shuffle(topics)
    for i in range(n):
        if topics and rng.random() < 0.5:
            topic = topics[i % len(topics)]
            out.append(_step("chat", f"Parallel topic: ask how `{topic}` in this repository works or how to use it.", topic=topic))
        else:
            out.append(_step("noise", noise[i % len(noise)] + " (unrelated to the current work)"))
    return out


# ------------------------------------------------------------------------------------ samples
def build_requirement(llm: Any, task: TaskSource, req_id: str, *, min_items: int = 2, max_items: int = 5) -> BuiltRequirement | None:
    """Extract + verify items for one task; None when no item survives verification."""
    items, rejected = extract_items(llm, task, min_items=min_items, max_items=max_items)
    if not items:
        return None
    for n, it in enumerate(items, 1):
        it["id"] = f"{req_id}.I{n}"
    return BuiltRequirement(task=task, items=[{"id": i["id"], "text": i["text"], "evidence": i["evidence"]} for i in items],
                            rejected_items=rejected)


def add_distractors(llm: Any, reqs: Sequence[tuple[str, BuiltRequirement]], rng: random.Random, *,
                    rate: float = 0.3, at_least_one: bool = True) -> None:
    """Mutate a share of the items (seeded choice) into distractors, in place."""
    candidates = [(rid, b, it) for rid, b in reqs for it in b.items]
    n = max(1 if at_least_one and candidates else 0, round(rate * len(candidates)))
    order = list(range(len(candidates)))
    rng.shuffle(order)
    made = 0
    for idx in order:
        if made >= n:
            break
        rid, b, it = candidates[idx]
        text = mutate_item(llm, b.task, it)
        if text:
            b.distractors.append({"id": f"{rid}.D{len(b.distractors) + 1}", "text": text, "revised_by": it["id"]})
            made += 1


def make_sample(sample_id: str, subset: str, reqs: Sequence[tuple[str, BuiltRequirement]], rng: random.Random, *,
                parallel_topics: Sequence[str] = (), n_turns: int | None = None) -> dict[str, Any]:
    """Assemble and validate one sample object."""
    first = reqs[0][1].task
    outline = build_outline(reqs, subset, rng, parallel_topics=parallel_topics, n_turns=n_turns)
    obj = {
        "id": sample_id, "subset": subset, "project_path": first.project_path, "repo": first.repo,
        "requirements": [{
            "req_id": rid, "namespace": b.task.namespace, "completion_path": b.task.completion_path,
            "signature": b.task.signature, "tests": b.task.tests,
            "description": str(b.task.requirement.get("Functionality", "")).strip(),
            "gt_items": b.items, "distractors": b.distractors} for rid, b in reqs],
        "outline": outline,
        "tasks": [{"req_id": rid, "kind": "function_generation",
                   "query": f"Please implement `{b.task.name}` now, following everything we discussed about it."}
                  for rid, b in reqs],
        "meta": {"builder": {"rejected_items": {rid: b.rejected_items for rid, b in reqs}},
                 "task_namespaces": [b.task.namespace for _, b in reqs]},
    }
    parse_sample(obj, where=f"builder:{sample_id}")
    return obj


def repository_functions(root: Path, *, exclude: Iterable[str] = (), limit: int = 200) -> list[str]:
    """Qualified names of top-level functions of the package (parallel topics), sorted."""
    names = []
    skip = set(exclude)
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        if rel.startswith(("tests/", "test/", "docs/")) or "/tests/" in rel or rel.startswith("setup"):
            continue
        try:
            tree = pyast.parse(f.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        module = rel[:-3].replace("/", ".")
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                qn = f"{module}.{node.name}"
                if qn not in skip:
                    names.append(qn)
    return names[:limit]


def build_project_samples(llm: Any, tasks: Sequence[TaskSource], *, seed: int = 0,
                          subsets: Sequence[str] = ("single-hop", "multi-hop"),
                          solves: Callable[[TaskSource], bool] | None = None,
                          parallel_topics: Sequence[str] = (), distractor_rate: float = 0.3,
                          max_samples: int | None = None, log: Callable[[str], None] = lambda m: None,
                          allow_shared_tasks: bool = False) -> list[dict[str, Any]]:
    """Samples for one project: filter, extract items, group, mutate, outline.

    Groups alternate between ``subsets`` so no task is in two samples; ``allow_shared_tasks``
    turns every group into one sample per subset (the subsets then share their tasks).
    """
    if not tasks:
        return []
    project = tasks[0].project_path
    rng = random.Random(f"{seed}:{project}")
    kept_tasks = []
    for t in sorted(tasks, key=lambda t: t.namespace):
        if solves is not None and solves(t):
            log(f"filtered (retrieval-only prompt already passes): {t.namespace}")
            continue
        kept_tasks.append(t)
    samples: list[dict[str, Any]] = []
    slug = project.rsplit("/", 1)[-1].lower()
    subsets = list(subsets)
    for g, group in enumerate(group_tasks(kept_tasks, rng)):
        reqs: list[tuple[str, BuiltRequirement]] = []
        for t in group:
            rid = f"R{len(reqs) + 1}"
            built = build_requirement(llm, t, rid)
            if built is None:
                log(f"dropped (no verified item): {t.namespace}")
                continue
            reqs.append((rid, built))
        if not reqs:
            continue
        add_distractors(llm, reqs, rng, rate=distractor_rate)
        # disjoint subsets: each group goes to one subset (alternating), unless shared tasks are allowed
        group_subsets = subsets if allow_shared_tasks else [subsets[g % len(subsets)]]
        for subset in group_subsets:
            tag = "sh" if subset == "single-hop" else "mh"
            samples.append(make_sample(f"{slug}-{g:03d}-{tag}", subset, reqs, random.Random(f"{seed}:{project}:{g}:{subset}"),
                                       parallel_topics=parallel_topics))
            if max_samples is not None and len(samples) >= max_samples:
                break
        if max_samples is not None and len(samples) >= max_samples:
            break
    if not allow_shared_tasks:
        shared = shared_tasks(samples)
        if shared:  # cannot happen with disjoint groups; a guard against future edits
            raise AssertionError(f"tasks used in more than one sample: {shared}")
    return samples


def shared_tasks(samples: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Task namespaces used by more than one sample object -> the ids of those samples."""
    owners: dict[str, list[str]] = {}
    for obj in samples:
        for req in obj["requirements"]:
            owners.setdefault(req["namespace"], []).append(obj["id"])
    return {ns: ids for ns, ids in owners.items() if len(ids) > 1}
