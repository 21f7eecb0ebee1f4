"""Run records as inspect_ai eval logs, one log per run, for ``inspect view``.

    from benchmarks.analysis.inspect_export import export_runs
    written = export_runs(["results/demo/local"], "logs/demo")   # then: inspect view --log-dir logs/demo

The records are read through :mod:`benchmarks.analysis.records` (the report's loader) and written
through inspect_ai's own log API (``inspect_ai.log``: ``EvalLog``, ``write_eval_log``). One log:

* eval spec: the benchmark as task, the backbone's model id as model (user / judge as model roles),
  the method and its resolved parameters as solver, run id, git revision, dataset checksums and the
  whole manifest as metadata;
* one sample per selected benchmark sample: the conversation as messages; every ledger event as a
  ``ModelEvent`` (usage and cost; the response call of a turn has as input exactly the prompt the
  method built, ``contexts.jsonl``, each context item's provenance in its metadata, and the reply as
  output; memory, user and judge calls record their tokens only, so their input is empty); scores per
  task (LoCoEval: ``C`` / ``I`` with the test outcome; CAB: the judge's verdict); errored samples
  carry the traceback as the sample error, missing samples (selected, never finished) are scored as
  failed with a ``missing`` error, excluded samples have no score and say why;
* eval results: the metrics of the report's own tables for the run's (backbone, method, repeat) —
  Table 1 (Pass@1, CR) and Table 3 (tokens and cost per conversation) for LoCoEval-format runs,
  :func:`benchmarks.analysis.cab_tables.cab_summary` (Tables 2 and 5) for CAB — computed over all
  runs given together (pass the directories you give ``scripts.report``: CR needs the Full run).

``inspect-ai`` is an optional extra (``pip install -e '.[inspect]'``); it is imported on first use.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from benchmarks import records as rec
from benchmarks.analysis import labels
from benchmarks.analysis.records import RunSet, load_runs
from benchmarks.analysis.run_records import CAB, LOCOEVAL, SCRIPTED_MARK, RunRecord, SampleRecord
from reconmem.platform.llm.purposes import RESPONSE_PURPOSES

PROMPT_NOT_RECORDED = "not recorded (the records keep this call's tokens and cost, not its prompt or reply)"
LOG_SUFFIX = ".eval"


class InspectUnavailable(RuntimeError):
    """inspect_ai is not installed."""


@dataclass
class ExportedLog:
    """One written log: where, which run, and what it holds."""

    path: Path
    run_dir: Path
    n_samples: int
    n_events: int


def _inspect() -> Any:
    try:
        import inspect_ai.log as ilog
    except ImportError as exc:
        raise InspectUnavailable("exporting to inspect_ai logs needs the 'inspect' extra: "
                                 "pip install -e '.[inspect]' (inspect-ai==0.3.285)") from exc
    return ilog


# ------------------------------------------------------------------------------------ metrics
def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


class ReportNumbers:
    """The report's tables per (benchmark, repeat), built once, and each run's rows of them.

    LoCoEval-format runs: Table 1 rows (``pass_at_1`` in %, ``n_tasks``, ``n_errored``,
    ``n_missing``, ``cr``, ``n_cr_samples``) and Table 3 rows (``e2e_tokens_per_conversation``,
    ``cost_usd_per_conversation``), built by :mod:`benchmarks.analysis.tables` as ``scripts.report``
    builds them (a method outside Table 1 gets Pass@1 from the cell function Table 1 uses,
    :func:`benchmarks.analysis.cells.pass_cell`). CAB runs: the row of
    :func:`benchmarks.analysis.cab_tables.cab_summary` (Tables 2 and 5)."""

    def __init__(self, runs: RunSet, *, n_resamples: int = 2000, seed: int = 0) -> None:
        self.runs, self.n_resamples, self.seed = runs, n_resamples, seed
        self._built: dict[tuple[str, int], dict[str, Any]] = {}

    def _locoeval(self, benchmark: str, repeat: int) -> dict[str, Any]:
        from benchmarks.analysis import cells, tables

        key = (benchmark, repeat)
        if key not in self._built:
            tasks = cells.of_repeat(self.runs.tasks_frame(benchmark), repeat)
            samples = cells.of_repeat(self.runs.samples_frame(benchmark, family=LOCOEVAL), repeat)
            built: dict[str, Any] = {"tasks": tasks, "t1": None, "t3": None}
            if not tasks.empty:
                built["t1"] = tables.table1(tasks, samples, n_resamples=self.n_resamples, seed=self.seed,
                                             names=self.runs.labels).data
            if not samples.empty and (samples["status"] == "ok").any():
                built["t3"] = tables.table3(samples, names=self.runs.labels).data
            self._built[key] = built
        return self._built[key]

    def locoeval(self, run: RunRecord) -> dict[str, dict[str, float]]:
        """metric -> subset -> value for a LoCoEval-format run."""
        from benchmarks.analysis import cells

        built = self._locoeval(run.benchmark, run.repeat)
        out: dict[str, dict[str, float]] = {}

        def put(metric: str, subset: str, value: Any) -> None:
            number = _finite(value)
            if number is not None:
                out.setdefault(metric, {})[subset] = number

        def mine(frame: Any) -> Any:
            return frame[(frame["backbone"] == run.backbone) & (frame["method"] == run.method)].iterrows()

        if built["t1"] is not None and run.method in labels.TABLE1_METHODS:
            for _, row in mine(built["t1"]):
                put("pass_at_1", row["subset"], row["pass1"])
                for key in ("n_tasks", "n_errored", "n_missing", "cr", "n_cr_samples"):
                    put(key, row["subset"], row[key])
        elif not built["tasks"].empty:
            tasks = built["tasks"]
            for subset in labels.order_subsets(set(tasks["subset"].dropna())):
                cell = cells.pass_cell(tasks, run.method, [run.backbone], subset)
                if cell["n_tasks"]:
                    put("pass_at_1", subset, cell["pass1"])
                    for key in ("n_tasks", "n_errored", "n_missing"):
                        put(key, subset, cell[key])
        if built["t3"] is not None:
            for _, row in mine(built["t3"]):
                put("e2e_tokens_per_conversation", row["subset"], row["e2e_tokens_per_conversation"])
                put("cost_usd_per_conversation", row["subset"], row["cost_usd_per_conversation"])
        return out

    def cab(self, run: RunRecord) -> dict[str, dict[str, float]]:
        """metric -> {"all": value} for a CAB run."""
        from benchmarks.analysis import cab_tables

        key = (run.benchmark, run.repeat)
        if key not in self._built:
            records = [r for r in cab_tables.cab_records(self.runs, run.benchmark)
                       if int(r.get("repeat") or 1) == run.repeat]
            self._built[key] = {"summary": cab_tables.cab_summary(records) if records else None}
        summary = self._built[key]["summary"]
        out: dict[str, dict[str, float]] = {}
        if summary is None:
            return out
        for _, row in summary[(summary["backbone"] == run.backbone) & (summary["method"] == run.method)].iterrows():
            for name, value in row.items():
                number = None if isinstance(value, bool) else _finite(value)
                if name not in ("backbone", "method") and number is not None:
                    out[str(name)] = {"all": number}
        return out

    def of(self, run: RunRecord) -> dict[str, dict[str, float]]:
        """The run's metrics: metric -> part (subset, or "all") -> value."""
        return self.cab(run) if run.family == CAB else self.locoeval(run)


