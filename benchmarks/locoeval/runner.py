"""LoCoEval runner: preparation dialogue, then read-only function-generation tasks, per sample.

Protocol (ReConMem §3.5, LoCoEval): for each sample

1. the repository index is built over a copy of the snapshot with the sample's target functions
   blanked (see :mod:`benchmarks.locoeval.repo` for why) and cached;
2. ``cm.start(Session(...))`` with the benchmark's response-generation prompt and the backbone's
   context window (the baselines' unified repository adaptation is a method setting);
3. preparation dialogue, every outline step in order: the mock user writes the query (scripted
   steps verbatim), ``cm.respond(query, purpose="turn_generation")``, then
   ``cm.observe(Turn(index, user, assistant))`` — no outline label reaches the method;
4. each function-generation task independently: ``cm.respond(task_query,
   purpose="task_generation", read_only=True)``, never observed; the memory state
   (``cm.state()``) is compared before and after every task and a change is an error;
   a bracket method that declared the privileged input ``task_oracle`` gets the task's
   :func:`task_oracle` through :meth:`~reconmem.platform.brackets.BracketMethod.task_oracle` only;
5. the reply's code is judged by the DevEval Pass@1 layer on the pristine snapshot.

:class:`LoCoEval` is the benchmark on the one run loop (:mod:`benchmarks.runloop`: selection,
resume, workers, ledger, manifest, summary); :func:`run_sample` is the pure per-sample function.
Records (``results/<benchmark>/<backbone>/<method>/<run_id>/samples/<id>/``) are appended turn
by turn; the loop writes ``ledger.jsonl`` and, last, ``result.json``. Every LLM call is tagged in
the ledger with ``sample``, ``attempt``, ``turn``, ``phase`` (prep|task) and ``role``
(user|assistant|memory).

Bracket runs (``method.skip_prep_replies``, a method that reads no earlier turn) skip step 3's
reply and observation: the user turns are still written (scripted, or by the mock user without a
previous reply) and recorded with ``assistant_skipped: true``; ``result.json`` says
``prep_replies: "skipped"``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.records import ASSISTANT, TESTS, USER, RunDir, SampleRecorder
from benchmarks.task import Benchmark, RunEnv, method_facing_id

from benchmarks.locoeval.loader import load_samples
from benchmarks.locoeval.mock_user import MockUser
from benchmarks.locoeval.prompts import load as load_prompt
from benchmarks.locoeval.prompts import render
from benchmarks.locoeval.schema import Requirement, Sample
from reconmem.platform.brackets import TASK_ORACLE, Statement, TaskOracle
from reconmem.platform.context import ContextManager, Session, Turn

# Evaluator: (requirement, reply_text) -> {"outcome", "passed", "log", "seconds", "completion"}
Evaluator = Callable[[Requirement, str], dict[str, Any]]
# What the mock user is shown as the previous reply when a bracket run skips the replies.
SKIPPED_REPLY = "(the assistant's reply is not shown)"


class ReadOnlyViolation(RuntimeError):
    """A method changed its memory while answering a read-only function-generation task."""


class BudgetedLLM:
    """Proxy over an LLM client that sets default ``max_tokens`` per purpose.

    Methods call ``session.llm.chat(..., purpose="turn_generation")`` without a token budget; the
    benchmark's ``turn_max_tokens`` / ``task_max_tokens`` apply through this proxy. Everything else
    (ledger, cache, count_tokens, chat_json, context_window ...) is the wrapped client's.
    """

    def __init__(self, llm: Any, budgets: Mapping[str, int | None]) -> None:
        self._llm = llm
        self._budgets = {k: int(v) for k, v in budgets.items() if v}

    def chat(self, messages: Any, *, purpose: str, max_tokens: int | None = None, **kw: Any) -> Any:
        if max_tokens is None:
            max_tokens = self._budgets.get(purpose)
        return self._llm.chat(messages, purpose=purpose, max_tokens=max_tokens, **kw)

    def chat_json(self, messages: Any, *, purpose: str, max_tokens: int | None = None, **kw: Any) -> Any:
        """``chat_json`` with the same per-purpose default budget as :meth:`chat`."""
        if max_tokens is None:
            max_tokens = self._budgets.get(purpose)
        return self._llm.chat_json(messages, purpose=purpose, max_tokens=max_tokens, **kw)

    @property
    def wrapped(self) -> Any:
        return self._llm

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)


def task_query(sample: Sample, req: Requirement, query: str) -> str:
    """The function-generation query: the sample's query + target file and exact signature."""
    return render("task_query", query=query.strip(), name=req.function_name, file=display_path(sample, req),
                  signature=_dedent_signature(req.signature))


