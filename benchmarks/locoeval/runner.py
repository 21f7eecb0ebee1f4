"""LoCoEval runner: preparation dialogue, then read-only function-generation tasks, per sample.

Protocol (ReConMem §3.5, LoCoEval): for each sample

1. the repository index is built over a copy of the snapshot with the sample's target functions
   blanked (see :mod:`benchmarks.locoeval.repo` for why) and cached;
2. ``cm.start(Session(...))`` with the benchmark's response-generation prompt and the backbone's
   context window (the baselines' unified repository adaptation is ``benchmark.repo_adaptation_k``,
   handed to them through their config);
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
resume, workers, ledger scope, timing, manifest, summary): :meth:`LoCoEval.solve` is steps 2-4
(returning the task replies, :class:`LoCoEvalSolved`), :meth:`LoCoEval.grade` step 5. What every
sample shares is :class:`LoCoEvalShared` (clients, settings, the judge), the options
:class:`LoCoEvalSettings` (``conf/benchmark/locoeval.yaml`` mirrors it).
Records (``results/<benchmark>/<backbone>/<method>/<run_id>/samples/<id>/``) are appended turn
by turn; the loop writes ``ledger.jsonl`` and, last, ``result.json``. Every LLM call is tagged in
the ledger with ``sample``, ``attempt`` (the loop's), ``turn``, ``phase`` (prep|task) and ``role``
(user|assistant|memory).

Bracket runs (``method.skip_prep_replies``, a method that reads no earlier turn) skip step 3's
reply and observation: the user turns are still written (scripted, or by the mock user without a
previous reply) and recorded with ``assistant_skipped: true``; ``result.json`` says
``prep_replies: "skipped"``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.records import ASSISTANT, TESTS, USER, RunDir
from benchmarks.task import Benchmark, RunEnv, method_facing_id

from benchmarks.locoeval.judge import PassAt1
from benchmarks.locoeval.loader import load_samples
from benchmarks.locoeval.mock_user import MockUser
from benchmarks.locoeval.prompts import load as load_prompt
from benchmarks.locoeval.prompts import render
from benchmarks.locoeval.schema import Requirement, Sample
from reconmem.platform.brackets import TASK_ORACLE, Statement, TaskOracle
from reconmem.platform.context import ContextManager, Session, Turn
from reconmem.platform.llm import CallDefaults

# Evaluator: (sample, requirement, reply_text) -> {"outcome", "passed", "log", "seconds", "completion"}
Evaluator = Callable[[Sample, Requirement, str], Mapping[str, Any]]
# What the mock user is shown as the previous reply when a bracket run skips the replies.
SKIPPED_REPLY = "(the assistant's reply is not shown)"


class ReadOnlyViolation(RuntimeError):
    """A method changed its memory while answering a read-only function-generation task."""


def backbone_defaults(settings: "LoCoEvalSettings") -> CallDefaults:
    """The backbone client's call defaults: ``turn_max_tokens`` / ``task_max_tokens`` for the
    preparation and task replies, ``purpose_max_tokens`` for the other purposes (methods call
    ``session.llm.chat(..., purpose=...)`` without a token budget; an explicit one wins)."""
    return CallDefaults({**settings.purpose_max_tokens, "turn_generation": settings.turn_max_tokens,
                         "task_generation": settings.task_max_tokens})


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


def sample_index(sample: Sample, cache_dir: Path, *, hide_task_tests: bool = True,
                 hidden_files: Sequence[str] = ()) -> Any:
    """The RepositoryIndex over the sample's blanked snapshot copy (built once per process).

    ``hide_task_tests`` also removes the test files that judge the tasks from the indexed copy, and
    ``hidden_files`` these files (a benchmark's own, e.g. the fork set's); a sample with
    ``target_docstrings: remove`` loses its targets' docstrings there too.
    """
    from benchmarks.locoeval.repo import blanked_copy, snapshot_root

    root = snapshot_root(sample.repo_spec)
    targets = [(r.namespace, r.completion_path) for r in sample.requirements]
    blanked = blanked_copy(root, targets, cache_dir=Path(cache_dir), project_path=sample.project_path,
                           hidden_files=[*(task_test_files(sample) if hide_task_tests else ()), *hidden_files],
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


@dataclass(frozen=True)
class LoCoEvalSettings:
    """LoCoEval's options: ``conf/benchmark/locoeval.yaml`` mirrors these fields (read by
    :func:`benchmarks.task.read_settings`)."""

    samples: str  # JSONL/JSON path, dir, package:<pkg>/<path>, or hf:<dataset>[:split]
    hide_task_tests: bool = True  # the indexed copy lacks the test files that judge the tasks
    turn_max_tokens: int | None = 1024  # preparation-turn responses (purpose turn_generation)
    task_max_tokens: int | None = 1024  # function-generation responses (purpose task_generation)
    user_max_tokens: int = 200  # mock-user queries (purpose mock_user)
    response_prompt: str = "response_system"  # template in benchmarks/locoeval/prompts/
    deveval_data: str | None = None  # DevEval data.jsonl (None: $RECONMEM_DEVEVAL_DATA or the fetched copy)
    sources_manifest: str | None = None  # path or package:<pkg>/<path>; None: the copy shipped in benchmarks/deveval/data/
    evaluator: str | None = None  # a function with evaluate_completion's signature (tests); None: DevEval Pass@1
    purpose_max_tokens: dict[str, int | None] = field(default_factory=dict)  # defaults for other purposes

    @property
    def manifest_file(self) -> Path | None:
        """``sources_manifest`` as a file (None: the shipped copy)."""
        from benchmarks.harness import resolve_data_path

        return resolve_data_path(self.sources_manifest) if self.sources_manifest else None


@dataclass
class LoCoEvalShared:
    """What every sample of a LoCoEval run shares (:meth:`LoCoEval.setup`)."""

    settings: LoCoEvalSettings
    llm: Any  # the backbone's client (with backbone_defaults)
    embedder: Any
    evaluate: Evaluator
    indexes: Callable[[Sample], Any]  # sample -> the RepositoryIndex of its blanked snapshot (or None)
    user_llm: Any = None  # the mock user's client (None: every turn is scripted)
    retriever: Any = "dense"
    privileged_inputs: frozenset[str] = frozenset()  # declared by the method (bracket methods only)
    skip_prep_replies: bool = False


@dataclass(frozen=True)
class TaskReply:
    """The method's reply to one function-generation task."""

    req_id: str
    text: str


