"""LoCoEval metrics as pure functions over run records (ReConMem §3.3, Tables 1/3/4, Figs. 5/8).

Inputs are the records a run writes: ``result.json`` dicts (``results``) and ledger events
(``ledger.jsonl`` rows, grouped per sample as ``{sample_id: [event, ...]}``). Only
:func:`read_run`, :func:`summarize_run` and :func:`compression_ratio_between` touch the disk.

Token accounting (paper §3.3): the counted calls are :func:`benchmarks.accounting.is_counted`'s
(the mock user, the judges and the builder excluded; response generation and any
context-management call counted). CR(M) = cumulative input tokens of Full / of M over the same
samples (:func:`cr`); end-to-end tokens = input + output of the counted
calls; the Full run is Full History under the run's own code retriever (:func:`cr_reference`).
Cached responses count with the usage they had when first computed (a cache hit replays the same
prompt).
Pass@1 (:func:`pass_at_1`) is the fraction (0..1) of function-generation tasks whose tests passed,
over **every task of every scored sample** (:func:`task_passed`): a sample that still errored after the run's retries (``status: error``)
counts all its tasks as failed and is counted in ``n_errored``; a selected sample that never
finished (``interrupted``, or ``missing``: no result.json) counts its tasks as failed too and is
counted in ``n_missing`` (the paper scores all 320 tasks; an error or a gap never improves a score). Token figures (CR, tokens per conversation) use ``ok`` samples
only, since an errored sample's ledger is partial; the report's CR additionally restricts to the
samples every compared method finished (:mod:`benchmarks.analysis.tables`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.accounting import is_counted
from benchmarks.records import RunDir, sample_class

# Table 4's stages (ReConMem's four purposes), in the paper's order.
STAGES = ("turn_generation", "task_generation", "memory_sketching", "memory_update")
SUBSETS = ("single-hop", "multi-hop")
LENGTH_BINS = ((30, 40), (40, 50), (50, 60), (60, 70))

Events = Sequence[Mapping[str, Any]]


def counted(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The ledger events of counted calls (:func:`benchmarks.accounting.is_counted`)."""
    return [e for e in events if is_counted(e.get("purpose"))]


# ------------------------------------------------------------------------------------- Pass@1
def ok_results(results: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in results if sample_class(r) == "ok"]


def is_errored(result: Mapping[str, Any]) -> bool:
    """A sample that still errored after the run's retries (scored: its tasks count as failed)."""
    return sample_class(result) == "errored"


def is_missing(result: Mapping[str, Any]) -> bool:
    """A selected sample that never finished (interrupted, or no result.json): scored, its tasks failed."""
    return sample_class(result) == "missing"