def task_oracle(sample: Sample, req: Requirement, said: Mapping[int, str]) -> TaskOracle:
    """The privileged input of ``oracle_context`` for ``req``: the user turns, as sent (``said``:
    turn -> query), that stated its requirement (``requirement`` steps of ``req``) and its
    ground-truth items (``info`` / ``revision`` steps listing one of them), in conversation order.
    Distractors and the turns that only ask about an item (recaps) are left out."""
    gt = {item.id for item in req.gt_items}
    turns = [st.turn for st in sample.outline
             if (st.kind == "requirement" and st.req_id == req.req_id)
             or (st.kind in ("info", "revision") and gt & set(st.item_ids))]
    return TaskOracle(tuple(Statement(turn=t, text=said[t]) for t in turns))


def display_path(sample: Sample, req: Requirement) -> str:
    """The target file relative to the repository root (DevEval's project prefix removed)."""
    prefix = sample.project_path.rstrip("/") + "/"
    return req.completion_path[len(prefix):] if req.completion_path.startswith(prefix) else req.completion_path


def _dedent_signature(sig: str) -> str:
    import textwrap

    return textwrap.dedent(sig).rstrip()


def memory_fingerprint(cm: ContextManager) -> str:
    """A canonical string of the method's memory state (read-only checks)."""
    return json.dumps(cm.state(), sort_keys=True, default=str, ensure_ascii=False)


_INDEX_CACHE: dict[str, Any] = {}
_INDEX_LOCK = threading.Lock()


def task_test_files(sample: Sample) -> list[str]:
    """The test files (``path`` of ``path::test``) that judge the sample's tasks."""
    return sorted({t.split("::", 1)[0] for r in sample.requirements for t in r.tests})


def sample_index(sample: Sample, cache_dir: Path, *, hide_task_tests: bool = True) -> Any:
    """The RepositoryIndex over the sample's blanked snapshot copy (built once per process).

    ``hide_task_tests`` also removes the test files that judge the tasks from the indexed copy; a
    sample with ``target_docstrings: remove`` loses its targets' docstrings there too.
    """
    from benchmarks.locoeval.repo import blanked_copy, snapshot_root

    root = snapshot_root(sample.repo_spec)
    targets = [(r.namespace, r.completion_path) for r in sample.requirements]
    blanked = blanked_copy(root, targets, cache_dir=Path(cache_dir), project_path=sample.project_path,
                           hidden_files=task_test_files(sample) if hide_task_tests else (),
                           strip_docstrings=sample.target_docstrings == "remove")
    key = str(blanked)
    with _INDEX_LOCK:
        if key not in _INDEX_CACHE:
            from reconmem.platform.code import RepositoryIndex

            _INDEX_CACHE[key] = RepositoryIndex.build(blanked)
        return _INDEX_CACHE[key]


def _snapshot_name(sample: Sample) -> str:
    """The repository's name as its user has it: the snapshot directory (e.g. ``boltons-23.1.1``),
    not the path of the blanked copy the harness indexes (under the cache directory, with a hash in it)."""
    from benchmarks.locoeval.repo import snapshot_root

    return snapshot_root(sample.repo_spec).name


