"""The GT-item coverage judge (paper §3.3.1 Eq. 11, §4.4, Fig. 6): a scorer step over finished
LoCoEval(-format) runs that writes ``samples/<id>/coverage.json``; the analysis
(:mod:`benchmarks.analysis.coverage`) only reads those files.

    python -m scripts.coverage --runs results/locoeval --judge-backbone gemini_25_flash

For each task-run (one function-generation task of one conversation under one backbone) the task's
recorded context (``contexts.jsonl``, ``phase == "task"``) is split into three *views*:

* ``original`` — items retrieved through the original query,
* ``dual``     — items retrieved through the dual (code-draft grounded) query,
* ``combined`` — both, after removing exact duplicate snippets within each modality
  (semantic = textual memories, structural = code).

The original and dual views are the two *independently built* branch contexts that ReConMem
records in ``context.meta.views`` (``reconmem.memory.recall``: each branch's initial retrieval
expanded with its own ``seen`` set, so an entity reachable from both branches is in both views,
paper §3.3.1 / §4.4). The combined view is the merged context the method answered with. Snippet
texts come from the merged context's items (the same entity renders the same text in every view).

Records written before the views existed (``view_source: "provenance"``) fall back to
:func:`item_branch_map`, which gives each item to the branch that reached it first - that split
undercounts "both" and is kept only to read old records (the coverage record says which source
was used). Items of neither branch (recent turns, core memory ...) belong to no view. Neither the
task query nor the reference code is evidence.

Each view is judged by its own LLM call (:class:`CoverageJudge`, purpose ``coverage_judge``,
cached like every call of :class:`reconmem.platform.llm.LLMClient`). The judgment must list every GT item
exactly once; a positive judgment must cite evidence ids that exist in that view — an unknown id
fails the item. An incomplete answer is retried once with the problems stated; if it is still
incomplete the view is marked ``complete: false`` and its task-run is left out of the aggregates
(and counted).

Whole runs (:func:`judge_runs`): every ok sample of the selected runs, read through
:class:`benchmarks.records.RunDir`; GT items from the sample file named in the run's
``config.yaml`` (``benchmark.samples``) or the ``samples`` argument. Samples already judged with the
same judge model, prompt version and views version are skipped unless ``overwrite`` (re-judging
unchanged views costs nothing: the calls are cached).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

from benchmarks.records import COVERAGE, Family, RunDir, SampleDir, atomic_write_json, sample_class
from reconmem.platform.llm import UsageLedger

log = logging.getLogger(__name__)

PURPOSE = "coverage_judge"
# Judge system prompts by version. v2 (default) has eight synthetic examples, as the paper's judge
# prompt (§4.4); v1 (two examples) stays loadable byte-identically, so v1 judgments stay cached.
PROMPT_FILES = {"coverage-v1": "coverage_judge_system.txt", "coverage-v2": "coverage_judge_system.v2.txt"}
PROMPT_VERSION = "coverage-v2"
# How the original / dual views are obtained: "independent" = the recorded per-branch views
# (context.meta.views); "provenance" = the legacy first-route split of the merged context.
VIEW_SOURCES = ("independent", "provenance")
VIEWS_VERSION = "views-v2"  # coverage.json judged before the independent views existed are re-judged
VIEWS = ("original", "dual", "combined")
BRANCHES = {"original": "original_query", "dual": "dual_query"}


# ---------------------------------------------------------------------------- views

# Retrieval routes of ReConMem's initial hits (reconmem.memory.recall) and the branch each belongs to: the
# original query drives the semantic side, the dual query (or the original query when grounding
# fails, paper §2.3.2) drives the code side.
ROUTE_BRANCH = {"semantic": "original_query", "structural_graph": "dual_query", "repo_wide": "dual_query"}
SOURCE_BRANCH = {"original_query": "original_query", "dual_query": "dual_query", "repo_wide": "dual_query"}


def _declared(item: dict[str, Any]) -> set[str] | None:
    meta = item.get("meta") or {}
    declared = meta.get("branches", meta.get("branch"))
    if declared is None:
        return None
    if isinstance(declared, str):
        declared = [declared]
    return {b for b in declared if b in ROUTE_BRANCH.values()}


def item_branch_map(items: Sequence[dict[str, Any]]) -> list[set[str]]:
    """The retrieval branch(es) of every item of one context, each a subset of
    {original_query, dual_query}.

    Rules, first match wins: ``meta.branches`` / ``meta.branch`` as declared; the branch of the
    initial-retrieval routes in ``meta.routes`` (semantic -> original; structural_graph, repo_wide ->
    dual); for an expansion hit, the branches of the item named by ``meta.via`` (followed
    recursively); else ``source`` (original_query / dual_query / repo_wide). Items matching none
    (recent turns, core memory, ...) get the empty set.
    """
    by_id: dict[str, int] = {}
    for i, it in enumerate(items):
        by_id.setdefault(str(it.get("id")), i)
    memo: dict[int, set[str]] = {}

    def resolve(i: int, stack: frozenset[int]) -> set[str]:
        if i in memo:
            return memo[i]
        it = items[i]
        meta = it.get("meta") or {}
        result = _declared(it)
        if result is None:
            routes = meta.get("routes") or []
            result = {ROUTE_BRANCH[r] for r in routes if r in ROUTE_BRANCH}
            via = meta.get("via")
            if via is not None and str(via) in by_id and by_id[str(via)] not in stack:
                result |= resolve(by_id[str(via)], stack | {i})
            if not result and it.get("source") in SOURCE_BRANCH:
                result = {SOURCE_BRANCH[it["source"]]}
        memo[i] = result
        return result

    return [resolve(i, frozenset({i})) for i in range(len(items))]


def item_branches(item: dict[str, Any]) -> set[str]:
    """Branches of a single item judged on its own (no ``via`` resolution)."""
    return item_branch_map([item])[0]


def modality(item: dict[str, Any]) -> str:
    """``structural`` for code entities, ``semantic`` for everything textual."""
    return "structural" if item.get("kind") == "code" else "semantic"


def view_source(context: dict[str, Any]) -> str:
    """``independent`` when the context records its branch views, else ``provenance`` (legacy)."""
    views = (context.get("meta") or {}).get("views")
    return "independent" if isinstance(views, dict) and all(v in views for v in BRANCHES) else "provenance"


def _snippets(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Evidence snippets of one view: exact duplicates removed within each modality, view-local ids."""
    seen: set[tuple[str, str]] = set()
    counters = {"semantic": 0, "structural": 0}
    snippets = []
    for it in items:
        mod = modality(it)
        text = str(it.get("text") or "")
        if not text.strip() or (mod, text) in seen:
            continue
        seen.add((mod, text))
        counters[mod] += 1
        eid = ("S" if mod == "semantic" else "C") + str(counters[mod])
        snippets.append({"eid": eid, "modality": mod, "text": text, "item_id": it.get("id")})
    return snippets