@dataclass
class LoCoEvalSolved:
    """A solved sample: the task replies in task order, and whether the preparation replies were generated."""

    replies: list[TaskReply]
    prep_replies: str  # generated | skipped


def _sample_fields(sample: Sample) -> dict[str, Any]:
    return {"subset": sample.subset, "project": sample.project_path, "repo_cluster": sample.repo_cluster,
            "n_turns": len(sample.outline), "n_tasks": len(sample.tasks)}


# ------------------------------------------------------------------------------ whole benchmark
class LoCoEval(Benchmark[Sample, LoCoEvalShared, LoCoEvalSolved]):
    """LoCoEval (and the LoCoEval-format ``demo``) on the run loop (``benchmark._target_``)."""

    family = "locoeval"
    privileged_inputs = frozenset({TASK_ORACLE})
    settings_class = LoCoEvalSettings
    can_skip_prep_replies = True
    uses_executor = True

    def load(self, cfg: Any) -> list[Sample]:
        return load_samples(self.settings_for(cfg).samples)

    def data_files(self, cfg: Any) -> dict[str, Path]:
        from benchmarks.harness import resolve_data_path

        settings = self.settings_for(cfg)
        files = {} if settings.samples.startswith("hf:") else {"samples": resolve_data_path(settings.samples)}
        for key in ("deveval_data", "sources_manifest"):  # what judges the tasks is checksummed too
            if getattr(settings, key):
                files[key] = resolve_data_path(str(getattr(settings, key)))
        return files

    def models(self, cfg: Any, samples: Sequence[Sample]) -> dict[str, str | None]:
        """The mock user is called only for unscripted turns; DevEval tests judge (no judge model)."""
        models = super().models(cfg, samples)
        if all(st.scripted for s in samples for st in s.outline):
            models["user"] = None
        models["judge"] = None
        return models

    def check_data(self, cfg: Any, samples: Sequence[Sample]) -> None:
        """The DevEval records and the sources manifest every selected task needs, before any call."""
        from benchmarks.errors import DataError
        from benchmarks.harness import resolve_data_path

        settings = self.settings_for(cfg)
        if settings.evaluator:
            return
        from benchmarks.deveval.tasks import get_task, load_manifest

        data = resolve_data_path(settings.deveval_data) if settings.deveval_data else None
        try:
            load_manifest(settings.manifest_file)
            for s in samples:
                for r in s.requirements:
                    get_task(r.namespace, data)
        except FileNotFoundError as exc:
            text = str(exc) if exc.filename is None or "]" not in str(exc) else f"{exc.filename}: file not found"
            raise DataError(text.splitlines()[0]) from exc
        except (KeyError, ValueError) as exc:
            text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            raise DataError(text.splitlines()[0]) from exc

    def client_defaults(self, cfg: Any) -> dict[str, CallDefaults]:
        """The backbone's per-purpose ``max_tokens`` (:func:`backbone_defaults`)."""
        return {"backbone": backbone_defaults(self.settings_for(cfg))}

    def setup(self, env: RunEnv[LoCoEvalShared], samples: Sequence[Sample]) -> LoCoEvalShared:
        """The loop's backbone client, and its user client only when a turn is not scripted."""
        from functools import partial

        from benchmarks import harness
        from benchmarks.runloop import method_inputs

        cfg = env.cfg
        settings = self.settings_for(cfg)
        user_llm = env.clients.user if any(not st.scripted for s in samples for st in s.outline) else None
        privileged, skip = method_inputs(cfg)
        return LoCoEvalShared(
            settings=settings, llm=env.clients.backbone, user_llm=user_llm, embedder=harness.build_embedder(cfg),
            evaluate=PassAt1(settings.evaluator, deveval_data=settings.deveval_data,
                             sources_manifest=settings.manifest_file, executor_cfg=cfg.get("executor")),
            indexes=partial(sample_index, cache_dir=Path(str(cfg.cache.dir)).expanduser(),
                            hide_task_tests=settings.hide_task_tests),
            retriever=harness.retriever_spec(cfg), privileged_inputs=privileged, skip_prep_replies=skip)

    def solve(self, sample: Sample, method: ContextManager, env: RunEnv[LoCoEvalShared]) -> LoCoEvalSolved:
        """Steps 2-4: the preparation dialogue, then every function-generation task answered read-only.

        What the method sees: the Session (the response prompt, the repository index, the window),
        every user query and, through ``method.observe``, ``Turn(index, user, assistant)`` - no outline
        label (kind, requirement id, topic) and no subset; those stay in ``conversation.jsonl``.
        ``shared.privileged_inputs`` (``task_oracle``): the bracket channel, for a method that declared
        it. ``shared.skip_prep_replies``: no preparation reply is generated or observed (bracket methods only).
        """
        from reconmem.platform.brackets import reads_history

        sh, rec, ledger = env.shared, env.recorder, env.ledger
        assert sh is not None, "LoCoEval.solve needs the shared state of LoCoEval.setup"
        settings = sh.settings
        skip = sh.skip_prep_replies
        if skip and reads_history(method):
            raise ValueError(f"{type(method).__name__} reads earlier turns: its preparation replies cannot be skipped")
        user = MockUser(sh.user_llm, max_tokens=settings.user_max_tokens)
        session = Session(
            sample_id=method_facing_id(sample.id), llm=sh.llm, embedder=sh.embedder,
            repo=sh.indexes(sample), system_prompt=load_prompt(settings.response_prompt),
            context_window=int(sh.llm.context_window), meta={"benchmark": "locoeval", "project": sample.project_path},
            repo_name=_snapshot_name(sample), retriever=sh.retriever,
        )
        n_turns = len(sample.outline)
        bar = None
        if env.progress:
            from tqdm import tqdm

            bar = tqdm(total=n_turns + len(sample.tasks), desc=f"  {sample.id}", unit="turn", leave=False,
                       dynamic_ncols=True)
        replies: list[TaskReply] = []
        try:
            method.start(session)
            previous: str | None = None
            said: dict[int, str] = {}
            for step in sample.outline:
                with ledger.tags(turn=step.turn, phase="prep"):
                    with ledger.tags(role="user"):
                        query = user.query_for(sample, step, previous)
                    said[step.turn] = query
                    labels = {"phase": "prep", "kind": step.kind, **({"req_id": step.req_id} if step.req_id else {})}
                    rec.message(step.turn, USER, query, **labels)
                    if skip:
                        rec.message(step.turn, ASSISTANT, "", **labels, skipped=True)
                        previous = SKIPPED_REPLY
                        if bar:
                            bar.update(1)
                        continue
                    with ledger.tags(role="assistant"):
                        reply = method.respond(query, purpose="turn_generation")
                    rec.message(step.turn, ASSISTANT, reply.text, **labels)
                    rec.context(step.turn, reply.context.to_dict(), phase="prep",
                                **({"req_id": step.req_id} if step.req_id else {}))
                    with ledger.tags(role="memory"):
                        method.observe(Turn(index=step.turn, user=query, assistant=reply.text))
                previous = reply.text
                if bar:
                    bar.update(1)
            before = memory_fingerprint(method)

            for k, task in enumerate(sample.tasks, 1):
                req = sample.requirement(task.req_id)
                turn_no = n_turns + k
                query = task_query(sample, req, task.query)
                oracle = task_oracle(sample, req, said) if TASK_ORACLE in sh.privileged_inputs else None
                with ledger.tags(turn=turn_no, phase="task", req_id=req.req_id, role="assistant"):
                    if oracle is not None:
                        with method.task_oracle(oracle):  # type: ignore[attr-defined]
                            reply = method.respond(query, purpose="task_generation", read_only=True)
                    else:
                        reply = method.respond(query, purpose="task_generation", read_only=True)
                if memory_fingerprint(method) != before:
                    raise ReadOnlyViolation(f"sample {sample.id!r}: {type(method).__name__} changed its memory while "
                                            f"answering read-only task {req.req_id} ({req.namespace})")
                labels = {"phase": "task", "kind": task.kind, "req_id": req.req_id}
                rec.message(turn_no, USER, query, **labels)
                rec.message(turn_no, ASSISTANT, reply.text, **labels,
                            **({"oracle_turns": oracle.turns} if oracle is not None else {}))
                rec.context(turn_no, reply.context.to_dict(), phase="task", req_id=req.req_id)
                replies.append(TaskReply(req.req_id, reply.text))
                if bar:
                    bar.update(1)
        finally:
            if bar:
                bar.close()
        return LoCoEvalSolved(replies=replies, prep_replies="skipped" if skip else "generated")

    def grade(self, sample: Sample, solved: LoCoEvalSolved, env: RunEnv[LoCoEvalShared]) -> dict[str, Any]:
        """Step 5: every task reply judged (``tests.json`` grows as each verdict exists)."""
        assert env.shared is not None, "LoCoEval.grade needs the shared state of LoCoEval.setup"
        tests: list[dict[str, Any]] = []
        for answer in solved.replies:
            req = sample.requirement(answer.req_id)
            verdict = dict(env.shared.evaluate(sample, req, answer.text))
            tests.append({"req_id": req.req_id, "namespace": req.namespace,
                          "outcome": verdict.get("outcome"), "passed": bool(verdict.get("passed")),
                          "log": verdict.get("log", ""), "seconds": verdict.get("seconds"),
                          "completion": verdict.get("completion")})
            env.recorder.document(TESTS, tests)
        return {
            **_sample_fields(sample), "status": "ok", "error": None, "prep_replies": solved.prep_replies,
            "tasks": [{"req_id": t["req_id"], "namespace": t["namespace"], "outcome": t["outcome"],
                       "passed": t["passed"]} for t in tests],
        }

    def error_result(self, sample: Sample) -> dict[str, Any]:
        """An unfinished sample still counts every one of its tasks, as failed."""
        return {**_sample_fields(sample),
                "tasks": [{"req_id": r.req_id, "namespace": r.namespace, "outcome": "not_run", "passed": False}
                          for r in (sample.requirement(t.req_id) for t in sample.tasks)]}

    def score(self, run_path: Path, sample_ids: Sequence[str]) -> dict[str, Any]:
        """Pass@1 per subset and tokens; CR against the Full History run of the same backbone, run id
        and code retriever (none without that run)."""
        from benchmarks.locoeval import metrics

        summary = metrics.summarize_run(run_path, sample_ids=list(sample_ids))
        run = RunDir(run_path)
        reference = metrics.cr_reference((run.manifest.get("retriever") or {}).get("name"))
        full = run.of_sibling_method(reference)
        if run.method_folder == reference:
            summary["cr"] = 1.0
        elif full.samples_path.is_dir():
            summary["cr"] = metrics.compression_ratio_between(run_path, full.path, sample_ids=list(sample_ids))
            summary["cr_reference"] = str(full.path)
        return summary