# ------------------------------------------------------------------------------------ messages
def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
    return str(content)


def chat_messages(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """OpenAI-style chat messages (as ``contexts.jsonl`` records them) as inspect_ai chat messages."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    out: list[Any] = []
    for m in messages:
        role, content = str(m.get("role") or "user"), _text(m.get("content"))
        if role == "system":
            out.append(ChatMessageSystem(content=content))
        elif role == "assistant":
            calls = []
            for i, call in enumerate(m.get("tool_calls") or []):
                fn = call.get("function") or {}
                args = fn.get("arguments", call.get("arguments"))
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except json.JSONDecodeError:
                        args = {"raw": args}
                calls.append(ToolCall(id=str(call.get("id") or f"call-{i}"), function=str(fn.get("name") or call.get("name")),
                                      arguments=args if isinstance(args, dict) else {"value": args}))
            out.append(ChatMessageAssistant(content=content, tool_calls=calls or None))
        elif role == "tool":
            out.append(ChatMessageTool(content=content, tool_call_id=m.get("tool_call_id"), function=m.get("name")))
        else:
            out.append(ChatMessageUser(content=content))
    return out


def conversation_messages(rows: Sequence[Mapping[str, Any]]) -> list[Any]:
    """``conversation.jsonl`` as user / assistant messages, each row's labels in the message metadata."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser

    out: list[Any] = []
    for row in rows:
        if row.get("skipped"):
            continue
        meta = {k: v for k, v in row.items() if k not in ("role", "content", "raw")}
        cls = ChatMessageAssistant if row.get("role") == rec.ASSISTANT else ChatMessageUser
        out.append(cls(content=_text(row.get("content")), metadata=meta or None))
    return out


# ------------------------------------------------------------------------------------ events
def _turn_key(family: str, row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row.get("turn"),) if family == CAB else (row.get("turn"), row.get("phase"))


def _replies(family: str, conversation: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, ...], str]:
    out: dict[tuple[Any, ...], str] = {}
    for row in conversation:
        if row.get("role") == rec.ASSISTANT and not row.get("skipped"):
            out[_turn_key(family, row)] = _text(row.get("content"))
    return out