def view_items(context: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The context items of each view (original, dual, combined), in view order.

    Independent source: each branch view lists ``{kind, id}`` entries of the merged context's items.
    An entry the window guard trimmed from the prompt (``meta.trimmed_items``) is left out of every
    view - its text was never sent, so it cannot be evidence; any other entry naming no item of
    the context is an error (a corrupt record). Combined: the merged context's items that belong to
    either branch view. Provenance source: :func:`item_branch_map`.
    """
    items = list(context.get("items") or [])
    if view_source(context) == "independent":
        by_key = {(str(it.get("kind")), str(it.get("id"))): it for it in items}
        trimmed = {str(t) for t in (context.get("meta") or {}).get("trimmed_items") or []}
        out: dict[str, list[dict[str, Any]]] = {}
        for view in BRANCHES:
            chosen = []
            for entry in context["meta"]["views"][view]:
                key = (str(entry.get("kind")), str(entry.get("id")))
                if key not in by_key and key[1] in trimmed:
                    continue
                if key not in by_key:
                    raise ValueError(f"context of query {str(context.get('query'))[:60]!r}: view {view!r} names "
                                     f"{key[0]} {key[1]!r}, which is not an item of the context")
                chosen.append(by_key[key])
            out[view] = chosen
        in_views = {(str(it.get("kind")), str(it.get("id"))) for view in BRANCHES for it in out[view]}
        out["combined"] = [it for it in items if (str(it.get("kind")), str(it.get("id"))) in in_views]
        return out
    branches = item_branch_map(items)
    out = {}
    for view in VIEWS:
        wanted = set(BRANCHES.values()) if view == "combined" else {BRANCHES[view]}
        out[view] = [it for it, its in zip(items, branches) if its & wanted]
    return out


def context_branch_map(context: dict[str, Any]) -> list[set[str]]:
    """Per item of ``context``: the branches ({original_query, dual_query}) whose view contains it -
    from the recorded independent views, else :func:`item_branch_map` (legacy records)."""
    items = list(context.get("items") or [])
    if view_source(context) != "independent":
        return item_branch_map(items)
    members = {view: {(str(it.get("kind")), str(it.get("id"))) for it in chosen}
               for view, chosen in view_items(context).items() if view in BRANCHES}
    return [{BRANCHES[v] for v, keys in members.items() if (str(it.get("kind")), str(it.get("id"))) in keys}
            for it in items]


def context_views(context: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The three views of one recorded context; each a list of ``{eid, modality, text, item_id}``.

    Evidence ids are view-local: ``S<n>`` for semantic snippets, ``C<n>`` for code, numbered in
    view order after removing exact duplicates within each modality.
    """
    return {view: _snippets(items) for view, items in view_items(context).items()}


# ---------------------------------------------------------------------------- judge

@dataclass
class ItemJudgement:
    item_id: str
    supported: bool
    evidence: list[str] = field(default_factory=list)
    problem: str | None = None  # why a claimed support was rejected, or "missing"


@dataclass
class ViewJudgement:
    view: str
    supported: list[str]  # GT item ids judged fully supported with valid evidence
    items: list[ItemJudgement]
    complete: bool
    problems: list[str]
    n_snippets: int
    attempts: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _system_prompt(version: str = PROMPT_VERSION) -> str:
    if version not in PROMPT_FILES:
        raise ValueError(f"coverage judge: unknown prompt version {version!r}; known {sorted(PROMPT_FILES)}")
    return resources.files("benchmarks.locoeval").joinpath(f"prompts/{PROMPT_FILES[version]}").read_text(encoding="utf-8")


def render_request(gt_items: Sequence[dict[str, Any]], snippets: Sequence[dict[str, Any]]) -> str:
    """The user message: GT items as G1..Gn, then the snippets with their evidence ids."""
    lines = ["GT items:"]
    lines += [f"G{i}: {g['text']}" for i, g in enumerate(gt_items, 1)]
    lines.append("Snippets:")
    for s in snippets:
        lines.append(f"{s['eid']}:\n{s['text']}")
    lines.append(f"Answer with one entry for each of G1..G{len(gt_items)}.")
    return "\n".join(lines)


def validate_judgement(raw: Any, gt_items: Sequence[dict[str, Any]], snippet_ids: Iterable[str],
                       view: str = "", attempts: int = 1) -> ViewJudgement:
    """Check a parsed judge answer for completeness and evidence validity (pure function)."""
    valid_ids = set(snippet_ids)
    prompt_to_gt = {f"G{i}": str(g["id"]) for i, g in enumerate(gt_items, 1)}
    problems: list[str] = []
    fatal = False  # a structural defect: the answer cannot be trusted as a complete judgment
    entries = raw.get("items") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        problems.append("answer is not an object with an 'items' list")
        fatal = True
        entries = []
    seen: dict[str, ItemJudgement] = {}
    for e in entries:
        if not isinstance(e, dict):
            problems.append(f"entry {e!r} is not an object")
            fatal = True
            continue
        pid = str(e.get("id", "")).strip()
        if pid not in prompt_to_gt:
            problems.append(f"unknown GT id {pid!r}")
            continue
        if pid in seen:
            problems.append(f"GT id {pid} judged more than once")
            fatal = True
            continue
        flag = e.get("supported")
        if isinstance(flag, str) and flag.strip().lower() in ("true", "false"):
            flag = flag.strip().lower() == "true"
        if not isinstance(flag, bool):
            problems.append(f"{pid}: 'supported' must be true or false, got {flag!r}")
            fatal = True
            continue
        evidence = e.get("evidence") or []
        if isinstance(evidence, str):
            evidence = [evidence]
        evidence = [str(x).strip() for x in evidence]
        judgement = ItemJudgement(item_id=prompt_to_gt[pid], supported=flag, evidence=evidence)
        if flag:
            invalid = [x for x in evidence if x not in valid_ids]
            if not evidence:
                judgement.supported, judgement.problem = False, "supported without evidence ids"
            elif invalid:
                judgement.supported, judgement.problem = False, f"invalid evidence ids {invalid}"
        seen[pid] = judgement
    missing = [pid for pid in prompt_to_gt if pid not in seen]
    if missing:
        problems.append(f"missing judgments for {missing}")
    items = [seen.get(pid) or ItemJudgement(item_id=gid, supported=False, problem="missing")
             for pid, gid in prompt_to_gt.items()]
    complete = not missing and not fatal
    return ViewJudgement(view=view, supported=[i.item_id for i in items if i.supported], items=items,
                         complete=complete, problems=problems, n_snippets=len(valid_ids), attempts=attempts)


class CoverageJudge:
    """Judges one context view against a task's GT items with an LLM (``judge_backbone``)."""

    def __init__(self, llm: Any, *, max_tokens: int = 1024, retries: int = 1, prompt_version: str = PROMPT_VERSION) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.retries = retries
        self.prompt_version = prompt_version
        self.system = _system_prompt(prompt_version)

    def judge_view(self, view: str, gt_items: Sequence[dict[str, Any]], snippets: Sequence[dict[str, Any]]) -> ViewJudgement:
        if not gt_items:
            raise ValueError("CoverageJudge.judge_view: a task-run needs at least one GT item")
        if not snippets:  # nothing retrieved: nothing can be supported, no call needed
            return validate_judgement({"items": [{"id": f"G{i}", "supported": False, "evidence": []}
                                                 for i in range(1, len(gt_items) + 1)]}, gt_items, [], view, 0)
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system},
                                          {"role": "user", "content": render_request(gt_items, snippets)}]
        ids = [s["eid"] for s in snippets]
        result: ViewJudgement | None = None
        for attempt in range(1, self.retries + 2):
            raw = self.llm.chat_json(messages, purpose=PURPOSE, max_tokens=self.max_tokens)
            result = validate_judgement(raw, gt_items, ids, view, attempt)
            if result.complete:
                return result
            messages = [*messages, {"role": "assistant", "content": json.dumps(raw) if raw is not None else "(invalid)"},
                        {"role": "user", "content": "Your answer was rejected: " + "; ".join(result.problems) +
                         f". Answer again with JSON only, exactly one entry for each of G1..G{len(gt_items)}."}]
        assert result is not None
        return result

    def judge_task_run(self, gt_items: Sequence[dict[str, Any]], context: dict[str, Any]) -> dict[str, ViewJudgement]:
        views = context_views(context)
        return {v: self.judge_view(v, gt_items, views[v]) for v in VIEWS}


