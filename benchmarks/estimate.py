"""Dry-run estimate of a run: calls, input/output tokens and dollars, per method and role.

The model (documented in docs/api-runs.md):

1. **Size of the work.** A sample's *units* are its conversation steps: for LoCoEval the outline
   turns plus the tasks (``len(sample.outline) + len(sample.tasks)``); for benchmarks whose length
   is decided while running (CAB: the maintainer answers until the user is satisfied) the mean
   units per sample of the calibration run.
2. **Calibration.** Per ``purpose``: calls per unit, input tokens per call and output tokens per
   call, measured from the ``ledger.jsonl`` of finished samples of earlier runs of the same
   benchmark and method under ``run.results_dir`` (any backbone; the run with the most samples,
   preferring the configured backbone). A unit in a ledger is one distinct ``(phase, turn)`` tag.
   Cached calls count as calls (the ledger keeps their original tokens), so the estimate is what
   the run costs from a cold cache. Without a calibration run the estimate says so and gives only
   the sizes: make one with ``run.limit=2`` on ``backbone=local`` (free) or a scripted backbone.
   A run that skips the preparation replies (bracket methods, ``method.skip_prep_replies``) has
   only its tasks (plus any unscripted turn the mock user writes) as units, and is calibrated only
   from runs that skipped them too (the manifest's ``skip_prep_replies``).
3. **Dollars.** Each purpose is priced with the backbone of its role in the purpose taxonomy
   (:mod:`reconmem.platform.llm.purposes`: the mock user -> ``user_backbone``, the judges ->
   ``judge_backbone``, everything else and an unregistered purpose -> ``backbone``) from
   conf/pricing.yaml over litellm's offline cost map (``backbone.pricing_model`` honoured).

4. **Batch submission** (``run.batch=true``: the run's requests go through a provider's batch API,
   ``python -m scripts.exchange submit``; docs/exchange.md). Every role whose backbone's provider
   has a batch API here (:data:`reconmem.platform.llm.batch.SUPPORTED_PROVIDERS`) is priced at the
   provider's batch rate (:meth:`~reconmem.platform.llm.pricing.Pricing.batch_price`); the others
   stay direct, at their standard rate. A batch answers one call of each sample per cycle, so the
   run needs as many cycles as the longest chain of sequential batched calls in one sample: its
   units x the batched calls per unit other than task answers, plus one cycle for its task answers
   (independent of each other, all asked in one cycle: the exchange's ``defer_tasks``; a bracket
   run, tasks only, needs one cycle). Each cycle takes up to the provider's completion window
   (``run.batch_turnaround_hours`` overrides it); the typical turnaround of conf/pricing.yaml
   ``batch:`` is printed beside it.

Known bias: linear in units. Full History's prompt grows with every turn, so samples much longer
than the calibration samples cost more than estimated; calibrate on samples of typical length.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from benchmarks.records import LEDGER, RunDir, SampleDir, Status
from benchmarks.roles import ROLE_OPTIONS
from reconmem.platform.llm.purposes import PURPOSES, role_of


def backbone_option(purpose: str) -> str:
    """The backbone option that serves calls of ``purpose`` (its role in the purpose taxonomy)."""
    return ROLE_OPTIONS[role_of(purpose)]


def _is_call(event: dict[str, Any]) -> bool:
    """A ledger event of a backbone call (not a spend seed; an unregistered purpose counts as a call)."""
    purpose = event.get("purpose")
    return bool(purpose) and (purpose not in PURPOSES or PURPOSES[purpose].is_call)


def sample_units(sample: Any, *, skip_prep_replies: bool = False) -> int | None:
    """Conversation steps of a sample known before running (None: decided at run time). Skipped
    preparation replies leave the tasks and the turns the mock user still writes (unscripted ones)."""
    outline = getattr(sample, "outline", None)
    tasks = getattr(sample, "tasks", None)
    if outline is None and tasks is None:
        return None
    if skip_prep_replies:
        return len(tasks or ()) + sum(1 for st in outline or () if not getattr(st, "scripted", True))
    return len(outline or ()) + len(tasks or ())


def calibrate(results_dir: str | Path, benchmark: str, method: str, backbone: str | None = None, *,
              skip_prep_replies: bool | None = None) -> dict[str, Any] | None:
    """Per-purpose rates from the finished samples of the best earlier run (see module doc), or None.
    ``skip_prep_replies`` (not None): only runs whose manifest says the same."""
    best: tuple[tuple[int, int], RunDir, list[SampleDir]] | None = None
    for run in RunDir.of_method(results_dir, benchmark, method):
        if skip_prep_replies is not None and bool(run.manifest_file().get("skip_prep_replies")) != skip_prep_replies:
            continue
        finished = [d for d in run.sample_dirs() if _finished(d)]
        if not finished:
            continue
        rank = (int(run.backbone_folder == backbone), len(finished))
        if best is None or rank > best[0]:
            best = (rank, run, finished)
    if best is None:
        return None
    _, run, finished = best
    calls: dict[str, int] = defaultdict(int)
    tin: dict[str, int] = defaultdict(int)
    tout: dict[str, int] = defaultdict(int)
    units = 0
    for d in finished:
        rows = [e for e in d.ledger(strict=False) if _is_call(e)]
        steps = {(e.get("phase"), e.get("turn")) for e in rows if e.get("turn") is not None}
        units += max(1, len(steps))
        for e in rows:
            p = str(e["purpose"])
            calls[p] += 1
            tin[p] += int(e.get("input_tokens") or 0)
            tout[p] += int(e.get("output_tokens") or 0)
    samples = len(finished)
    return {"run": str(run.path), "samples": samples, "units": units, "units_per_sample": units / max(1, samples),
            "purposes": {p: {"calls_per_unit": calls[p] / units, "input_per_call": tin[p] / calls[p],
                             "output_per_call": tout[p] / calls[p]} for p in sorted(calls)}}


def _finished(sample: SampleDir) -> bool:
    result = sample.result()
    return result is not None and result.get("status") == Status.OK.value and sample.file(LEDGER).is_file()


def _pricing_model(cfg: Any, role: str) -> str:
    node = cfg.get(role) or cfg.backbone
    return str(node.get("pricing_model") or node.model)


def _price(cfg: Any, role: str, batched: bool = False):
    from reconmem.platform.llm import default_pricing

    model = _pricing_model(cfg, role)
    if batched:
        return default_pricing().batch_price(model)
    return default_pricing().price(model)


def batch_roles(cfg: Any) -> dict[str, Any]:
    """With ``run.batch``: role option -> the provider's :class:`~reconmem.platform.llm.pricing.BatchTerms`
    for every role whose backbone's provider has a batch API here and a known batch rate ({} without)."""
    if not bool((cfg.get("run") or {}).get("batch") or False):
        return {}
    from reconmem.platform.llm import default_pricing
    from reconmem.platform.llm.batch import SUPPORTED_PROVIDERS
    from reconmem.platform.llm.pricing import provider_of

    pricing = default_pricing()
    roles = {}
    for role in ROLE_OPTIONS.values():
        if role != "backbone" and cfg.get(role) is None:
            continue
        model = _pricing_model(cfg, role)
        provider = provider_of(model)
        if (provider in SUPPORTED_PROVIDERS and provider in pricing.batch_terms
                and not model.startswith(("local/", "scripted/")) and pricing.batch_price(model) is not None):
            roles[role] = pricing.batch_terms[provider]
    return roles