def scored_results(results: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The samples that enter Pass@1: ok, errored and missing / interrupted ones (excluded do not)."""
    return [r for r in results if sample_class(r) != "excluded"]


def task_passed(result: Mapping[str, Any], task: Mapping[str, Any]) -> bool:
    """Whether one task of a scored sample counts as passed: its tests passed and the sample
    finished ``ok`` (an errored or missing sample's tasks are failures)."""
    return sample_class(result) == "ok" and bool(task.get("passed"))


def sample_outcomes(result: Mapping[str, Any]) -> list[bool]:
    """One bool per task of a scored sample (:func:`task_passed`); all False for an errored sample
    (its recorded task list, else ``n_tasks`` of them)."""
    tasks = result.get("tasks") or []
    if sample_class(result) == "ok":
        return [task_passed(result, t) for t in tasks]
    return [False] * (len(tasks) if tasks else int(result.get("n_tasks") or 0))


def task_outcomes(results: Iterable[Mapping[str, Any]]) -> list[bool]:
    """One bool per task of every scored sample (errored samples' tasks are failures)."""
    return [o for r in scored_results(results) for o in sample_outcomes(r)]


def pass_at_1(outcomes: Iterable[bool]) -> float | None:
    """Pass@1: the fraction (0..1) of passed tasks among ``outcomes`` — one per task of every
    scored sample (:func:`task_outcomes`, or the analysis' task rows); None without a task."""
    values = list(outcomes)
    return sum(values) / len(values) if values else None


def results_pass_at_1(results: Iterable[Mapping[str, Any]], *, subset: str | None = None) -> float | None:
    """:func:`pass_at_1` over every task of the scored samples of ``results``, optionally of one subset."""
    return pass_at_1(task_outcomes(r for r in results if subset is None or r.get("subset") == subset))


def pass_at_1_by_subset(results: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """``{"single-hop": .., "multi-hop": .., "overall": ..}``."""
    out: dict[str, float | None] = {s: results_pass_at_1(results, subset=s) for s in SUBSETS}
    out["overall"] = results_pass_at_1(results)
    return out


def pass_at_1_by(results: Sequence[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], Any]) -> dict[Any, float | None]:
    """Pass@1 per group of samples (e.g. ``key=task_count`` or ``key=length_bin``; Fig. 8)."""
    groups: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
    for r in scored_results(results):
        k = key(r)
        if k is not None:
            groups[k].append(r)
    return {k: results_pass_at_1(v) for k, v in sorted(groups.items(), key=lambda kv: str(kv[0]))}


def task_count(result: Mapping[str, Any]) -> int:
    """k = number of function-generation tasks in the conversation."""
    return int(result.get("n_tasks", len(result.get("tasks", []))))


def length_bin(result: Mapping[str, Any]) -> str | None:
    """The paper's conversation-length interval of a sample ([30,40) ... [60,70)), or None."""
    n = int(result.get("n_turns", 0))
    for lo, hi in LENGTH_BINS:
        if lo <= n < hi:
            return f"[{lo},{hi})"
    return None


# ------------------------------------------------------------------------------------- tokens
def input_tokens(events: Events) -> int:
    """Cumulative input tokens of the counted calls (the CR numerator / denominator)."""
    return sum(int(e.get("input_tokens", 0)) for e in counted(events))


def conversation_tokens(events: Events) -> dict[str, int]:
    """End-to-end tokens of one conversation: ``{"input", "output", "total"}`` of counted calls."""
    inp = sum(int(e.get("input_tokens", 0)) for e in counted(events))
    outp = sum(int(e.get("output_tokens", 0)) for e in counted(events))
    return {"input": inp, "output": outp, "total": inp + outp}


def stage_breakdown(events: Events) -> dict[str, int]:
    """Input+output tokens per stage (Table 4): the four ReConMem stages, ``other`` counted calls, ``total``."""
    out = {s: 0 for s in STAGES}
    out["other"] = 0
    for e in counted(events):
        tokens = int(e.get("input_tokens", 0)) + int(e.get("output_tokens", 0))
        out[e["purpose"] if e.get("purpose") in STAGES else "other"] += tokens
    out["total"] = sum(out[s] for s in (*STAGES, "other"))
    return out


def per_turn_tokens(events: Events) -> dict[int, int]:
    """Counted input+output tokens per turn index (Fig. 5); events without a turn are skipped."""
    out: dict[int, int] = defaultdict(int)
    for e in counted(events):
        if e.get("turn") is None:
            continue
        out[int(e["turn"])] += int(e.get("input_tokens", 0)) + int(e.get("output_tokens", 0))
    return dict(sorted(out.items()))


def mean_per_turn_tokens(ledgers: Mapping[str, Events], *, phase: str | None = "prep") -> dict[int, float]:
    """Per-turn tokens averaged over conversations that reach the turn (default: preparation turns)."""
    sums: dict[int, int] = defaultdict(int)
    counts: dict[int, int] = defaultdict(int)
    for events in ledgers.values():
        evs = [e for e in events if phase is None or e.get("phase") == phase]
        for turn, tok in per_turn_tokens(evs).items():
            sums[turn] += tok
            counts[turn] += 1
    return {t: sums[t] / counts[t] for t in sorted(sums)}


def mean_conversation_tokens(ledgers: Mapping[str, Events]) -> dict[str, float] | None:
    """Average end-to-end tokens per conversation (Table 3) and the stage breakdown (Table 4)."""
    if not ledgers:
        return None
    n = len(ledgers)
    per = [conversation_tokens(ev) for ev in ledgers.values()]
    stages = [stage_breakdown(ev) for ev in ledgers.values()]
    out: dict[str, Any] = {k: sum(p[k] for p in per) / n for k in ("input", "output", "total")}
    out["stages"] = {k: sum(s[k] for s in stages) / n for k in (*STAGES, "other", "total")}
    total = out["stages"]["total"]
    out["stage_share"] = {k: (out["stages"][k] / total if total else 0.0) for k in (*STAGES, "other")}
    return out


def cr(full_input_tokens: float, method_input_tokens: float) -> float | None:
    """CR(M) = InputTokens(Full) / InputTokens(M) (Eq. 10), both summed over the same samples;
    None when M used no input token (numpy scalars in, a numpy scalar out)."""
    return full_input_tokens / method_input_tokens if method_input_tokens > 0 else None


def compression_ratio(method_ledgers: Mapping[str, Events], full_ledgers: Mapping[str, Events],
                      *, sample_ids: Iterable[str] | None = None) -> float | None:
    """:func:`cr` over the samples both runs finished."""
    common = set(method_ledgers) & set(full_ledgers)
    if sample_ids is not None:
        common &= set(sample_ids)
    if not common:
        return None
    m = sum(input_tokens(method_ledgers[s]) for s in common)
    f = sum(input_tokens(full_ledgers[s]) for s in common)
    return cr(f, m)


# ------------------------------------------------------------------------------ run summaries
def summarize(results: Sequence[Mapping[str, Any]], ledgers: Mapping[str, Events]) -> dict[str, Any]:
    """The summary of one run from its records (pure)."""
    oks = ok_results(results)
    ok_ids = {r["sample_id"] for r in oks}
    ok_ledgers = {k: v for k, v in ledgers.items() if k in ok_ids}
    n_errored = sum(1 for r in results if is_errored(r))
    n_missing = sum(1 for r in results if is_missing(r))
    cost = 0.0
    for r in results:
        if r.get("cost_usd") is not None:
            cost += float(r.get("cost_usd") or 0.0)
        else:  # older records: the sample's ledger (missing cost_usd = 0)
            cost += sum(float(e.get("cost_usd") or 0.0) for e in ledgers.get(r.get("sample_id"), ()))
    return {
        "n_samples": len(results),
        "n_ok": len(oks),
        "n_error": n_errored,
        "n_errored": n_errored,
        "n_missing": n_missing,
        "complete": n_missing == 0,
        "n_scored": len(scored_results(results)),
        "n_tasks": len(task_outcomes(results)),
        "n_passed": sum(task_outcomes(results)),
        "pass_at_1": pass_at_1_by_subset(results),
        "pass_at_1_by_task_count": {str(k): v for k, v in pass_at_1_by(results, task_count).items()},
        "pass_at_1_by_length": pass_at_1_by(results, length_bin),
        "tokens_per_conversation": mean_conversation_tokens(ok_ledgers),
        "input_tokens_total": sum(input_tokens(v) for v in ok_ledgers.values()),
        "wall_seconds_total": round(sum(float(r.get("wall_seconds") or 0) for r in results), 3),
        "json_failures": sum(int(r.get("json_failures") or 0) for r in results),
        "cost_usd": round(cost, 8),
        "errors": [{"sample_id": r["sample_id"], "error": r.get("error")} for r in results if is_errored(r)],
    }


def read_run(run_path: str | Path, *, sample_ids: Iterable[str] | None = None) -> dict[str, Any]:
    """``{"results": [...], "ledgers": {sample_id: events}}`` of a run directory's finished samples
    (of ``sample_ids`` when given), read through :class:`benchmarks.records.RunDir`."""
    run = RunDir(run_path)
    wanted = set(sample_ids) if sample_ids is not None else None
    results: list[dict[str, Any]] = []
    ledgers: dict[str, list[dict[str, Any]]] = {}
    for d in run.sample_dirs():
        res = d.result()
        if res is None or (wanted is not None and res.get("sample_id") not in wanted):
            continue
        results.append(res)
        ledgers[str(res["sample_id"])] = d.ledger(strict=False)
    return {"results": results, "ledgers": ledgers}


def summarize_run(run_path: str | Path, *, sample_ids: Iterable[str] | None = None) -> dict[str, Any]:
    """:func:`summarize` over a run directory's records; with ``sample_ids`` (the selection) a selected
    sample without a result counts as ``missing`` (its tasks failed, from the manifest's ``selected``)."""
    if sample_ids is None:
        rec = read_run(run_path)
        return summarize(rec["results"], rec["ledgers"])
    ids = [str(i) for i in sample_ids]
    rec = read_run(run_path, sample_ids=ids)
    return summarize(RunDir(run_path).selection_results(ids), rec["ledgers"])


FULL = "full"  # Full History: the CR reference


def cr_reference(retriever: str | None) -> str:
    """The method whose run a run's CR is measured against: Full History under the same code
    retriever (``full`` for dense, ``full_bm25`` / ``full_hybrid`` for BM25 / hybrid: the naming of
    ``benchmarks.harness.with_retriever_identity``). Without that run there is no CR, never one
    against another retriever's Full."""
    return FULL if retriever in (None, "", "dense") else f"{FULL}_{retriever}"


def compression_ratio_between(method_run: str | Path, full_run: str | Path, *,
                              sample_ids: Iterable[str] | None = None) -> float | None:
    """CR of the method run against a Full run (same backbone), over their common ok samples."""
    ids = list(sample_ids) if sample_ids is not None else None
    a, b = read_run(method_run, sample_ids=ids), read_run(full_run, sample_ids=ids)
    ok_a = {r["sample_id"] for r in ok_results(a["results"])}
    ok_b = {r["sample_id"] for r in ok_results(b["results"])}
    common = ok_a & ok_b
    return compression_ratio({k: v for k, v in a["ledgers"].items() if k in common},
                             {k: v for k, v in b["ledgers"].items() if k in common})


def pass_at_1_scorer(env: Any) -> dict[str, Any]:
    """The ``pass_at_1`` scorer (:mod:`benchmarks.scoring`): Pass@1 per subset and overall over the
    run's selected samples as recorded (a selected sample without a result counts as missing), with
    the task counts - the numbers the run's summary holds, recomputed from the records."""
    results = env.run.selection_results(env.run.selected_ids())
    outcomes = task_outcomes(results)
    return {"pass_at_1": pass_at_1_by_subset(results), "n_scored": len(scored_results(results)),
            "n_tasks": len(outcomes), "n_passed": sum(outcomes)}