def judge_sample(judge: CoverageJudge, sample: SampleDir, spec: dict[str, Any], *, judge_name: str = "") -> dict[str, Any]:
    """Coverage record of one finished sample (``samples/<id>/coverage.json``); ``spec`` is the
    LoCoEval sample (``requirements[].gt_items``)."""
    result = sample.result() or {}
    gt_by_req = {str(r["req_id"]): list(r.get("gt_items") or []) for r in spec.get("requirements") or []}
    task_contexts: dict[str, dict[str, Any]] = {}
    for row in sample.contexts():
        if row.get("phase") == "task" and row.get("req_id") is not None:
            task_contexts[str(row["req_id"])] = row.get("context") or {}
    task_runs = []
    for task in result.get("tasks") or []:
        req = str(task["req_id"])
        entry: dict[str, Any] = {"req_id": req, "gt_item_ids": [str(g["id"]) for g in gt_by_req.get(req, [])]}
        if req not in gt_by_req or not gt_by_req[req]:
            entry["error"] = f"sample {spec.get('id')}: no gt_items for requirement {req}"
        elif req not in task_contexts:
            entry["error"] = f"no task context recorded for {req} in contexts.jsonl"
        else:
            entry["view_source"] = view_source(task_contexts[req])
            views = judge.judge_task_run(gt_by_req[req], task_contexts[req])
            entry["views"] = {v: j.to_dict() for v, j in views.items()}
        task_runs.append(entry)
    return {"sample_id": _sample_id(sample, result), "prompt_version": getattr(judge, "prompt_version", PROMPT_VERSION), "views_version": VIEWS_VERSION,
            "judge": judge_name,
            "judge_model": getattr(getattr(judge.llm, "spec", None), "model", None), "task_runs": task_runs}