def _provenance(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"kind": i.get("kind"), "id": i.get("id"), "source": i.get("source"), "meta": i.get("meta") or {},
             "chars": len(str(i.get("text") or ""))} for i in items]


def model_usage(event: Mapping[str, Any]) -> Any:
    """One ledger event's tokens and cost as an inspect_ai ``ModelUsage``."""
    from inspect_ai.model import ModelUsage

    tin, tout = int(event.get("input_tokens") or 0), int(event.get("output_tokens") or 0)
    cost = event.get("cost_usd")
    return ModelUsage(input_tokens=tin, output_tokens=tout, total_tokens=tin + tout,
                      reasoning_tokens=event.get("reasoning_tokens"),
                      total_cost=None if cost is None else float(cost))


def _add_usage(into: dict[str, Any], model: str, usage: Any) -> None:
    from inspect_ai.model import ModelUsage

    have = into.get(model)
    if have is None:
        into[model] = ModelUsage(**usage.model_dump())
        return
    have.input_tokens += usage.input_tokens
    have.output_tokens += usage.output_tokens
    have.total_tokens += usage.total_tokens
    if usage.total_cost is not None:
        have.total_cost = (have.total_cost or 0.0) + usage.total_cost
    if usage.reasoning_tokens is not None:
        have.reasoning_tokens = (have.reasoning_tokens or 0) + usage.reasoning_tokens


