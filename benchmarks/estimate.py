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


def _price(cfg: Any, role: str):
    from reconmem.platform.llm import default_pricing

    node = cfg.get(role) or cfg.backbone
    return default_pricing().price(str(node.get("pricing_model") or node.model))


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
    if cal is None:
        est["units"] = sum(u for u in known if u is not None) if all(u is not None for u in known) else None
        est.update(calls=None, input_tokens=None, output_tokens=None, cost_usd=None)
        return est
    units = sum(u if u is not None else cal["units_per_sample"] for u in known)
    est["units"] = round(units, 1)
    totals = {"calls": 0.0, "input_tokens": 0.0, "output_tokens": 0.0, "cost_usd": 0.0}
    for purpose, rate in cal["purposes"].items():
        role = backbone_option(purpose)
        calls = rate["calls_per_unit"] * units
        tin, tout = calls * rate["input_per_call"], calls * rate["output_per_call"]
        price = _price(cfg, role)
        cost = price.cost(tin, tout)
        est["purposes"][purpose] = {"role": role, "model": str((cfg.get(role) or cfg.backbone).model),
                                    "price_source": price.source, "calls": round(calls, 1),
                                    "input_tokens": round(tin), "output_tokens": round(tout), "cost_usd": round(cost, 6)}
        for k, v in (("calls", calls), ("input_tokens", tin), ("output_tokens", tout), ("cost_usd", cost)):
            totals[k] += v
    est.update(calls=round(totals["calls"], 1), input_tokens=round(totals["input_tokens"]),
               output_tokens=round(totals["output_tokens"]), cost_usd=round(totals["cost_usd"], 6))
    return est


def format_estimate(est: dict[str, Any]) -> str:
    """A readable table of :func:`estimate_run`'s result."""
    head = (f"dry run: {est['benchmark']} / {est['method']} / {est['backbone']}: {est['samples']} sample(s), "
            f"{est.get('units')} conversation steps")
    if est.get("skip_prep_replies"):
        head += " (preparation replies skipped: the tasks and any mock-user turn)"
    if est.get("calibrated_from") is None:
        return (head + "\n  no calibration run found (finished samples of this benchmark and method under "
                "run.results_dir): run it once with run.limit=2 backbone=local (free), then dry-run again")
    lines = [head, f"  calibrated from {est['calibrated_from']}",
             f"  {'purpose':<24}{'role':<16}{'calls':>9}{'input tok':>12}{'output tok':>12}{'USD':>11}  price"]
    for purpose, row in est["purposes"].items():
        lines.append(f"  {purpose:<24}{row['role']:<16}{row['calls']:>9.1f}{row['input_tokens']:>12,}"
                     f"{row['output_tokens']:>12,}{row['cost_usd']:>11.4f}  {row['price_source']}")
    lines.append(f"  {'total':<40}{est['calls']:>9.1f}{est['input_tokens']:>12,}{est['output_tokens']:>12,}"
                 f"{est['cost_usd']:>11.4f}")
    return "\n".join(lines)