def _sample_id(sample: SampleDir, result: dict[str, Any]) -> str:
    return str(result.get("sample_id") or result.get("task_id") or sample.name)


# ---------------------------------------------------------------------------- whole runs

@dataclass
class CoverageCounts:
    judged: int = 0
    skipped: int = 0
    failed: int = 0


def load_sample_specs(source: str | Path) -> dict[str, dict[str, Any]]:
    """GT items of every LoCoEval sample of ``source`` (any source benchmarks.locoeval.loader reads:
    a JSONL path, ``package:...``, ``hf:...``, the official layout), as ``{id: {requirements: ...}}``."""
    from benchmarks.locoeval.loader import load_samples

    return {s.id: {"id": s.id, "requirements": [
        {"req_id": r.req_id, "gt_items": [{"id": g.id, "text": g.text} for g in r.gt_items]} for r in s.requirements]}
        for s in load_samples(source)}


def _run_name(run: RunDir, key: str, section: str) -> str:
    """The run's benchmark / backbone / method from its manifest, else its ``config.yaml``."""
    node = run.config().get(section)
    return str(run.manifest.get(key) or (node.get("name") if isinstance(node, dict) else None) or "")


def _locoeval_runs(paths: Sequence[str | Path]) -> list[RunDir]:
    """Every LoCoEval-format run directory under ``paths``, once each."""
    seen: set[Path] = set()
    out = []
    for p in paths:
        for run in RunDir.discover(p):
            if run.path.resolve() in seen:
                continue
            seen.add(run.path.resolve())
            if run.manifest.get("family") == Family.LOCOEVAL.value:
                out.append(run)
    return out