def model_events(family: str, ledger: Sequence[Mapping[str, Any]], contexts: Sequence[Mapping[str, Any]],
                 conversation: Sequence[Mapping[str, Any]], *, start: datetime) -> list[Any]:
    """One ``ModelEvent`` per ledger event, in ledger order.

    The first response call of a turn (``turn_generation``, ``task_generation`` or the CAB
    maintainer's first call) gets as input the prompt the method built for that turn
    (``contexts.jsonl``), the context items' provenance in its metadata and the recorded reply as
    output; every other call records its usage only."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, GenerateConfig, ModelOutput

    prompts: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for row in contexts:
        ctx = row.get("context") or {}
        prompts.setdefault(_turn_key(family, row), ctx)
    replies = _replies(family, conversation)
    used: set[tuple[Any, ...]] = set()
    events: list[Any] = []
    clock = 0.0
    for i, ev in enumerate(ledger):
        model = str(ev.get("model") or "unknown")
        key = _turn_key(family, ev)
        is_response = (ev.get("purpose") in RESPONSE_PURPOSES and (family != CAB or ev.get("role") == "maintainer"))
        ctx = prompts.get(key) if is_response and key not in used else None
        meta: dict[str, Any] = {k: v for k, v in ev.items() if k not in ("input_tokens", "output_tokens", "model")}
        if ctx is not None:
            used.add(key)
            meta["context_items"] = _provenance(ctx.get("items") or [])
            meta["query"] = ctx.get("query")
            if ctx.get("dual_query"):
                meta["dual_query"] = ctx.get("dual_query")
            reply = replies.get(key, "")
            inputs = chat_messages(ctx.get("messages") or [])
        else:
            meta["prompt"] = PROMPT_NOT_RECORDED
            reply, inputs = "", []
        usage = model_usage(ev)
        seconds = float(ev.get("seconds") or 0.0)
        output = ModelOutput(model=model, usage=usage, time=seconds, choices=[ChatCompletionChoice(
            message=ChatMessageAssistant(content=reply, model=model), stop_reason="stop")])
        when = start + timedelta(seconds=clock)
        events.append(ModelEvent(uuid=f"{i}", timestamp=when, working_start=clock, model=model,
                                 role=_model_role(ev), input=inputs, tools=[], tool_choice="none",
                                 config=GenerateConfig(), output=output, cache="read" if ev.get("cached") else None,
                                 completed=when + timedelta(seconds=seconds), working_time=seconds, metadata=meta))
        clock += seconds
    return events


def _model_role(event: Mapping[str, Any]) -> str | None:
    role = event.get("role")
    return str(role) if role in ("user", "judge") else None


# ------------------------------------------------------------------------------------ samples
def _task_scores(runs: RunSet, s: SampleRecord, known: dict[Any, Any]) -> dict[str, Any]:
    from inspect_ai.scorer import CORRECT, INCORRECT, Score

    tests = {t.get("req_id"): t for t in (s.dir.json(rec.TESTS) or []) if isinstance(t, Mapping)}
    scores: dict[str, Any] = {}
    for task in runs.sample_tasks(s, known):
        passed = bool(task.get("passed")) and s.ok
        test = tests.get(task.get("req_id"), {})
        outcome = task.get("outcome")
        log_text = str(test.get("log") or "")
        explanation = f"{outcome}" + (f"\n\n{log_text[-4000:]}" if log_text else "")
        if not s.ok:
            explanation = f"{outcome} (sample {s.status}: its tasks count as failed)"
        scores[str(task.get("req_id"))] = Score(
            value=CORRECT if passed else INCORRECT, answer=test.get("completion"), explanation=explanation,
            metadata={"namespace": task.get("namespace"), "outcome": outcome, "passed": passed,
                      "seconds": test.get("seconds")})
    return scores


def _cab_scores(s: SampleRecord) -> dict[str, Any]:
    from inspect_ai.scorer import Score

    judgment = s.dir.json(rec.JUDGMENT) or {}
    r = s.result
    verdict = r.get("verdict") if s.ok else "INCORRECT"
    explanation = str(judgment.get("reasoning") or judgment.get("key_issues") or "")
    if not s.ok:
        explanation = f"{s.status}: counted as INCORRECT" + (f" ({r.get('error')})" if r.get("error") else "")
    return {"judgment": Score(value=str(verdict), explanation=explanation, metadata={
        "verbosity": r.get("verbosity"), "alignment": r.get("alignment"),
        "technical_correctness": judgment.get("technical_correctness"), "status": s.status,
        "judge_attempts": r.get("judge_attempts")})}


def _error(s: SampleRecord) -> Any:
    from inspect_ai.log import EvalError

    if s.missing:
        text = str(s.result.get("error") or "no result.json (the sample never finished)")
        return EvalError(message=f"missing: {text}; its tasks count as failed", traceback=text, traceback_ansi=text)
    if s.errored:
        trace = s.dir.file(rec.ERROR).read_text(encoding="utf-8") if s.dir.file(rec.ERROR).is_file() else ""
        text = str(s.result.get("error") or s.status)
        return EvalError(message=f"{s.status}: {text}", traceback=trace or text, traceback_ansi=trace or text)
    return None


def eval_sample(runs: RunSet, s: SampleRecord, *, excluded: Mapping[str, str], known: dict[Any, Any],
                start: datetime) -> Any:
    """One benchmark sample as an inspect_ai ``EvalSample``."""
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput

    family = s.run.family
    conversation = s.dir.conversation() if s.dir.path.is_dir() else []
    ledger = s.dir.ledger() if s.dir.path.is_dir() else []
    contexts = s.dir.contexts() if s.dir.path.is_dir() else []
    messages = conversation_messages(conversation)
    first_user = next((_text(m.content) for m in messages if m.role == "user"), "")
    events = model_events(family, ledger, contexts, conversation, start=start)
    usage: dict[str, Any] = {}
    for ev in events:
        _add_usage(usage, ev.model, ev.output.usage)
    reason = excluded.get(s.sample_id)
    r = s.result
    if reason:
        status, scores = "excluded", None
    else:
        status = s.status
        scores = _cab_scores(s) if family == CAB else _task_scores(runs, s, known)
    last = next((_text(m.content) for m in reversed(messages) if m.role == "assistant"), "")
    if status in (rec.Status.EXCLUDED.value, rec.Status.MISSING.value) and not last:
        last = f"({status}: {reason or r.get('error') or 'no record'})"
    target: str | list[str] = (str(r.get("task_id") or s.sample_id) if family == CAB else
                               [str(t.get("namespace") or t.get("req_id")) for t in r.get("tasks") or []] or "")
    metadata = {k: v for k, v in r.items() if k not in ("tasks",)}
    metadata.update({"status": status, "errored": s.errored, "missing": s.missing, "excluded_reason": reason,
                     "tokens": dict(s.token_summary) if ledger else {}})
    return EvalSample(id=s.sample_id, epoch=1, input=first_user or f"({status})", target=target, messages=messages,
                      output=ModelOutput.from_content(model=str(s.run.models.get("backbone") or ""), content=last),
                      scores=scores, metadata=metadata, events=events, model_usage=usage,
                      total_time=_finite(r.get("wall_seconds")), working_time=_finite(r.get("wall_seconds")),
                      error=None if reason else _error(s))


def run_samples(runs: RunSet, run: RunRecord) -> list[SampleRecord]:
    """``run``'s own records plus a ``missing`` record per selected sample it never finished, in the
    manifest's selection order (records outside it after)."""
    own = list(run.samples) + [s for s in runs.missing_samples(run.benchmark) if s.run is run]
    order = {sid: i for i, sid in enumerate(run.selection or {})}
    return sorted(own, key=lambda s: (order.get(s.sample_id, len(order)), s.sample_id))