def estimate_run(cfg: Any, benchmark: Any, samples: Sequence[Any], *, calibration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Calls, tokens and dollars the run would spend on ``samples`` (see the module doc for the model)."""
    method = str(cfg.method.name)
    bench_name = str(cfg.benchmark.name)
    skip = bool(cfg.method.get("skip_prep_replies") or False)
    cal = calibration if calibration is not None else calibrate(cfg.run.results_dir, bench_name, method,
                                                                str(cfg.backbone.name), skip_prep_replies=skip)
    known = [sample_units(s, skip_prep_replies=skip) for s in samples]
    est: dict[str, Any] = {"benchmark": bench_name, "method": method, "backbone": str(cfg.backbone.name),
                           "samples": len(samples), "calibrated_from": cal and cal["run"], "purposes": {},
                           "skip_prep_replies": skip}
    batched = batch_roles(cfg)
    if bool((cfg.get("run") or {}).get("batch") or False):
        est["batch"] = _batch_plan(cfg, batched)
    if cal is None:
        est["units"] = sum(u for u in known if u is not None) if all(u is not None for u in known) else None
        est.update(calls=None, input_tokens=None, output_tokens=None, cost_usd=None)
        if est.get("batch") and skip and est["batch"]["roles"]:
            _set_cycles(est["batch"], 1)
        return est
    units = sum(u if u is not None else cal["units_per_sample"] for u in known)
    est["units"] = round(units, 1)
    totals = {"calls": 0.0, "input_tokens": 0.0, "output_tokens": 0.0, "cost_usd": 0.0, "standard_cost_usd": 0.0}
    sequential_per_unit, task_answers = 0.0, False
    for purpose, rate in cal["purposes"].items():
        role = backbone_option(purpose)
        calls = rate["calls_per_unit"] * units
        tin, tout = calls * rate["input_per_call"], calls * rate["output_per_call"]
        standard = _price(cfg, role)
        price = _price(cfg, role, batched=True) if role in batched else standard
        cost = price.cost(tin, tout)
        if role in batched and is_task_answer(purpose):
            task_answers = True
        elif role in batched:
            sequential_per_unit += rate["calls_per_unit"]
        est["purposes"][purpose] = {"role": role, "model": str((cfg.get(role) or cfg.backbone).model),
                                    "price_source": price.source, "calls": round(calls, 1), "batch": role in batched,
                                    "input_tokens": round(tin), "output_tokens": round(tout), "cost_usd": round(cost, 6)}
        for k, v in (("calls", calls), ("input_tokens", tin), ("output_tokens", tout), ("cost_usd", cost),
                     ("standard_cost_usd", standard.cost(tin, tout))):
            totals[k] += v
    est.update(calls=round(totals["calls"], 1), input_tokens=round(totals["input_tokens"]),
               output_tokens=round(totals["output_tokens"]), cost_usd=round(totals["cost_usd"], 6))
    if est.get("batch"):
        est["batch"]["standard_cost_usd"] = round(totals["standard_cost_usd"], 6)
        if est["batch"]["roles"]:
            longest = max((u if u is not None else cal["units_per_sample"] for u in known), default=0)
            chain = round(longest * sequential_per_unit) + int(task_answers)
            _set_cycles(est["batch"], max(1, chain), longest_units=round(longest, 1),
                        task_cycle=task_answers, only_tasks=sequential_per_unit == 0)
    return est


def _batch_plan(cfg: Any, batched: dict[str, Any]) -> dict[str, Any]:
    """The batch part of an estimate before the cycles are known: roles, their provider's terms."""
    override = (cfg.get("run") or {}).get("batch_turnaround_hours")
    terms = next(iter(batched.values()), None)
    plan: dict[str, Any] = {"roles": sorted(batched), "direct_roles": [], "cycles": None,
                            "provider": terms and terms.provider, "source": terms and terms.source,
                            "window_hours": terms and terms.completion_window_hours,
                            "typical_hours": terms and terms.typical_turnaround_hours,
                            "turnaround_hours": float(override) if override else (terms and terms.completion_window_hours),
                            "turnaround_from": "run.batch_turnaround_hours" if override else "completion window"}
    for role in ROLE_OPTIONS.values():
        if role not in batched and (role == "backbone" or cfg.get(role) is not None):
            plan["direct_roles"].append(f"{role} ({_pricing_model(cfg, role)})")
    return plan


def is_task_answer(purpose: str) -> bool:
    """Whether ``purpose`` is a task answer (independent calls: one batch cycle answers all of a sample's)."""
    from reconmem.platform.llm.purposes import Kind

    entry = PURPOSES.get(purpose)
    return entry is not None and entry.kind is Kind.TASK_ANSWER


def _set_cycles(plan: dict[str, Any], cycles: int, longest_units: float | None = None, *, task_cycle: bool = True,
                only_tasks: bool = True) -> None:
    plan["cycles"] = int(cycles)
    plan["longest_sample_units"] = longest_units
    plan["task_cycle"] = task_cycle
    plan["only_tasks"] = only_tasks
    plan["wall_hours"] = cycles * plan["turnaround_hours"]
    plan["typical_wall_hours"] = cycles * plan["typical_hours"]


def format_estimate(est: dict[str, Any]) -> str:
    """A readable table of :func:`estimate_run`'s result."""
    head = (f"dry run: {est['benchmark']} / {est['method']} / {est['backbone']}: {est['samples']} sample(s), "
            f"{est.get('units')} conversation steps")
    if est.get("skip_prep_replies"):
        head += " (preparation replies skipped: the tasks and any mock-user turn)"
    batch = est.get("batch")
    if est.get("calibrated_from") is None:
        lines = [head + "\n  no calibration run found (finished samples of this benchmark and method under "
                 "run.results_dir): run it once with run.limit=2 backbone=local (free), then dry-run again"]
        return "\n".join(lines + (format_batch(batch) if batch else []))
    lines = [head, f"  calibrated from {est['calibrated_from']}",
             f"  {'purpose':<24}{'role':<16}{'calls':>9}{'input tok':>12}{'output tok':>12}{'USD':>11}  price"]
    for purpose, row in est["purposes"].items():
        lines.append(f"  {purpose:<24}{row['role']:<16}{row['calls']:>9.1f}{row['input_tokens']:>12,}"
                     f"{row['output_tokens']:>12,}{row['cost_usd']:>11.4f}  {row['price_source']}")
    lines.append(f"  {'total':<40}{est['calls']:>9.1f}{est['input_tokens']:>12,}{est['output_tokens']:>12,}"
                 f"{est['cost_usd']:>11.4f}")
    if batch:
        lines += format_batch(batch)
    return "\n".join(lines)


def _duration(hours: float) -> str:
    text = f"{hours:,.1f}".removesuffix(".0") + " h"
    return text if hours < 48 else f"{text} = {hours / 24:,.1f} days"


def format_batch(batch: dict[str, Any]) -> list[str]:
    """The lines of an estimate's batch part: rate, cycles, wall time."""
    if not batch["roles"]:
        return ["  batch: run.batch=true, but no role's backbone has a batch API here (supported providers: "
                "openai, with a batch rate in conf/pricing.yaml): every call priced and sent directly"]
    lines = [f"  batch: {', '.join(batch['roles'])} calls priced at {batch['provider']}'s batch rate "
             f"(price column; conf/pricing.yaml batch.{batch['provider']}, litellm's listed batch prices)"]
    if batch.get("standard_cost_usd") is not None:
        lines[0] += f"; the same calls at the standard rate: ${batch['standard_cost_usd']:.4f}"
    if batch["direct_roles"]:
        lines.append(f"  direct (no batch API here, standard rate): {', '.join(batch['direct_roles'])}")
    if batch["cycles"] is None:
        lines.append("  batch cycles: unknown until calibrated (one per sequential batched call of a sample)")
        return lines
    if batch["only_tasks"]:
        why = "task answers only, independent of each other: one batch answers them all"
    else:
        why = (f"the longest chain of sequential batched calls in one sample, {batch['longest_sample_units']} steps"
               + (", its task answers in one cycle" if batch["task_cycle"] else "")
               + "; each cycle answers one call per sample, then the run resumes")
    lines.append(f"  batch cycles: {batch['cycles']} ({why})")
    lines.append(f"  wall time: {batch['cycles']} x {batch['turnaround_hours']:g} h ({batch['turnaround_from']}) = "
                 f"up to {_duration(batch['wall_hours'])}; at the typical turnaround we assume, "
                 f"{batch['typical_hours']:g} h per cycle (not the provider's promise; conf/pricing.yaml): "
                 f"{_duration(batch['typical_wall_hours'])}")
    return lines