def judge_runs(judge: CoverageJudge, ledger: UsageLedger, runs: Sequence[str | Path], *, judge_model: str,
               judge_name: str, methods: Sequence[str] = ("reconmem",), samples: str | None = None,
               overwrite: bool = False, limit: int | None = None) -> CoverageCounts:
    """Judge every ok sample of ``runs`` (results roots or run directories) of ``methods``, writing
    each sample's ``coverage.json`` as it is judged; at most ``limit`` samples. Raises
    :class:`benchmarks.records.RecordError` on bad records and ``ValueError`` naming the run when its
    sample file cannot be read."""
    counts = CoverageCounts()
    spec_cache: dict[str, dict[str, dict[str, Any]]] = {}
    for run in _locoeval_runs(runs):
        method = _run_name(run, "method", "method")
        if method not in methods:
            continue
        spec_path = str(samples or (run.config().get("benchmark") or {}).get("samples") or "")
        try:
            if spec_path not in spec_cache:
                spec_cache[spec_path] = load_sample_specs(spec_path)
            specs = spec_cache[spec_path]
        except (FileNotFoundError, ValueError) as exc:
            raise ValueError(f"run {run.path}: {exc}") from exc
        for sample in run.sample_dirs():
            result = sample.result()
            if result is None or sample_class(result) != "ok":
                continue
            if limit is not None and counts.judged >= limit:
                break
            sample_id = _sample_id(sample, result)
            existing = sample.coverage()
            if existing and not overwrite and existing.get("judge_model") == judge_model \
                    and existing.get("prompt_version") == judge.prompt_version \
                    and existing.get("views_version") == VIEWS_VERSION:
                counts.skipped += 1
                continue
            spec = specs.get(sample_id)
            if spec is None:
                log.error("%s: sample %s not in %s", run.path, sample_id, spec_path)
                counts.failed += 1
                continue
            start = len(ledger.events)
            try:
                with ledger.tags(sample=sample_id, role="coverage_judge"):
                    record = judge_sample(judge, sample, spec, judge_name=judge_name)
            except ValueError as exc:  # a corrupt context record: name it, judge the rest
                log.error("%s: sample %s: %s", run.path, sample_id, exc)
                counts.failed += 1
                continue
            record["judge_model"] = judge_model
            record["ledger"] = ledger.events[start:]
            atomic_write_json(sample.path / COVERAGE, record)
            counts.judged += 1
            bad = sum(1 for t in record["task_runs"] if "error" in t or
                      any(not v["complete"] for v in (t.get("views") or {}).values()))
            log.info("%s/%s/%s %s: %d task-run(s), %d incomplete or unjudged", _run_name(run, "benchmark", "benchmark"),
                     _run_name(run, "backbone", "backbone"), method, sample_id, len(record["task_runs"]), bad)
    return counts