# ------------------------------------------------------------------------------------ the log
def _started(run: RunRecord) -> datetime:
    text = str(run.manifest.get("started") or "")
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        when = datetime.fromtimestamp(run.dir.samples_path.stat().st_mtime, tz=timezone.utc)
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def eval_id(run: RunRecord) -> str:
    """A stable id of the run (the same records always give the same log name)."""
    key = json.dumps([run.benchmark, run.backbone, run.method, run.run_id, run.repeat], sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:22]


def log_name(run: RunRecord) -> str:
    """``<created>_<task>_<id>.eval``: inspect's own file-name pattern (``-`` inside each part)."""
    created = _started(run).strftime("%Y-%m-%dT%H-%M-%S+00-00")
    task = "".join(c if c.isalnum() else "-" for c in run.benchmark)
    return f"{created}_{task}_{eval_id(run)}{LOG_SUFFIX}"


def _section(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    node = config.get(name)
    return dict(node) if isinstance(node, Mapping) else {}


def _eval_scores(metrics: Mapping[str, Mapping[str, float]], family: str) -> list[Any]:
    from inspect_ai.log import EvalMetric, EvalScore

    scorer = "cab_judge" if family == CAB else "deveval_tests"
    return [EvalScore(name=name, scorer=scorer,
                      metrics={part: EvalMetric(name=part, value=value) for part, value in by_part.items()},
                      metadata={"source": "benchmarks.analysis (the report's tables)",
                                **({"unit": "%"} if name == "pass_at_1" or name.endswith("_pct") else {})})
            for name, by_part in metrics.items() if by_part]


def eval_log(runs: RunSet, run: RunRecord, *, numbers: ReportNumbers | None = None) -> Any:
    """The inspect_ai ``EvalLog`` of one run of ``runs`` (``numbers``: the report's tables, shared
    between the runs of one export)."""
    ilog = _inspect()
    from inspect_ai.model import ModelConfig

    manifest, config = run.manifest, run.config
    started = _started(run)
    excluded = runs.excluded(run.benchmark)
    known = runs._task_lists(run.benchmark)  # noqa: SLF001 - the analysis's own task-list borrowing
    samples = [eval_sample(runs, s, excluded=excluded, known=known, start=started) for s in run_samples(runs, run)]
    metrics = (numbers or ReportNumbers(runs)).of(run)
    method = _section(config, "method")
    benchmark = _section(config, "benchmark")
    roles = {role: ModelConfig(model=str(model)) for role, model in run.models.items()
             if role != "backbone" and model}
    git_rev = manifest.get("git_rev")
    checksums = manifest.get("data_checksums") or {}
    dataset = ilog.EvalDataset(name=run.benchmark, location=str(benchmark.get("samples") or benchmark.get("data") or "")
                               or None, samples=len(samples), sample_ids=[s.id for s in samples])
    spec = ilog.EvalSpec(
        eval_id=eval_id(run), run_id=run.run_id, created=started.isoformat(), task=run.benchmark,
        task_id=eval_id(run), task_display_name=f"{run.benchmark} · {runs.labels.method_label(run.method)}",
        task_description=SCRIPTED_MARK if run.scripted else None,
        task_args={k: v for k, v in benchmark.items() if k not in ("name",)},
        solver=run.method, solver_args={k: v for k, v in method.items() if k != "name"},
        tags=[run.benchmark, run.backbone, run.method, run.run_id, *(["scripted"] if run.scripted else [])],
        dataset=dataset, model=str(run.models.get("backbone") or run.backbone), model_roles=roles or None,
        model_args={"backbone": run.backbone_name, "label": runs.labels.backbone_label(run.backbone)},
        config=ilog.EvalConfig(),
        revision=ilog.EvalRevision(type="git", origin="", commit=str(git_rev), dirty=manifest.get("git_dirty"))
        if git_rev else None,
        packages={k: str(v) for k, v in (manifest.get("packages") or {}).items() if v is not None},
        metadata={"run_dir": str(run.path), "family": run.family, "repeat": run.repeat, "scripted": run.scripted,
                  "data_checksums": checksums, "manifest": manifest},
    )
    plan = ilog.EvalPlan(name=run.method, steps=[ilog.EvalPlanStep(solver=str(method.get("label") or run.method),
                                                                   params=_section(method, "manager"))])
    total: dict[str, Any] = {}
    for s in samples:
        for model, usage in s.model_usage.items():
            _add_usage(total, model, usage)
    n_done = sum(1 for s in samples if s.metadata.get("status") not in (rec.Status.MISSING.value, rec.Status.INTERRUPTED.value,
                                                                   rec.Status.PENDING.value, rec.Status.EXCLUDED.value)
                 and s.error is None)
    incomplete = any(s.metadata.get("missing") for s in samples) or run.summary.get("stopped")
    results = ilog.EvalResults(total_samples=len(samples), completed_samples=n_done,
                               scores=_eval_scores(metrics, run.family),
                               metadata={"metrics": metrics, "excluded": {k: v for k, v in excluded.items()
                                                                          if k in {s.id for s in samples}}})
    finished = started + timedelta(seconds=sum(float(s.total_time or 0.0) for s in samples))
    stats = ilog.EvalStats(started_at=started.isoformat(), completed_at=finished.isoformat(), model_usage=total)
    return ilog.EvalLog(status="cancelled" if incomplete else "success", eval=spec, plan=plan, results=results,
                        stats=stats, samples=samples, tags=spec.tags or [],
                        metadata={"exported_by": "benchmarks.analysis.inspect_export"})


def export_runs(paths: str | Path | Sequence[str | Path], out_dir: str | Path, *, n_resamples: int = 2000,
                seed: int = 0) -> list[ExportedLog]:
    """Write one inspect_ai eval log per run directory found under ``paths`` into ``out_dir``."""
    ilog = _inspect()
    runs = load_runs(paths)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    numbers = ReportNumbers(runs, n_resamples=n_resamples, seed=seed)
    written: list[ExportedLog] = []
    for run in runs.runs:
        log = eval_log(runs, run, numbers=numbers)
        path = out / log_name(run)
        ilog.write_eval_log(log, str(path), format="eval")
        written.append(ExportedLog(path=path, run_dir=run.path, n_samples=len(log.samples or []),
                                   n_events=sum(len(s.events) for s in log.samples or [])))
    return written