def run_sample(sample: Sample, *, cm: ContextManager, llm: Any, embedder: Any, evaluate: Evaluator,
               out_dir: str | Path, user: MockUser | None = None, repo_index: Any = None,
               system_prompt: str | None = None, repo_context_k: int = 0,
               turn_max_tokens: int | None = None, task_max_tokens: int | None = None,
               context_window: int | None = None, purpose_max_tokens: Mapping[str, int] | None = None,
               progress: bool = True, repo_name: str | None = None, privileged_inputs: Sequence[str] = (),
               skip_prep_replies: bool = False, retriever: Any = "dense",
               recorder: SampleRecorder | None = None) -> dict[str, Any]:
    """Run one sample end to end, its conversation / context / test rows written as they happen
    through ``recorder`` (default: a recorder on ``out_dir``).

    Raises on any failure (the run loop records ``status: error``). ``result.json``, ``ledger.jsonl``
    and ``memory.json`` are the run loop's (result last).

    What the method sees: the Session (the response prompt, the repository index, the window),
    every user query and, through ``cm.observe``, ``Turn(index, user, assistant)`` — no outline
    label (kind, requirement id, topic) and no subset; those stay in ``conversation.jsonl``.
    ``privileged_inputs`` (``task_oracle``): the bracket channel, for a method that declared it.
    ``skip_prep_replies``: no preparation reply is generated or observed (bracket methods only).
    """
    from reconmem.platform.brackets import reads_history

    if skip_prep_replies and reads_history(cm):
        raise ValueError(f"{type(cm).__name__} reads earlier turns: its preparation replies cannot be skipped")
    rec = recorder or SampleRecorder(out_dir)
    started = time.perf_counter()
    ledger = llm.ledger
    user = user or MockUser(None)
    budgeted = BudgetedLLM(llm, {**dict(purpose_max_tokens or {}), "turn_generation": turn_max_tokens,
                                 "task_generation": task_max_tokens})
    session = Session(
        sample_id=method_facing_id(sample.id), llm=budgeted, embedder=embedder, repo=repo_index,
        system_prompt=system_prompt or load_prompt("response_system"),
        context_window=int(context_window or llm.context_window), repo_context_k=int(repo_context_k),
        meta={"benchmark": "locoeval", "project": sample.project_path},
        repo_name=repo_name or Path(sample.project_path).name or None, retriever=retriever,
    )
    n_turns, n_tasks = len(sample.outline), len(sample.tasks)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n_turns + n_tasks, desc=f"  {sample.id}", unit="turn", leave=False, dynamic_ncols=True)
    tests: list[dict[str, Any]] = []
    try:
        with ledger.tags(sample=sample.id):
            cm.start(session)
            previous: str | None = None
            said: dict[int, str] = {}
            for step in sample.outline:
                with ledger.tags(turn=step.turn, phase="prep"):
                    with ledger.tags(role="user"):
                        query = user.query_for(sample, step, previous)
                    said[step.turn] = query
                    labels = {"phase": "prep", "kind": step.kind, **({"req_id": step.req_id} if step.req_id else {})}
                    rec.message(step.turn, USER, query, **labels)
                    if skip_prep_replies:
                        rec.message(step.turn, ASSISTANT, "", **labels, skipped=True)
                        previous = SKIPPED_REPLY
                        if bar:
                            bar.update(1)
                        continue
                    with ledger.tags(role="assistant"):
                        reply = cm.respond(query, purpose="turn_generation")
                    rec.message(step.turn, ASSISTANT, reply.text, **labels)
                    rec.context(step.turn, reply.context.to_dict(), phase="prep",
                                **({"req_id": step.req_id} if step.req_id else {}))
                    with ledger.tags(role="memory"):
                        cm.observe(Turn(index=step.turn, user=query, assistant=reply.text))
                previous = reply.text
                if bar:
                    bar.update(1)
            before = memory_fingerprint(cm)

            for k, task in enumerate(sample.tasks, 1):
                req = sample.requirement(task.req_id)
                turn_no = n_turns + k
                query = task_query(sample, req, task.query)
                oracle = task_oracle(sample, req, said) if TASK_ORACLE in privileged_inputs else None
                with ledger.tags(turn=turn_no, phase="task", req_id=req.req_id, role="assistant"):
                    if oracle is not None:
                        with cm.task_oracle(oracle):  # type: ignore[attr-defined]
                            reply = cm.respond(query, purpose="task_generation", read_only=True)
                    else:
                        reply = cm.respond(query, purpose="task_generation", read_only=True)
                after = memory_fingerprint(cm)
                if after != before:
                    raise ReadOnlyViolation(f"sample {sample.id!r}: {type(cm).__name__} changed its memory while "
                                            f"answering read-only task {req.req_id} ({req.namespace})")
                labels = {"phase": "task", "kind": task.kind, "req_id": req.req_id}
                rec.message(turn_no, USER, query, **labels)
                rec.message(turn_no, ASSISTANT, reply.text, **labels,
                            **({"oracle_turns": oracle.turns} if oracle is not None else {}))
                rec.context(turn_no, reply.context.to_dict(), phase="task", req_id=req.req_id)
                verdict = dict(evaluate(req, reply.text))
                tests.append({"req_id": req.req_id, "namespace": req.namespace,
                              "outcome": verdict.get("outcome"), "passed": bool(verdict.get("passed")),
                              "log": verdict.get("log", ""), "seconds": verdict.get("seconds"),
                              "completion": verdict.get("completion")})
                rec.document(TESTS, tests)
                if bar:
                    bar.update(1)
    finally:
        if bar:
            bar.close()
    return {
        **_sample_fields(sample), "status": "ok", "error": None,
        "prep_replies": "skipped" if skip_prep_replies else "generated",
        "wall_seconds": round(time.perf_counter() - started, 3),
        "tasks": [{"req_id": t["req_id"], "namespace": t["namespace"], "outcome": t["outcome"], "passed": t["passed"]}
                  for t in tests],
    }