def check_judge(cfg: Any) -> None:
    """Refuse a local judge model (Figure 6 needs the paper's judge) unless ``allow_local_eval_models``:
    a ConfigError naming the option."""
    from benchmarks.errors import ConfigError

    if str(cfg.judge_backbone.model).startswith("local/") and not cfg.get("allow_local_eval_models"):
        raise ConfigError(f"judge_backbone={cfg.judge_backbone.name} is a local model, but Figure 6 needs the "
                          "paper's judge (backbone@judge_backbone=gemini_25_flash); pass allow_local_eval_models=true "
                          "to judge with it anyway")


def coverage_scorer(env: Any) -> dict[str, Any]:
    """The ``coverage_judge`` scorer (:mod:`benchmarks.scoring`) over one run: every ok sample judged by
    ``env.clients.judge`` (``coverage.json`` per sample, as :func:`judge_runs`). Options: ``samples``
    (the sample file; default the run's ``benchmark.samples``), ``overwrite`` (``true``: re-judge),
    ``limit`` (at most N samples), ``prompt_version`` (``coverage-v1`` | ``coverage-v2``)."""
    cfg = env.cfg
    if cfg is None:
        from benchmarks.errors import ConfigError

        raise ConfigError("coverage_judge: needs the composed config of its judge (backbone@judge_backbone=<name>)")
    check_judge(cfg)
    options = env.options
    prompt_version = str(options.get("prompt_version") or PROMPT_VERSION)
    if prompt_version not in PROMPT_FILES:
        from benchmarks.errors import ConfigError

        raise ConfigError(f"--option prompt_version={prompt_version}: expected one of {sorted(PROMPT_FILES)}")
    judge = CoverageJudge(env.clients.judge, max_tokens=int(cfg.judge_backbone.max_output_tokens),
                          prompt_version=prompt_version)
    method = _run_name(env.run, "method", "method")
    limit = options.get("limit")
    counts = judge_runs(judge, env.ledger, [env.run.path], judge_model=str(cfg.judge_backbone.model),
                        judge_name=str(cfg.judge_backbone.name), methods=[method], samples=options.get("samples"),
                        overwrite=str(options.get("overwrite", "false")).lower() == "true",
                        limit=int(limit) if limit is not None else None)
    return {**asdict(counts), "judge_model": str(cfg.judge_backbone.model), "prompt_version": prompt_version,
            "views_version": VIEWS_VERSION}
