"""CR-matched ablation budgets (paper §4.3): the budget search and the calibration runs behind
``python -m scripts.calibrate_cr``.

The paper: "we adjust the hyperparameters to keep the compression ratio under different ablation
settings as consistent as possible with the reference value". On a calibration subset (the first
``calib.samples`` samples of ``benchmark.samples``, alternating single-hop / multi-hop, or a list
of ids) :func:`calibrate`

1. runs Full History and full ReConMem (``calib.reference``) with ``python -m scripts.run`` and takes
   the target CR = InputTokens(Full) / InputTokens(ReConMem) (Eq. 10,
   ``benchmarks.locoeval.metrics.compression_ratio_between``);
2. runs the ablation with its configured budgets ("CR before");
3. searches its budgets (k2, k31, k32; ``calib.budgets``) for a CR within ``calib.tolerance`` (default
   ±5 %) of the target: the candidates form one chain in which every step changes one budget by
   one, round-robin (``4,2,2 -> 5,2,2 -> 5,3,2 -> 5,3,3 -> 6,3,3`` up, ``3,2,2 -> 3,1,2 ...`` down),
   so more budget means more retrieved context and a lower CR. It doubles the step away from the
   base until the CR crosses the target, then bisects between the last two points;
4. writes the chosen budgets and a record of the search to
   ``conf/method/calibrated/cr_matched/<backbone>/<method>.yaml``, which ``calibration=cr_matched``
   (``experiment=table6``) applies: ``method.manager.k2/k31/k32`` and ``method.calibration`` are then
   in every run's resolved ``config.yaml``.

Every evaluation is an ordinary, resumable run under ``calib.results_dir`` with its own run id
(``calib-full``, ``calib-reference``, ``calib-k2_<a>-k31_<b>-k32_<c>``), so an interrupted
calibration re-run skips what is finished and the LLM cache replays every call already paid for.
Other overrides (``backbone.model=...``, ``cache.dir=...``, ``experiment=...``) are passed to every
run; ``method.*`` overrides only to the ablation's runs. When no point is within the tolerance
nothing is written to ``conf/`` (only the record ``calibration.json`` in the results) and the
command exits :data:`OUT_OF_TOLERANCE_EXIT`, which stops ``make reproduce-table6``;
``calib.accept_out_of_tolerance=true`` writes the closest point with ``within_tolerance: false``.
By default ``make calibrate-table6`` calibrates w/o GAE, w/o SMG and w/o QG; w/o HCC keeps
ReConMem's budgets (its whole-file code context costs more than any budget cut saves: the paper's
own w/o HCC CR is 28-30 % lower). :func:`calibration_report` says which ablations are CR-matched.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from omegaconf import DictConfig, OmegaConf

from reconmem.memory.budgets import RECALL_BUDGET_NAMES

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = ROOT / "conf"
BUDGET_KEYS = RECALL_BUDGET_NAMES  # the searchable budgets: the recall stage (k2, k31, k32)
log = logging.getLogger(__name__)
OUT_OF_TOLERANCE_EXIT = 3
ABLATIONS = ("reconmem_wo_gae", "reconmem_wo_smg", "reconmem_wo_qg", "reconmem_wo_hcc")


class CalibrationError(RuntimeError):
    """A calibration that cannot proceed (bad option, failed run, no finished sample)."""


# ---------------------------------------------------------------------------- the search (pure)

def budget_chain_point(base: dict[str, int], keys: Sequence[str], level: int, *, min_value: int,
                       max_value: int) -> dict[str, int] | None:
    """The budgets ``level`` steps from ``base`` along the chain (None past either end).

    Each step moves one searched budget by one - up for ``level > 0``, down for ``level < 0`` - namely
    the one moved least so far (ties: the order of ``keys``) among those still inside
    [min_value, max_value]; so the keys take turns."""
    point = dict(base)
    step = 1 if level > 0 else -1
    for _ in range(abs(level)):
        movable = [k for k in keys if min_value <= point[k] + step <= max_value]
        if not movable:
            return None
        key = min(movable, key=lambda k: (abs(point[k] - base[k]), list(keys).index(k)))
        point[key] += step
    return point


def chain_length(base: dict[str, int], keys: Sequence[str], direction: int, *, min_value: int, max_value: int) -> int:
    """How many steps the chain has from ``base`` in ``direction`` (+1 up, -1 down)."""
    return sum((max_value - base[k]) if direction > 0 else (base[k] - min_value) for k in keys)


@dataclass
class Evaluation:
    level: int
    budgets: dict[str, int]
    cr: float
    run_dir: str = ""

    def ratio(self, target: float) -> float:
        return self.cr / target


@dataclass
class SearchResult:
    target: float
    tolerance: float
    evaluations: list[Evaluation] = field(default_factory=list)

    @property
    def base(self) -> Evaluation:
        return next(e for e in self.evaluations if e.level == 0)

    @property
    def best(self) -> Evaluation:
        return min(self.evaluations, key=lambda e: (abs(e.ratio(self.target) - 1.0), abs(e.level)))

    @property
    def within_tolerance(self) -> bool:
        return abs(self.best.ratio(self.target) - 1.0) <= self.tolerance


def search_budgets(evaluate: Callable[[int, dict[str, int]], Evaluation], *, base: dict[str, int],
                   keys: Sequence[str], target: float, tolerance: float, min_value: int, max_value: int,
                   max_evaluations: int) -> SearchResult:
    """Find the chain level whose CR is closest to ``target`` (stopping at the first one within tolerance).

    ``evaluate(level, budgets)`` runs the ablation and returns its :class:`Evaluation`. Assumes CR
    falls as the level rises (more budget, more context); a non-monotone response only costs extra
    evaluations - the closest evaluated point is returned either way."""
    result = SearchResult(target=target, tolerance=tolerance)
    seen: dict[int, Evaluation] = {}

    def at(level: int) -> Evaluation | None:
        if level in seen:
            return seen[level]
        if len(seen) >= max_evaluations:
            return None
        budgets = budget_chain_point(base, keys, level, min_value=min_value, max_value=max_value)
        if budgets is None:
            return None
        ev = evaluate(level, budgets)
        seen[level] = ev
        result.evaluations.append(ev)
        return ev

    def ok(ev: Evaluation) -> bool:
        return abs(ev.ratio(target) - 1.0) <= tolerance

    first = at(0)
    assert first is not None
    if ok(first):
        return result
    direction = 1 if first.cr > target else -1  # CR too high -> more budget; too low -> less
    high_side = first.cr > target

    def crossed(ev: Evaluation) -> bool:
        return (ev.cr > target) != high_side

    end = chain_length(base, keys, direction, min_value=min_value, max_value=max_value)
    inner, step = 0, 1  # inner: furthest evaluated step still on the base's side of the target
    while True:  # 1, 2, 4, ... steps away (capped at the chain's end) until the target is crossed
        step = min(step, end)
        if step <= inner:
            return result  # the chain ends on the base's side: its end is the closest reachable point
        ev = at(direction * step)
        if ev is None or ok(ev):
            return result
        if crossed(ev):
            outer = step
            break
        inner, step = step, step * 2
    while outer - inner > 1:  # bisect between the last point on the base's side and the first past the target
        mid = (inner + outer) // 2
        ev = at(direction * mid)
        if ev is None or ok(ev):
            return result
        if crossed(ev):
            outer = mid
        else:
            inner = mid
    return result


# ---------------------------------------------------------------------------- running the benchmark

def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def interleave_subsets(samples: Sequence[tuple[str, str]]) -> list[str]:
    """Sample ids in file order, alternating between subsets (single-hop, multi-hop, single-hop ...),
    so that the first N cover both subsets of Table 6 evenly."""
    by_subset: dict[str, list[str]] = {}
    for sample_id, subset in samples:
        by_subset.setdefault(subset, []).append(sample_id)
    queues = list(by_subset.values())
    out: list[str] = []
    for i in range(max((len(q) for q in queues), default=0)):
        out += [q[i] for q in queues if i < len(q)]
    return out


def calibration_sample_ids(cfg: DictConfig) -> list[str]:
    """The calibration subset: ``calib.samples`` = N (the first N samples, alternating between the
    subsets) or a list of sample ids."""
    from benchmarks.locoeval.loader import load_samples

    try:
        return _calibration_sample_ids(cfg, load_samples)
    except CalibrationError:
        raise
    except Exception as exc:  # noqa: BLE001 - a missing or malformed sample file: one line naming it
        raise CalibrationError(f"calib.samples: {exc}") from exc


def _calibration_sample_ids(cfg: DictConfig, load_samples: Callable[..., Any]) -> list[str]:
    spec = cfg.calib.samples
    source = str(cfg.benchmark.samples)
    if isinstance(spec, int) and not isinstance(spec, bool):
        if spec < 1:
            raise CalibrationError(f"calib.samples must be a positive integer or a list of sample ids, got {spec}")
        ids = interleave_subsets([(s.id, str(s.subset)) for s in load_samples(source)])[:spec]
    elif OmegaConf.is_list(spec) or isinstance(spec, (list, tuple)):
        wanted = [str(x) for x in spec]
        known = {s.id for s in load_samples(source)}
        missing = [x for x in wanted if x not in known]
        if missing:
            raise CalibrationError(f"calib.samples: sample id(s) {missing} not in benchmark.samples={source}")
        ids = wanted
    else:
        raise CalibrationError(f"calib.samples must be a positive integer or a list of sample ids, got {spec!r}")
    if not ids:
        raise CalibrationError(f"calib.samples: benchmark.samples={source} has no samples")
    return ids


def forwarded_overrides(task_overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """(overrides for every run, ``method.*`` overrides for the ablation's runs only) from the command line."""
    own = ("calib.", "+calib.", "method=", "run.results_dir=", "run.run_id=", "run.ids=", "run.limit=",
           "calibration=", "hydra.", "hydra/")
    common, method_only = [], []
    for o in task_overrides:
        bare = o.lstrip("+~")
        if bare.startswith(("run.repeat=", "run.repeat_index=")) and bare.split("=", 1)[1] not in ("1", "null"):
            raise CalibrationError(f"{bare}: calibrate_cr measures one run per point; run.repeat is not supported here")
        if bare.startswith(own):
            continue
        if bare.startswith("method."):
            if not any(bare.startswith(f"method.manager.{k}=") for k in BUDGET_KEYS):
                method_only.append(o)
            continue
        common.append(o)
    return common, method_only


@dataclass
class Runner:
    """Runs one configuration on the calibration subset with ``python -m scripts.run`` and measures CR."""

    cfg: DictConfig
    sample_ids: list[str]
    common: list[str]
    method_only: list[str]
    results_dir: Path
    timeout: float | None = None
    python: str = sys.executable

    def run_dir(self, method: str, run_id: str) -> Path:
        return self.results_dir / str(self.cfg.benchmark.name) / str(self.cfg.backbone.name) / method / run_id

    def run(self, method: str, run_id: str, extra: Sequence[str] = ()) -> Path:
        ids = "[" + ",".join(_quote(i) for i in self.sample_ids) + "]"
        cmd = [self.python, "-m", "scripts.run", *self.common, f"method={method}", "calibration=none",
               f"run.results_dir={self.results_dir}", f"run.run_id={run_id}", f"run.ids={ids}", "run.limit=null",
               *extra]
        log.info("run: %s", " ".join(cmd[2:]))
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired as exc:
            raise CalibrationError(f"run {method}/{run_id} exceeded calib.timeout={self.timeout}s") from exc
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
            raise CalibrationError(f"run {method}/{run_id} failed (exit {proc.returncode}):\n{tail}")
        log.info("run %s/%s finished in %.1fs", method, run_id, time.perf_counter() - t0)
        from benchmarks.records import RunDir

        path = self.run_dir(method, run_id)
        if not RunDir(path).samples_path.is_dir():
            raise CalibrationError(f"run {method}/{run_id}: no records in {path}")
        return path

    def cr(self, run: Path, full: Path) -> float:
        from benchmarks.locoeval.metrics import compression_ratio_between

        value = compression_ratio_between(run, full, sample_ids=self.sample_ids)
        if value is None:
            raise CalibrationError(f"no sample finished in both {run} and {full}: CR undefined "
                                   "(see the samples' error.txt)")
        return float(value)


def _budgets_text(b: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in b.items())


def base_budgets(cfg: DictConfig) -> dict[str, int]:
    """The ablation's effective budgets as configured (built exactly as a run builds the method)."""
    from hydra.utils import instantiate

    manager = instantiate(cfg.method.manager)
    config = getattr(manager, "config", None)
    if not isinstance(config, dict) or not all(k in config for k in BUDGET_KEYS):
        raise CalibrationError(f"method={cfg.method.name}: {cfg.method.manager._target_} has no k2/k31/k32 budgets "
                               "to calibrate (a ReConMem configuration is needed)")
    return {k: int(config[k]) for k in BUDGET_KEYS}


def searched_keys(cfg: DictConfig) -> list[str]:
    keys = cfg.calib.budgets
    if keys is None:
        # w/o SMG retrieves no code directly (§4.3): k31 and k32 have no effect there.
        return ["k2"] if cfg.method.manager.get("smg", True) is False else list(BUDGET_KEYS)
    keys = [str(k) for k in keys]
    bad = [k for k in keys if k not in BUDGET_KEYS]
    if bad or not keys:
        raise CalibrationError(f"calib.budgets: {bad or keys} not searchable; choose from {list(BUDGET_KEYS)}")
    return keys


def output_path(cfg: DictConfig) -> Path:
    if cfg.calib.output:
        return Path(str(cfg.calib.output))
    return CONFIG_DIR / "method" / "calibrated" / "cr_matched" / str(cfg.backbone.name) / f"{cfg.method.name}.yaml"


def calibrate(cfg: DictConfig, task_overrides: Sequence[str]) -> dict[str, Any]:
    """The whole calibration of ``cfg.method`` on ``cfg.backbone``; returns the written record."""
    from benchmarks.records import atomic_write_json, atomic_write_text

    method = str(cfg.method.name)
    reference = str(cfg.calib.reference)
    if method in (reference, "full"):
        raise CalibrationError(f"method={method}: calibrate an ablation (e.g. method=reconmem_wo_hcc), not the reference")
    tolerance = float(cfg.calib.tolerance)
    if not 0 < tolerance < 1:
        raise CalibrationError(f"calib.tolerance must be in (0, 1), got {tolerance}")
    min_value, max_value = int(cfg.calib.min_value), int(cfg.calib.max_value)
    if not 0 <= min_value <= max_value:
        raise CalibrationError(f"calib.min_value={min_value} / calib.max_value={max_value}: need 0 <= min <= max")
    keys = searched_keys(cfg)
    base = base_budgets(cfg)
    out_of_range = {k: v for k, v in base.items() if k in keys and not min_value <= v <= max_value}
    if out_of_range:
        raise CalibrationError(f"configured budgets {out_of_range} outside [calib.min_value, calib.max_value]")
    ids = calibration_sample_ids(cfg)
    common, method_only = forwarded_overrides(task_overrides)
    runner = Runner(cfg, ids, common, method_only, Path(str(cfg.calib.results_dir)).expanduser().resolve(),
                    timeout=None if cfg.calib.timeout is None else float(cfg.calib.timeout))
    log.info("calibrating %s on %s: %d sample(s) %s, searching %s from %s, tolerance ±%.0f%%", method,
             cfg.backbone.name, len(ids), ids, keys, _budgets_text(base), 100 * tolerance)

    full = runner.run("full", "calib-full")
    ref_run = runner.run(reference, "calib-reference")
    target = runner.cr(ref_run, full)
    log.info("target: CR(%s) = %.4f", reference, target)

    def evaluate(level: int, budgets: dict[str, int]) -> Evaluation:
        run_id = "calib-" + "-".join(f"{k}_{budgets[k]}" for k in BUDGET_KEYS)
        extra = [*method_only, *(f"method.manager.{k}={budgets[k]}" for k in BUDGET_KEYS)]
        path = runner.run(method, run_id, extra)
        ev = Evaluation(level, dict(budgets), runner.cr(path, full), str(path))
        log.info("%s %s%s: CR = %.4f (%.1f%% of target)", method, _budgets_text(budgets),
                 " (configured)" if level == 0 else "", ev.cr, 100 * ev.ratio(target))
        return ev

    result = search_budgets(evaluate, base=base, keys=keys, target=target, tolerance=tolerance,
                            min_value=min_value, max_value=max_value, max_evaluations=int(cfg.calib.max_evaluations))
    best, before = result.best, result.base
    record = {
        "method": method, "backbone": str(cfg.backbone.name), "model": str(cfg.backbone.model),
        "reference_method": reference, "target_cr": round(target, 6), "cr_before": round(before.cr, 6),
        "cr": round(best.cr, 6), "tolerance": tolerance, "within_tolerance": result.within_tolerance,
        "searched": keys, "base_budgets": before.budgets, "budgets": best.budgets, "samples": ids,
        "evaluations": [{"budgets": e.budgets, "cr": round(e.cr, 6), "run_dir": e.run_dir} for e in result.evaluations],
        "full_run": str(full), "reference_run": str(ref_run),
        "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    out = output_path(cfg)
    accepted = bool(cfg.calib.get("accept_out_of_tolerance", False))
    record["accepted_out_of_tolerance"] = bool(accepted and not result.within_tolerance)
    record["output"] = str(out) if result.within_tolerance or accepted else None
    atomic_write_json(runner.results_dir / str(cfg.benchmark.name) / str(cfg.backbone.name) / method /
                      "calibration.json", record)
    verdict = "within" if result.within_tolerance else "NOT within"
    log.info("CR before: %.4f (%s) -> after: %.4f (%s); target %.4f; gap %+.1f%%, %s ±%g%%", before.cr,
             _budgets_text(before.budgets), best.cr, _budgets_text(best.budgets), target,
             100 * (best.cr / target - 1), verdict, 100 * tolerance)
    if record["output"] is None:
        log.error("no evaluated budgets reach the tolerance: nothing written to %s (pass "
                  "calib.accept_out_of_tolerance=true to write the closest with within_tolerance: false)", out)
        return record
    body = {"manager": dict(best.budgets), "calibration": record}
    header = ("# Written by `python -m scripts.calibrate_cr` - do not edit by hand; re-run it instead.\n"
              f"# {'CR-matched' if result.within_tolerance else 'Calibrated, OUT of tolerance (accepted):'} budgets of "
              f"{method} on {cfg.backbone.name} (paper §4.3); applied by calibration=cr_matched.\n")
    atomic_write_text(out, header + OmegaConf.to_yaml(OmegaConf.create(body)))
    if not result.within_tolerance:
        log.warning("no evaluated budgets reach the tolerance; wrote the closest (within_tolerance: false, accepted "
                    "by calib.accept_out_of_tolerance=true)")
    log.info("wrote %s", out)
    return record


def calibration_report(backbone: str = "qwen3_235b", methods: Sequence[str] = ABLATIONS,
                       root: Path | None = None) -> list[str]:
    """One line per ablation: CR-matched (budgets, gap, tolerance), written out of tolerance, or keeping
    ReConMem's budgets (no file under ``conf/method/calibrated/cr_matched/<backbone>/``)."""
    import yaml

    base = root or CONFIG_DIR / "method" / "calibrated" / "cr_matched" / backbone
    lines = []
    for m in methods:
        path = base / f"{m}.yaml"
        if not path.is_file():
            lines.append(f"{m}: ReConMem's budgets (not calibrated; no {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path})")
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        cal = data.get("calibration") or {}
        budgets = _budgets_text({k: v for k, v in (data.get("manager") or {}).items() if k in BUDGET_KEYS})
        target, cr, tol = cal.get("target_cr"), cal.get("cr"), cal.get("tolerance")
        gap = f"{100 * (float(cr) / float(target) - 1):+.1f}%" if cr and target else "unknown"
        state = "CR-matched" if cal.get("within_tolerance") else "written OUT of tolerance (accepted)"
        lines.append(f"{m}: {state}: {budgets}; CR {cr} vs target {target} (gap {gap}, tolerance "
                     f"±{100 * float(tol or 0):g}%) on {len(cal.get('samples') or [])} calibration sample(s)")
    return lines