def _sample_fields(sample: Sample) -> dict[str, Any]:
    return {"subset": sample.subset, "project": sample.project_path, "repo_cluster": sample.repo_cluster,
            "n_turns": len(sample.outline), "n_tasks": len(sample.tasks)}


# ------------------------------------------------------------------------------ whole benchmark
def _import(path: str) -> Any:
    import hydra.utils

    return hydra.utils.get_method(path) if ":" not in path else _import_colon(path)


def _import_colon(path: str) -> Any:
    import importlib

    mod, _, attr = path.partition(":")
    return getattr(importlib.import_module(mod), attr)


def build_evaluator(cfg: Any, sample: Sample, executor_box: dict[str, Any]) -> Evaluator:
    """``(req, reply) -> verdict`` for one sample: the DevEval Pass@1 layer, or ``benchmark.evaluator``
    (a dotted function with evaluate_completion's signature; used by tests)."""
    custom = cfg.benchmark.get("evaluator")
    if custom:
        fn = _import(str(custom))
    else:
        from benchmarks.deveval.evaluate import evaluate_completion as fn
    manifest = cfg.benchmark.get("sources_manifest")
    extra: dict[str, Any] = {}
    if not custom and cfg.benchmark.get("deveval_data"):
        from benchmarks.harness import resolve_data_path

        extra["data_path"] = resolve_data_path(str(cfg.benchmark.deveval_data))

    def evaluate(req: Requirement, reply_text: str) -> dict[str, Any]:
        if "executor" not in executor_box:
            with _INDEX_LOCK:
                if "executor" not in executor_box:
                    executor_box["executor"] = None if custom else _build_executor(cfg)
        return fn(req.namespace, reply_text, repo_spec=sample.repo_spec, executor=executor_box["executor"],
                  manifest=manifest, **extra)

    return evaluate


def _build_executor(cfg: Any) -> Any:
    from benchmarks.sandbox import build_executor

    return build_executor(cfg.executor)


