"""The one evaluation loop: every benchmark (:class:`benchmarks.task.Benchmark`) runs through :func:`run`.

Order of a run (``python -m scripts.run``)::

    benchmark = benchmark._target_(cfg)                  # conf/benchmark/<name>.yaml
    refuse local user/judge models in reproductions      # run.reproduction, allow_local_eval_models
    samples   = benchmark.load(cfg) -> select(run.ids, run.limit) -> shard(run.shard)
    run.dry_run: print the estimate, exit 0 (no model call, nothing written)
    todo      = samples whose result.json status is not final (error / interrupted / never run)
    preflight (every backbone the run uses), data checks   -> ConfigError / DataError: exit 2
    manifest  -> samples (workers) -> summary

The loop builds the run's LLM clients, one per backbone role (:class:`benchmarks.clients.RoleClients`,
each on first use, with the benchmark's per-role call defaults) and hands them to the benchmark as
``env.clients``. Per sample the loop builds a fresh method, opens one ledger scope ``sample=<id>, attempt=<uuid>``
and calls ``benchmark.solve`` (the conversation) then ``benchmark.grade`` (its judgment); the
sample's ``ledger.jsonl`` is every event carrying that attempt id, with all fields (the ONE slicing
rule for every benchmark), ``memory.json`` the method's state. ``result.json`` is written last and
atomically, with the loop's fields added to the benchmark's: ``status``, ``n_tasks``/``tasks`` (an
errored sample lists its tasks as failed), ``json_failures``, ``cost_usd``, ``usage``, ``attempt``,
``shard``, ``wall_seconds`` and ``seconds`` (``{solve, grade}``).

A ``CostLimitReached`` inside a sample marks it ``interrupted`` (its partial records are removed;
the ledger is kept), no further sample starts, and the summary says ``stopped: cost_limit``; a
resume with a higher ``run.cost_limit_usd`` redoes interrupted samples (cached calls are free).

An exchange backbone's ``ExchangePending`` (a request waits for its answer; task answers deferred
during ``solve`` count too) marks the sample ``pending`` the same way (partial records removed, the
ledger and ``pending_requests`` kept) and the loop goes on with the other samples; re-running the
same command continues each pending sample from the cache (docs/exchange.md).

Sharding: ``run.shard=I/N`` (0 <= I < N) keeps the samples whose ``sha256(sample id) mod N == I``
— deterministic, independent of order and of the other shards. Shards write into the same run
directory: per-sample records are atomic and disjoint; each shard writes
``shards/manifest-I-of-N.json`` / ``shards/summary-I-of-N.json`` and rewrites the merged
``manifest.json`` / ``summary.json`` (atomic replace; the summary is always computed from every
record on disk, so the last shard to finish leaves the complete view).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import threading
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks import records
from benchmarks.records import Family, RunDir, Status
from benchmarks.clients import RoleClients
from benchmarks.errors import ConfigError, DataError
from benchmarks.harness import embedder_settings, retriever_spec, run_path, with_retriever_identity
from benchmarks.runs import provenance, run_pool
from benchmarks.settings import RunSettings, run_settings
from benchmarks.roles import ROLE_OPTIONS
from benchmarks.task import Benchmark, RunEnv

log = logging.getLogger(__name__)

from reconmem.platform import pyast
from reconmem.platform.llm import CostLimitReached, ExchangePending
from reconmem.platform.llm.exchange import take_deferred


# ----------------------------------------------------------------------------- building blocks
def build_benchmark(cfg: Any) -> Benchmark:
    """The benchmark object named by ``benchmark._target_``."""
    import hydra.utils

    bench = cfg.benchmark
    target = bench.get("_target_")
    if bench.get("runner"):  # a config written for the runner functions
        raise ConfigError(f"benchmark.runner={bench.get('runner')}: benchmark.runner is replaced by benchmark._target_ "
                          f"(a benchmarks.task.Benchmark subclass, see docs/ARCHITECTURE.md)")
    if not target:
        raise ConfigError(f"benchmark={bench.get('name')}: no benchmark._target_ configured")
    try:
        cls = hydra.utils.get_class(str(target))
    except Exception as exc:  # noqa: BLE001 - one line naming the option
        raise ConfigError(f"benchmark._target_={target}: cannot import ({exc})") from exc
    if not (isinstance(cls, type) and issubclass(cls, Benchmark)):
        raise ConfigError(f"benchmark._target_={target}: not a benchmarks.task.Benchmark subclass")
    try:
        Family.parse(cls.family, f"benchmark._target_={target}: family")
        for status in cls.statuses:
            Status.parse(status, f"benchmark._target_={target}: statuses")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return cls(cfg)


def parse_shard(value: Any) -> tuple[int, int] | None:
    """``"I/N"`` -> ``(I, N)`` with 0 <= I < N; ``None`` / empty -> None."""
    if value in (None, "", "null"):
        return None
    text = str(value)
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"run.shard={text}: expected I/N, e.g. run.shard=0/4") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"run.shard={text}: need 0 <= I < N")
    return i, n


def in_shard(sample_id: str, shard: tuple[int, int] | None) -> bool:
    """Whether ``sample_id`` belongs to shard ``(I, N)``: ``sha256(id) mod N == I``."""
    if shard is None:
        return True
    return int(hashlib.sha256(sample_id.encode("utf-8")).hexdigest(), 16) % shard[1] == shard[0]


def shard_label(shard: tuple[int, int] | None) -> str | None:
    return None if shard is None else f"{shard[0]}/{shard[1]}"


def _ids(value: Any) -> list[str] | None:
    if value is None or value == "":
        return None
    if isinstance(value, (str, int)):
        return [str(value)]
    return [str(v) for v in value]


def is_local_backbone(node: Any) -> bool:
    """A backbone config that runs an in-process local model."""
    return str(node.get("model", "")).startswith("local/") or bool(node.get("local"))


def check_eval_models(cfg: Any, bench: Benchmark, settings: RunSettings | None = None) -> None:
    """Reproduction experiments refuse a local user / judge model unless allow_local_eval_models=true."""
    settings = settings if settings is not None else run_settings(cfg)
    if not settings.reproduction or cfg.get("allow_local_eval_models"):
        return
    for option in (ROLE_OPTIONS["user"], ROLE_OPTIONS["judge"]):
        if option in bench.uses(cfg) and is_local_backbone(cfg[option]):
            raise ConfigError(f"{option}={cfg[option].name} is a local model, but this reproduction needs the "
                              f"paper's evaluation model; choose an API backbone@{option} or pass "
                              f"allow_local_eval_models=true")


def method_inputs(cfg: Any) -> tuple[frozenset[str], bool]:
    """The privileged inputs ``method.privileged_inputs`` declares, and ``method.skip_prep_replies``."""
    declared = cfg.method.get("privileged_inputs") or []
    return frozenset(str(x) for x in declared), bool(cfg.method.get("skip_prep_replies") or False)


def check_method_inputs(cfg: Any, bench: Benchmark, method: Any) -> None:
    """The privileged channel and skipped preparation replies are declared where they must be
    (config, the method's class, the benchmark; reconmem/platform/brackets.py): ConfigError otherwise."""
    from reconmem.platform.brackets import PRIVILEGED_INPUTS, accepted_inputs, reads_history

    declared, skip = method_inputs(cfg)
    name, bench_name = cfg.method.get("name"), cfg.benchmark.get("name")
    unknown = declared - PRIVILEGED_INPUTS
    if unknown:
        raise ConfigError(f"method.privileged_inputs: unknown {sorted(unknown)} (known: {sorted(PRIVILEGED_INPUTS)})")
    accepted = accepted_inputs(method)
    if declared != accepted:
        raise ConfigError(f"method={name}: method.privileged_inputs={sorted(declared)} but {type(method).__name__} "
                          f"accepts {sorted(accepted)}; only bracket methods may take privileged inputs, and both must "
                          "declare the same ones")
    missing = declared - bench.privileged_inputs
    if missing:
        raise ConfigError(f"method={name}: benchmark={bench_name} cannot supply the privileged input(s) {sorted(missing)}")
    if skip and reads_history(method):
        raise ConfigError(f"method={name}: method.skip_prep_replies=true, but {type(method).__name__} reads earlier "
                          "turns; only bracket methods may skip the preparation replies")
    if skip and not bench.can_skip_prep_replies:
        raise ConfigError(f"method={name}: benchmark={bench_name} cannot skip the preparation replies; "
                          "set method.skip_prep_replies=false")


def _estimate(cfg: Any, bench: Benchmark, samples: Sequence[Any]) -> dict[str, Any]:
    from benchmarks.estimate import estimate_run, format_estimate

    est = estimate_run(cfg, bench, samples)
    print(format_estimate(est))
    return est


def _preflight(cfg: Any, bench: Benchmark, todo: Sequence[Any]) -> None:
    """Every backbone the samples still to run will call (API key, local weights, server) can run:
    ConfigError otherwise. A role the benchmark reports unused for them (e.g. no mock user for
    scripted LoCoEval turns) is not checked."""
    from benchmarks.preflight import check_backbones, used_roles

    unused = {ROLE_OPTIONS[role] for role, model in bench.models(cfg, todo).items() if model is None}
    check_backbones(cfg, roles=tuple(opt for opt in used_roles(cfg) if opt not in unused))


def _load(bench: Benchmark, cfg: Any) -> list[Any]:
    """``bench.load`` with data problems turned into one-line DataErrors naming the file."""
    try:
        return list(bench.load(cfg))
    except (ConfigError, DataError):
        raise
    except FileNotFoundError as exc:
        raise DataError(f"{exc.filename or exc}: file not found") from exc
    except (ValueError, KeyError, OSError) as exc:
        raise DataError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc


# ----------------------------------------------------------------------------- the loop
def repeat_settings(cfg: Any) -> tuple[int, int | None]:
    """``(K, i)`` from ``run.repeat`` (K >= 1 repeats) and ``run.repeat_index`` (1..K, or None: all)."""
    settings = run_settings(cfg)
    raw = settings.repeat
    try:
        k = int(1 if raw is None else raw)
    except (TypeError, ValueError):
        raise ConfigError(f"run.repeat={raw}: expected a positive integer") from None
    if k < 1:
        raise ConfigError(f"run.repeat={raw}: expected a positive integer")
    index = settings.repeat_index
    if index is None:
        return k, None
    try:
        i = int(index)
    except (TypeError, ValueError):
        raise ConfigError(f"run.repeat_index={index}: expected 1..run.repeat") from None
    if not 1 <= i <= k:
        raise ConfigError(f"run.repeat_index={index}: expected 1..{k} (run.repeat={k})")
    return k, i


def repeat_config(cfg: Any, index: int) -> Any:
    """The config of repeat ``index``: run id ``<run_id>-r<index>`` (its own run directory),
    ``run.repeat_index`` set (the LLM clients add it to their cache keys) and ``run.repeat_of`` the base id."""
    from omegaconf import open_dict

    sub = cfg.copy()
    with open_dict(sub):
        sub.run.repeat_of = str(cfg.run.run_id)
        sub.run.run_id = f"{cfg.run.run_id}-r{index}"
        sub.run.repeat_index = int(index)
    return sub


def repeat_record(cfg: Any) -> dict[str, Any] | None:
    """The manifest's ``repeat`` ({index, of, run_id}), or None for an unrepeated run."""
    k, index = repeat_settings(cfg)
    if k == 1 or index is None:
        return None
    return {"index": index, "of": k, "run_id": str(run_settings(cfg).repeat_of or cfg.run.run_id)}


def run(cfg: Any) -> dict[str, Any]:
    """Run ``cfg.benchmark`` for ``cfg.method`` x ``cfg.backbone``; resume-safe; returns the summary.

    ``run.repeat=K`` (K > 1) runs the whole configuration K times, repeat i into run directory
    ``<run_id>-r<i>`` with i in the LLM cache keys (``run.repeat_index=i`` runs only repeat i);
    the summary then lists the repeats' summaries."""
    cfg = with_retriever_identity(cfg)  # a bm25 / hybrid run is method <name>_<retriever>
    k, index = repeat_settings(cfg)
    if k == 1:
        return _run_config(cfg)
    summaries = [_run_config(repeat_config(cfg, i)) for i in ([index] if index is not None else range(1, k + 1))]
    if len(summaries) == 1:
        return summaries[0]
    return {"n_repeats": k, "run_ids": [s.get("run_id") for s in summaries], "repeats": summaries}


def _run_config(cfg: Any) -> dict[str, Any]:
    """One run directory of ``cfg`` (one repeat)."""
    settings = run_settings(cfg)
    bench = build_benchmark(cfg)
    check_eval_models(cfg, bench, settings)
    samples = bench.select(_load(bench, cfg), ids=_ids(settings.ids), limit=settings.limit)
    selected_ids = [bench.sample_id(s) for s in samples]
    shard = parse_shard(settings.shard)
    mine = [s for s in samples if in_shard(bench.sample_id(s), shard)]
    run_dir = _run_dir(cfg)
    retry = settings.retry_errors

    def needs_run(s: Any) -> bool:
        status = run_dir.status(bench.sample_id(s))
        if status is not None and status.final:
            return False
        return retry or status is not Status.ERROR

    todo = [s for s in mine if needs_run(s)]
    if settings.dry_run:
        return {"dry_run": True, "benchmark": str(cfg.benchmark.name), "n_selected": len(samples),
                "n_to_run": len(todo), "estimate": _estimate(cfg, bench, todo)}
    from benchmarks import harness

    method = harness.build_method(cfg)  # a config problem fails the run once, not every sample
    if todo:
        _preflight(cfg, bench, todo)
        bench.check_data(cfg, todo)
        check_method_inputs(cfg, bench, method)
    write_manifest(run_dir, cfg, bench, samples, shard, method=method)
    skipped = len(mine) - len(todo)
    if skipped:
        print(f"{cfg.benchmark.name}: {skipped} finished sample(s) skipped, {len(todo)} to run in {run_dir.path}")

    from reconmem.platform.llm import UsageLedger

    limit = settings.cost_limit_usd
    prior = prior_spend(run_dir, [bench.sample_id(s) for s in mine])
    seed = [{"purpose": "prior_spend", "cost_usd": prior, "input_tokens": 0, "output_tokens": 0}] if prior else []
    ledger = UsageLedger(seed, cost_limit_usd=None if limit is None else float(limit))
    env = RunEnv(cfg=cfg, ledger=ledger, run_path=run_dir.path, progress=bool(cfg.benchmark.get("progress", True)),
                 clients=RoleClients(cfg, ledger, bench.client_defaults(cfg)))
    stop = threading.Event()
    if todo:
        env.shared = bench.setup(env, todo)
        workers = max(1, int(settings.workers or 1))
        cap = bench.max_workers(cfg)
        if cap:
            workers = min(workers, cap)
        run_pool(todo, lambda s: run_one(bench, s, env, run_dir, stop=stop, shard=shard),
                 workers=workers, desc=f"{cfg.benchmark.name} {cfg.method.name}/{cfg.backbone.name}",
                 progress=env.progress)
    summary = write_summary(run_dir, cfg, bench, selected_ids, [bench.sample_id(s) for s in mine], shard,
                            stopped="cost_limit" if stop.is_set() else None)
    if summary.get("n_pending"):
        print(f"{cfg.benchmark.name}: {summary['n_pending']} sample(s) pending: their requests wait in "
              f"{run_dir.path / 'exchange'} (python -m scripts.exchange status {run_dir.path}); answer, import and "
              f"re-run the same command")
    return summary


def prior_spend(run_dir: RunDir, sample_ids: Sequence[str]) -> float:
    """Dollars already recorded in these samples' ledgers (finished or interrupted attempts): they count
    towards ``run.cost_limit_usd``, so a resume continues only under a higher limit."""
    return round(sum(_recorded_spend(run_dir.sample(sid)) for sid in sample_ids), 10)


def _recorded_spend(sample: records.SampleDir) -> float:
    """The sample folder's ledger cost plus what its earlier (redone) attempts cost."""
    total = sum(float(e.get("cost_usd") or 0.0) for e in sample.ledger(strict=False))
    r = sample.result()
    return total + float((r or {}).get("earlier_attempts_cost_usd") or 0.0)


def _run_dir(cfg: Any) -> RunDir:
    return RunDir(run_path(cfg))


def run_one(bench: Benchmark, sample: Any, env: RunEnv, run_dir: RunDir, *,
            stop: threading.Event | None = None, shard: tuple[int, int] | None = None,
            method: Any = None) -> dict[str, Any] | None:
    """One sample through ``bench.solve`` then ``bench.grade`` with the loop's rules (ledger scope,
    attempt id, timing, ``memory.json``, error records); returns the written result.

    Returns None (nothing written) when the run was stopped before this sample started.
    """
    from benchmarks import harness

    if stop is not None and stop.is_set():
        return None
    sid = bench.sample_id(sample)
    earlier = _recorded_spend(run_dir.sample(sid))  # spent by errored / interrupted attempts being redone
    out = run_dir.reset_sample(sid)
    senv = env.for_sample(sid, out, uuid.uuid4().hex[:12])
    method = method if method is not None else harness.build_method(cfg=env.cfg)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    with env.ledger.tags(sample=sid, attempt=senv.attempt):
        try:
            solved = bench.solve(sample, method, senv)
            deferred = take_deferred(senv.attempt)
            if deferred:
                raise ExchangePending(f"{len(deferred)} task answer(s) wait for the exchange", request_ids=deferred)
            seconds["solve"] = round(time.perf_counter() - t0, 3)
            t_grade = time.perf_counter()
            result = dict(bench.grade(sample, solved, senv))
            seconds["grade"] = round(time.perf_counter() - t_grade, 3)
            senv.recorder.memory(method)
            status = str(result.get("status") or Status.OK.value)
            if status not in bench.statuses | {Status.OK.value}:
                raise RuntimeError(f"{type(bench).__name__}.grade returned undeclared status {status!r}")
            result["status"] = status
        except CostLimitReached as exc:
            if stop is not None:
                stop.set()
            _clear(out)  # nothing half-written: only the spent calls' ledger stays
            result = {**bench.error_result(sample), "status": Status.INTERRUPTED.value,
                      "error": f"{type(exc).__name__}: {exc}"}
        except ExchangePending as exc:
            _clear(out)
            waiting = list(dict.fromkeys([*exc.request_ids, *take_deferred(senv.attempt)]))
            result = {**bench.error_result(sample), "status": Status.PENDING.value,
                      "error": f"{type(exc).__name__}: {exc}", "pending_requests": waiting}
        except Exception as exc:  # noqa: BLE001 - recorded; retried on resume
            records.atomic_write_text(out / records.ERROR, pyast.format_exc())
            senv.recorder.memory(method)
            log.warning("%s: sample %s failed: %s: %s", bench.family or type(bench).__name__, sid, type(exc).__name__, exc)
            result = {**bench.error_result(sample), "status": Status.ERROR.value, "errored": True,
                      "error": f"{type(exc).__name__}: {exc}"}
    take_deferred(senv.attempt)  # the attempt's exchange bookkeeping is dropped
    events = senv.sample_events()
    records.write_jsonl(out / records.LEDGER, events)
    usage, cost = records.usage_of(events)
    result.setdefault("error", None)
    result.setdefault("n_tasks", len(result.get("tasks") or []))
    result.setdefault("tasks", [])
    result.update({"wall_seconds": round(time.perf_counter() - t0, 3), "seconds": seconds,
                   "json_failures": sum(1 for e in events if e.get("json_ok") is False), "cost_usd": cost,
                   "usage": usage, "attempt": senv.attempt, "shard": shard_label(shard)})
    if earlier:
        result["earlier_attempts_cost_usd"] = round(earlier, 10)
    run_dir.write_result(sid, result)
    return {"sample_id": sid, **result}


def _clear(out: Any) -> None:
    """Remove a sample folder's partial records (an interrupted or pending attempt)."""
    for f in out.iterdir():
        if f.is_file():
            f.unlink()
        elif f.is_dir():
            shutil.rmtree(f, ignore_errors=True)


# ----------------------------------------------------------------------------- manifest and summary
def write_manifest(run_dir: RunDir, cfg: Any, bench: Benchmark, samples: Sequence[Any],
                   shard: tuple[int, int] | None, *, method: Any = None) -> dict[str, Any]:
    """config.yaml and manifest.json (merged view), plus the shard's own files when sharded."""
    from omegaconf import OmegaConf

    models = bench.models(cfg, samples)
    labels = {role: cfg[option].get("label") if models.get(role) else None for role, option in ROLE_OPTIONS.items()}
    target = cfg.benchmark.get("_target_")
    manifest = {
        "benchmark": str(cfg.benchmark.name), "family": bench.family, "benchmark_target": target,
        "method": str(cfg.method.name), "method_label": cfg.method.get("label"),
        "method_params": method_params(cfg, method),
        "backbone": str(cfg.backbone.name), "run_id": str(cfg.run.run_id),
        "models": models, "model_labels": labels, "scripted": records.is_scripted(models),
        "hide_task_tests": cfg.benchmark.get("hide_task_tests"),
        "privileged_inputs": sorted(method_inputs(cfg)[0]), "skip_prep_replies": method_inputs(cfg)[1],
        "shard": None, "n_shards": None, "n_selected": len(samples),
        "selected": [records.selected_entry(bench.sample_id(s), bench.error_result(s)) for s in samples],
        "repeat": repeat_record(cfg),
        **provenance(bench.data_files(cfg)),
    }
    manifest["backbone_settings"] = _backbone_settings(cfg, models)
    answered_by = _answered_by(cfg, models)
    if answered_by:
        manifest["answered_by"] = answered_by
    local = _local_runtimes(cfg, models)
    if local:
        manifest["local_models"] = local
    manifest["embedder"] = embedder_settings(cfg)
    manifest["retriever"] = retriever_spec(cfg).record()
    if bench.uses_executor and cfg.get("executor") is not None:
        manifest["executor"] = _executor_record(cfg, str(manifest.get("python") or ""))
    config_text = OmegaConf.to_yaml(cfg, resolve=True)
    shard_text = None
    if shard is not None:
        merged_cfg = cfg.copy()
        with _open_struct(merged_cfg):
            merged_cfg.run.shard = None
        shard_text, config_text = config_text, OmegaConf.to_yaml(merged_cfg, resolve=True)
    run_dir.write_manifest(manifest, config_text, shard=shard, shard_config_text=shard_text)
    return manifest


def method_params(cfg: Any, method: Any = None) -> dict[str, Any]:
    """The method's parameters as this run uses them: ``method.manager`` (resolved, without
    ``_target_``) updated with what the method resolved itself (``ContextManager.params``)."""
    from omegaconf import OmegaConf

    node = cfg.method.get("manager")
    params = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else dict(node or {})
    params.pop("_target_", None)
    if method is not None:
        params.update(method.params())
    return params


def _backbone_settings(cfg: Any, models: Mapping[str, Any]) -> dict[str, Any]:
    """Role -> what of its backbone changes results beyond the model string (window, output cap,
    token-count reserve, reasoning effort and cap, provider routing): ``BackboneSpec.settings_record``."""
    from reconmem.platform.llm import BackboneSpec

    out = {}
    for role, key in ROLE_OPTIONS.items():
        node = cfg.get(key)
        if node is not None and models.get(role):
            out[role] = BackboneSpec.from_config(node).settings_record()
    return out


def _answered_by(cfg: Any, models: Mapping[str, Any]) -> dict[str, str]:
    """Role -> who answers its exchange backbone (``backbone.exchange.answered_by``: a model id or an
    expert label; unset: the backbone's model id, or ``expert`` for ``backbone=exchange``), for every
    role of this run served through the exchange."""
    out = {}
    for role, key in ROLE_OPTIONS.items():
        node = cfg.get(key)
        exchange = node.get("exchange") if node is not None and models.get(role) else None
        if exchange is not None:
            model = str(node.get("model") or "")
            out[role] = str(exchange.get("answered_by") or ("expert" if model.startswith("exchange/") else model))
    return out


def _local_runtimes(cfg: Any, models: Mapping[str, Any]) -> dict[str, Any]:
    """Role -> the llama.cpp settings that decide a local model's outputs (threads, n_ctx, prompt
    reuse ...), for every role of this run served by an in-process model."""
    from omegaconf import OmegaConf

    from reconmem.platform.local_model.settings import runtime_settings

    out = {}
    for role, key in ROLE_OPTIONS.items():
        node = cfg.get(key)
        local = node.get("local") if node is not None and models.get(role) else None
        if local is not None:
            out[role] = runtime_settings(OmegaConf.to_container(local, resolve=True) if OmegaConf.is_config(local) else local)
    return out


def _executor_record(cfg: Any, python: str) -> dict[str, Any]:
    """The Pass@1 executor as the manifest records it (Docker: the base image's content-addressed tag,
    id and Python; a different minor Python version than the harness's is refused, a patch one recorded)."""
    from benchmarks.sandbox import describe_executor
    from benchmarks.sandbox.base_image import PythonMismatch

    try:
        return describe_executor(cfg.executor, python=python or None)
    except PythonMismatch as exc:
        raise ConfigError(f"executor={cfg.executor.get('name')}: {exc}") from exc


class _open_struct:
    def __init__(self, cfg: Any) -> None:
        from omegaconf import open_dict

        self._ctx = open_dict(cfg)

    def __enter__(self) -> None:
        self._ctx.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._ctx.__exit__(*exc)


def write_summary(run_dir: RunDir, cfg: Any, bench: Benchmark, selected_ids: Sequence[str], shard_ids: Sequence[str],
                  shard: tuple[int, int] | None, *, stopped: str | None = None) -> dict[str, Any]:
    """summary.json over every selected sample (merged view) and the shard's own summary: the
    benchmark scores every selected id, a missing or interrupted one as failed (``n_missing``)."""

    def counts(ids: Sequence[str]) -> dict[str, Any]:
        results = run_dir.results(ids)
        status = Counter(str(r.get("status")) for r in results)
        interrupted = status.get(Status.INTERRUPTED.value, 0)
        pending = status.get(Status.PENDING.value, 0)
        return {"n_selected": len(ids), "n_finished": len(results), "n_unfinished": len(ids) - len(results),
                "status_counts": dict(sorted(status.items())),
                "n_errored": sum(1 for r in results if records.sample_class(r) == "errored"),
                "n_interrupted": interrupted, "n_pending": pending,
                "n_missing": len(ids) - len(results) + interrupted + pending,
                "json_failures": sum(int(r.get("json_failures") or 0) for r in results),
                "cost_usd": round(sum(float(r.get("cost_usd") or 0.0) for r in results), 8)}

    head = {"benchmark": str(cfg.benchmark.name), "method": str(cfg.method.name), "backbone": str(cfg.backbone.name),
            "run_id": str(cfg.run.run_id), "run_dir": str(run_dir.path), "repeat": repeat_record(cfg)}
    summary = {**head, **bench.score(run_dir.path, list(selected_ids)), **counts(selected_ids), "stopped": stopped,
               "shard": None}
    part = None
    if shard is not None:
        part = {**head, **counts(shard_ids), "stopped": stopped, "shard": shard_label(shard)}
        summary["n_shards"] = shard[1]
    run_dir.write_summary(summary, shard_part=part, shard=shard)
    return summary