class LoCoEval(Benchmark):
    """LoCoEval (and the LoCoEval-format ``demo``) on the run loop (``benchmark._target_``)."""

    family = "locoeval"
    privileged_inputs = frozenset({TASK_ORACLE})
    can_skip_prep_replies = True
    uses_executor = True

    def load(self, cfg: Any) -> list[Sample]:
        return load_samples(str(cfg.benchmark.samples))

    def data_files(self, cfg: Any) -> dict[str, Path]:
        from benchmarks.harness import resolve_data_path

        src = str(cfg.benchmark.samples)
        files = {} if src.startswith("hf:") else {"samples": resolve_data_path(src)}
        for key in ("deveval_data", "sources_manifest"):  # what judges the tasks is checksummed too
            if cfg.benchmark.get(key):
                files[key] = resolve_data_path(str(cfg.benchmark.get(key)))
        return files

    def models(self, cfg: Any, samples: Sequence[Sample]) -> dict[str, str | None]:
        """The mock user is called only for unscripted turns; DevEval tests judge (no judge model)."""
        scripted_only = all(st.scripted for s in samples for st in s.outline)
        return {"backbone": str(cfg.backbone.model),
                "user": None if scripted_only else str(cfg.user_backbone.model), "judge": None}

    def check_data(self, cfg: Any, samples: Sequence[Sample]) -> None:
        """The DevEval records and the sources manifest every selected task needs, before any call."""
        from benchmarks.harness import DataError, resolve_data_path

        bench = cfg.benchmark
        if bench.get("evaluator"):
            return
        from benchmarks.deveval.tasks import get_task, load_manifest

        data = resolve_data_path(str(bench.deveval_data)) if bench.get("deveval_data") else None
        try:
            load_manifest(bench.get("sources_manifest"))
            for s in samples:
                for r in s.requirements:
                    get_task(r.namespace, data)
        except FileNotFoundError as exc:
            text = str(exc) if exc.filename is None or "]" not in str(exc) else f"{exc.filename}: file not found"
            raise DataError(text.splitlines()[0]) from exc
        except (KeyError, ValueError) as exc:
            text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            raise DataError(text.splitlines()[0]) from exc

    def setup(self, env: RunEnv, samples: Sequence[Sample]) -> None:
        from omegaconf import OmegaConf

        from benchmarks import harness

        cfg = env.cfg
        llm = harness.build_llm(cfg.backbone, cfg, env.ledger)
        user_llm = None
        if any(not st.scripted for s in samples for st in s.outline):
            same = (OmegaConf.to_container(cfg.user_backbone, resolve=True)
                    == OmegaConf.to_container(cfg.backbone, resolve=True))
            user_llm = llm if same else harness.build_llm(cfg.user_backbone, cfg, env.ledger, option="user_backbone")
        env.shared.update(llm=llm, user_llm=user_llm, embedder=harness.build_embedder(cfg),
                          cache_dir=Path(str(cfg.cache.dir)).expanduser(), executor_box={})

    def run_sample(self, sample: Sample, method: ContextManager, env: RunEnv) -> dict[str, Any]:
        from benchmarks import harness
        from benchmarks.runloop import method_inputs

        cfg, bench, sh = env.cfg, env.cfg.benchmark, env.shared
        privileged, skip = method_inputs(cfg)
        return run_sample(
            sample, cm=method, llm=sh["llm"], embedder=sh["embedder"],
            evaluate=build_evaluator(cfg, sample, sh["executor_box"]), out_dir=env.out_dir, recorder=env.recorder,
            user=MockUser(sh["user_llm"], max_tokens=int(bench.get("user_max_tokens", 200) or 200)),
            repo_index=sample_index(sample, sh["cache_dir"], hide_task_tests=bool(bench.get("hide_task_tests", True))),
            system_prompt=_system_prompt(bench),
            turn_max_tokens=bench.get("turn_max_tokens"), task_max_tokens=bench.get("task_max_tokens"),
            purpose_max_tokens=_plain(bench.get("purpose_max_tokens")), progress=env.progress,
            repo_name=_snapshot_name(sample), privileged_inputs=tuple(sorted(privileged)), skip_prep_replies=skip,
            retriever=harness.retriever_spec(cfg),
        )

    def error_result(self, sample: Sample) -> dict[str, Any]:
        """An unfinished sample still counts every one of its tasks, as failed."""
        return {**_sample_fields(sample),
                "tasks": [{"req_id": r.req_id, "namespace": r.namespace, "outcome": "not_run", "passed": False}
                          for r in (sample.requirement(t.req_id) for t in sample.tasks)]}

    def score(self, run_path: Path, sample_ids: Sequence[str]) -> dict[str, Any]:
        """Pass@1 per subset and tokens; CR against the Full run of the same backbone and run id."""
        from benchmarks.locoeval import metrics

        summary = metrics.summarize_run(run_path, sample_ids=list(sample_ids))
        run, full = RunDir(run_path), RunDir(run_path).of_sibling_method("full")
        if run.method_folder == "full":
            summary["cr"] = 1.0
        elif full.samples_path.is_dir():
            summary["cr"] = metrics.compression_ratio_between(run_path, full.path, sample_ids=list(sample_ids))
            summary["cr_reference"] = str(full.path)
        return summary


def _plain(node: Any) -> dict[str, int]:
    if not node:
        return {}
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else dict(node)
    return {str(k): int(v) for k, v in data.items() if v}


def _system_prompt(bench: Any) -> str:
    name = bench.get("response_prompt") or "response_system"
    return load_prompt(str(name))
