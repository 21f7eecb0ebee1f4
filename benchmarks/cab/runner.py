"""CodeAssistBench runner: one conversation per issue, judged, recorded, summarised.

:class:`CodeAssistBench` is the benchmark on the run loop (``benchmark._target_``, see
:mod:`benchmarks.runloop`): :meth:`~CodeAssistBench.solve` checks the repository out and holds the
conversation (:class:`CabSolved`), :meth:`~CodeAssistBench.grade` judges its final answer; what every
issue shares is :class:`CabShared`, the options :class:`CabSettings` (``conf/benchmark/cab.yaml``
mirrors it).

Per issue, in ``samples/<task_id>/``, written as they happen through the loop's
:class:`benchmarks.records.SampleRecorder`: ``conversation.jsonl`` (user / assistant messages - the
assistant is the maintainer -, the user's satisfaction status and raw text), ``tool_calls.jsonl``,
``contexts.jsonl`` (what each maintainer prompt contained), then ``judgment.json``; the run loop adds
``memory.json``, ``ledger.jsonl`` (every LLM call, tagged ``role`` = maintainer / memory / user /
judge) and finally ``result.json``.

Statuses: ``ok`` (judged), ``init_failed`` (repository not initialisable) and
``docker_unavailable`` (a dockerfile but no engine) — issue-level properties recorded as
``excluded_reason`` so the analysis drops the issue for EVERY method alike (the paper's 268 of
274) —, ``judge_error`` (no well-formed judgment after ``benchmark.judge_retries`` further
judgments with the same judge model; counted as incorrect, ``errored: true``), ``error``
(anything else; retried on resume, counted as incorrect until it succeeds).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from benchmarks.cab.judge import JudgeAgent, JudgeError
from benchmarks.cab.maintainer import maintainer_system_prompt
from benchmarks.cab.user import FULLY_SATISFIED, UserAgent
from benchmarks.cab.checkout import CheckoutError, prepare_checkout
from benchmarks.cab.strands_host import make_maintainer
from benchmarks.cab.docker_check import DockerUnavailableForIssue, docker_validate
from benchmarks.cab.loader import CabIssue, load_issues
from benchmarks.cab.metrics import issue_tokens, summarize, tokens_by_role
from benchmarks.cab.tools import RepoTools, ToolLimits
from benchmarks.records import ASSISTANT, JUDGMENT, USER
from benchmarks.roles import ROLE_OPTIONS
from benchmarks.task import Benchmark, RunEnv, method_facing_id
from reconmem.platform.context import ContextManager, Session
from reconmem.platform.llm import CallDefaults

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CabSettings:
    """CodeAssistBench's options: ``conf/benchmark/cab.yaml`` mirrors these fields (read by
    :func:`benchmarks.task.read_settings`; an unknown key is an error naming ``benchmark.<key>``)."""

    data: str = "data/cab/cab_verified_v3.jsonl"  # v3 JSONL (or v1 strict / lenient; JSON list files too)
    languages: list[str] | None = None  # e.g. [python, cpp]; any spelling (c++ == cpp)
    max_turns: int = 10  # maintainer responses per issue (paper §3.2.2)
    max_tool_steps: int = 8  # tool rounds per maintainer response
    max_calls_per_step: int = 4  # tool calls executed per round (both hosts); later ones get an error
    user_retries: int = 1  # further user-agent calls after an empty message, then the issue errors
    user_retry_temperature: float = 0.7  # a temperature-0 retry would replay the cached empty reply
    maintainer_host: str = "builtin"  # builtin (MaintainerAgent) | strands (the paper's Strands Agents host)
    maintainer_max_tokens: int | None = 2048
    user_max_tokens: int | None = None  # None: the backbone's max_output_tokens
    judge_max_tokens: int | None = None
    judge_retries: int = 2  # further judgments after a malformed one (same judge model, sampled)
    judge_retry_temperature: float = 0.7  # temperature-0 retries would replay the cached reply
    repo_index: bool = True  # build a RepositoryIndex for Session.repo (ReConMem needs it)
    repo_cache: str | None = None  # checkouts <owner>__<name>/<commit>/ (None: <cache.dir>/cab_repos)
    repo_url_template: str = "https://github.com/{owner}/{name}.git"
    checkout_timeout: float = 900.0  # seconds per git step
    local_repos: dict[str, str] | None = None  # {owner/name: /path/to/checkout} used as-is (offline)
    tool_limits: ToolLimits = field(default_factory=ToolLimits)


@dataclass
class CabShared:
    """What every issue of a CAB run shares (:meth:`CodeAssistBench.setup`)."""

    settings: CabSettings
    maintainer_llm: Any
    user_llm: Any
    judge_llm: Any
    cache_dir: Path  # where checkouts are kept
    embedder: Any = None
    retriever: Any = "dense"
    repo_index_builder: Callable[[Path], Any] | None = None  # None: RepositoryIndex.build
    docker_client_factory: Callable[[], Any] | None = None  # for issues with a dockerfile


@dataclass
class CabSolved:
    """A CAB issue after its conversation (or without one: ``excluded`` says why)."""

    base: dict[str, Any]  # the result's identity fields (task id, repo, checkout ...)
    excluded: str | None = None  # init_failed | docker_unavailable: an issue-level property
    error: str | None = None
    repo_root: Path | None = None
    docker_client: Any = None
    answer: str = ""  # the maintainer's last response (judged)
    turns: int = 0
    final_user_status: str | None = None
    conversation: list[dict[str, Any]] = field(default_factory=list)  # the rows written
    tool_rows: list[dict[str, Any]] = field(default_factory=list)
    turn_stats: list[dict[str, Any]] = field(default_factory=list)


class EmptyUserTurn(RuntimeError):
    """The user agent's message stayed empty after the retries: the issue errors (retried on resume)."""


def _user_reply(user: UserAgent, chat: list[dict[str, str]], settings: "CabSettings", issue: CabIssue,
                turn: int) -> tuple[Any, int]:
    """The user agent's next message and how many retries it took; an empty message (that does not end
    the conversation) is asked again ``settings.user_retries`` times at ``user_retry_temperature``,
    then raises :class:`EmptyUserTurn`."""
    reply = user.reply(chat)
    retries = 0
    while not reply.text.strip() and reply.status != FULLY_SATISFIED:
        if retries >= settings.user_retries:
            raise EmptyUserTurn(
                f"issue {issue.task_id!r} turn {turn}: the user agent returned an empty message {retries + 1} time(s) "
                f"(finish_reason={reply.finish_reason!r}); raise benchmark.user_max_tokens "
                f"(now {settings.user_max_tokens}) if the user model spends its budget on thinking, or "
                f"benchmark.user_retries (now {settings.user_retries})")
        retries += 1
        reply = user.reply(chat, temperature=settings.user_retry_temperature)
    return reply, retries


def _judge(issue: CabIssue, answer: str, docker_result: Any, judge_llm: Any, settings: "CabSettings") -> Any:
    """The judgment, retried up to ``settings.judge_retries`` times; raises JudgeError (all raw outputs)."""
    raws: list[str] = []
    attempts = 0
    error: JudgeError | None = None
    for k in range(1 + max(0, settings.judge_retries)):
        llm = judge_llm if k == 0 else judge_llm.with_defaults(CallDefaults(temperature=settings.judge_retry_temperature))
        try:
            judgment = JudgeAgent(llm, max_tokens=settings.judge_max_tokens).judge(issue, answer, docker_result)
        except JudgeError as exc:
            error = exc
            raws.extend(exc.raw_outputs)
            attempts += len(exc.raw_outputs)
            continue
        judgment.attempts = attempts + judgment.attempts
        return judgment
    assert error is not None
    raise JudgeError(str(error), raws)


def _issue_tasks(issue: CabIssue, verdict: str | None) -> dict[str, Any]:
    """The issue as the sample's one task: passed when the judge's verdict is CORRECT."""
    return {"n_tasks": 1, "tasks": [{"req_id": issue.task_id, "namespace": issue.repo,
                                     "outcome": verdict or "not_judged", "passed": verdict == "CORRECT"}]}


def _default_index_builder(root: Path) -> Any:
    from reconmem.platform.code.index import RepositoryIndex

    return RepositoryIndex.build(root)


class _LazyEmbedder:
    """Loads the sentence-transformers embedder on first use (Full history never needs it)."""

    def __init__(self, factory: Callable[[], Any]):
        self._factory = factory
        self._obj = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._obj is None:
            self._obj = self._factory()
        return getattr(self._obj, name)


# --------------------------------------------------------------------------- the benchmark
def _docker_factory(cfg: Any) -> Callable[[], Any]:
    def factory() -> Any:
        from benchmarks.cab.docker_check import docker_client_from_executor

        return docker_client_from_executor(cfg.get("executor"))

    return factory


class CodeAssistBench(Benchmark[CabIssue, CabShared, CabSolved]):
    """CodeAssistBench on the run loop (``benchmark._target_``)."""

    family = "cab"
    statuses = frozenset({"init_failed", "judge_error", "docker_unavailable"})
    settings_class = CabSettings

    def sample_id(self, sample: CabIssue) -> str:
        return sample.task_id

    def _data_path(self, cfg: Any) -> Path:
        from benchmarks.harness import resolve_data_path

        return resolve_data_path(self.settings_for(cfg).data)

    def load(self, cfg: Any) -> list[CabIssue]:
        return load_issues(self._data_path(cfg), languages=self.settings_for(cfg).languages)

    def select(self, samples: Any, *, ids: Any, limit: Any) -> list[CabIssue]:
        """As the base class; the task id of a url-duplicate selects the record that was kept."""
        alias = {dup: i.task_id for i in samples for dup in i.duplicate_task_ids}
        ids = None if ids is None else list(dict.fromkeys(alias.get(i, i) for i in ids))
        return super().select(samples, ids=ids, limit=limit)

    def data_files(self, cfg: Any) -> dict[str, Path]:
        return {"cab": self._data_path(cfg)}

    def setup(self, env: RunEnv[CabShared], samples: Any) -> CabShared:
        """The loop's three role clients (maintainer = backbone, user, judge), the checkout cache."""
        from benchmarks.harness import build_embedder, retriever_spec

        cfg = env.cfg
        settings = self.settings_for(cfg)
        cache = settings.repo_cache or str(Path(str(cfg.cache.dir)) / "cab_repos")
        clients = env.clients
        return CabShared(
            settings=settings, maintainer_llm=clients.backbone, user_llm=clients.user, judge_llm=clients.judge,
            cache_dir=Path(cache).expanduser(), embedder=_LazyEmbedder(lambda: build_embedder(cfg)),
            retriever=retriever_spec(cfg), docker_client_factory=_docker_factory(cfg))

    def solve(self, issue: CabIssue, method: ContextManager, env: RunEnv[CabShared]) -> CabSolved:
        """Check out the issue's repository and hold the user / maintainer conversation, its rows
        written as they happen (a crash keeps the transcript so far). An issue whose repository
        cannot be checked out (``init_failed``) or that needs an absent Docker engine
        (``docker_unavailable``) is solved as excluded, before any model call."""
        sh, rec, ledger = env.shared, env.recorder, env.ledger
        assert sh is not None, "CodeAssistBench.solve needs the shared state of CodeAssistBench.setup"
        settings = sh.settings
        try:
            repo_root, info = prepare_checkout(issue, cache_dir=sh.cache_dir, local_repos=settings.local_repos,
                                               url_template=settings.repo_url_template,
                                               timeout=settings.checkout_timeout)
        except CheckoutError as exc:
            return CabSolved(base=self._base(issue), excluded="init_failed", error=str(exc))
        base: dict[str, Any] = {**self._base(issue), "url": issue.url, "checkout": info}
        docker_client = None
        if issue.dockerfile:  # needs an engine: checked before spending any tokens
            try:
                docker_client = sh.docker_client_factory() if sh.docker_client_factory else None
                if docker_client is None:
                    raise DockerUnavailableForIssue("no docker client configured (executor=docker)")
            except DockerUnavailableForIssue as exc:
                return CabSolved(base=base, excluded="docker_unavailable", error=str(exc))

        maintainer_llm = sh.maintainer_llm
        tools = RepoTools(repo_root, settings.tool_limits)
        maintainer = make_maintainer(settings.maintainer_host, maintainer_llm, method, tools,
                                     max_tool_steps=settings.max_tool_steps, max_tokens=settings.maintainer_max_tokens,
                                     max_calls_per_step=settings.max_calls_per_step)
        system_prompt = maintainer_system_prompt(issue, function_calling=maintainer.function_calling,
                                                 max_tool_steps=settings.max_tool_steps, docker=bool(issue.dockerfile))
        repo_index = None
        if settings.repo_index:
            t0 = time.perf_counter()
            repo_index = (sh.repo_index_builder or _default_index_builder)(repo_root)
            base["index_seconds"] = round(time.perf_counter() - t0, 3)
        session = Session(sample_id=method_facing_id(issue.task_id), llm=maintainer_llm, embedder=sh.embedder,
                          repo=repo_index, system_prompt=system_prompt, context_window=maintainer_llm.context_window,
                          meta={"no_recall_first_turn": True, "benchmark": "cab", "repo": issue.repo,
                                "repo_root": str(repo_root)}, repo_name=issue.repo or None, retriever=sh.retriever)
        with ledger.tags(role="memory"):
            method.start(session)
        user = UserAgent(sh.user_llm, issue, max_tokens=settings.user_max_tokens)
        solved = CabSolved(base=base, repo_root=repo_root, docker_client=docker_client)
        conversation = solved.conversation
        chat: list[dict[str, str]] = []  # what the user agent sees
        query = user.opening_message()
        conversation.append(rec.message(0, USER, query, opening=True))
        chat.append({"role": "user", "content": query})
        for t in range(settings.max_turns):
            t_turn = time.perf_counter()
            with ledger.tags(turn=t, role="maintainer"):
                if t == 0 or getattr(method, "host_managed_history", False):  # Native Strands never recalls
                    mturn = maintainer.respond(query, first_turn=True)
                else:
                    with ledger.tags(role="memory"):
                        ctx = method.context_for(query)
                    mturn = maintainer.respond_with_context(query, ctx)
            with ledger.tags(turn=t, role="memory"):
                maintainer.observe(t, query, mturn)
            solved.turns += 1
            solved.answer = mturn.text
            solved.tool_rows.extend(rec.tool_call(t, i, r.record()) for i, r in enumerate(mturn.tool_results))
            rec.context(t, mturn.context.to_dict(), recalled=mturn.recalled)
            conversation.append(rec.message(
                t, ASSISTANT, solved.answer, llm_calls=mturn.llm_calls, tool_steps=mturn.tool_steps,
                forced_final=mturn.forced_final, protocol_errors=mturn.protocol_errors,
                repeated_tool_calls=mturn.repeated_calls, over_cap_calls=mturn.over_cap_calls,
                window_trims=mturn.window_trims, reasked=mturn.reasked, final_is_tool_call=mturn.final_is_tool_call))
            chat.append({"role": "assistant", "content": solved.answer})
            solved.turn_stats.append({"turn": t, "seconds": round(time.perf_counter() - t_turn, 3),
                                      "tool_calls": len(mturn.tool_results)})
            if t + 1 >= settings.max_turns:
                break  # no user reply after the last allowed maintainer response
            with ledger.tags(turn=t, role="user"):
                reply, user_retries = _user_reply(user, chat, settings, issue, t + 1)
            solved.final_user_status = reply.status
            conversation.append(rec.message(t + 1, USER, reply.text, status=reply.status, reason=reply.reason,
                                            status_found=reply.status_found, raw=reply.raw,
                                            **({"retries": user_retries} if user_retries else {})))
            if reply.status == FULLY_SATISFIED:
                break
            query = reply.text
            chat.append({"role": "user", "content": query})
        return solved

    def grade(self, issue: CabIssue, solved: CabSolved, env: RunEnv[CabShared]) -> dict[str, Any]:
        """The final answer judged (Docker validation first for an issue with a dockerfile), with the
        attempt's tokens by role. ``judge_error``: no well-formed judgment after the retries."""
        if solved.excluded:
            return {**solved.base, "status": solved.excluded, "excluded_reason": solved.excluded,
                    "error": solved.error, **_issue_tasks(issue, None)}
        sh, ledger = env.shared, env.ledger
        assert sh is not None, "CodeAssistBench.grade needs the shared state of CodeAssistBench.setup"
        docker_result = None
        status = "ok"
        with ledger.tags(role="judge"):
            if solved.docker_client is not None:
                docker_result = docker_validate(solved.docker_client, issue, solved.repo_root, solved.answer)
            try:
                judgment = _judge(issue, solved.answer, docker_result, sh.judge_llm, sh.settings)
                judgment_payload = judgment.to_dict()
            except JudgeError as exc:
                status = "judge_error"
                judgment = None
                judgment_payload = {"error": str(exc), "raw_outputs": exc.raw_outputs}
        events = env.sample_events()
        env.recorder.document(JUDGMENT, judgment_payload)
        conversation = solved.conversation
        result = {
            **solved.base,
            "status": status,
            "verdict": judgment.verdict if judgment else None,
            "technical_correctness": judgment.technical_correctness if judgment else None,
            "verbosity": judgment.verbosity if judgment else None,
            "alignment": [judgment.alignment_met, judgment.alignment_total] if judgment else None,
            "judge_attempts": judgment.attempts if judgment else len(judgment_payload.get("raw_outputs") or []),
            "turns": solved.turns,
            "final_user_status": solved.final_user_status,
            "tokens": issue_tokens(events),
            "tokens_by_role": tokens_by_role(events),
            "llm_calls": len(events),
            "tool_calls": len(solved.tool_rows),
            "tool_refusals": sum(1 for r in solved.tool_rows if r["refused"]),
            "forced_finals": sum(1 for c in conversation if c.get("forced_final")),
            "repeated_tool_calls": sum(int(c.get("repeated_tool_calls") or 0) for c in conversation),
            "window_trims": sum(int(c.get("window_trims") or 0) for c in conversation),
            "final_tool_call_answers": sum(1 for c in conversation if c.get("final_is_tool_call")),
            "user_retries": sum(int(c.get("retries") or 0) for c in conversation if c["role"] == USER),
            "turn_stats": solved.turn_stats,
            "docker": docker_result,
        }
        result.update(_issue_tasks(issue, result["verdict"]))
        if status == "judge_error":
            result["error"] = judgment_payload["error"]
            result["errored"] = True  # counted as incorrect
        return result

    @staticmethod
    def _base(issue: CabIssue) -> dict[str, Any]:
        return {"task_id": issue.task_id, "repo": issue.repo, "commit_id": issue.commit_id, "language": issue.language}

    def error_result(self, issue: CabIssue) -> dict[str, Any]:
        return {**self._base(issue), **_issue_tasks(issue, None)}

    def score(self, run_path: Path, sample_ids: Any) -> dict[str, Any]:
        from benchmarks.records import RunDir

        cfg = self.cfg
        results = RunDir(run_path).selection_results(sample_ids)  # a selected issue without a result counts as missing
        backbones = {option: str(cfg[option].name) for option in (ROLE_OPTIONS["user"], ROLE_OPTIONS["judge"])}
        return {**backbones, "issues_selected": len(sample_ids), "data": str(self._data_path(cfg)), **summarize(results),
                "init_failed_ids": sorted(r["task_id"] for r in results if r.get("status") == "init_failed"),
                "docker_unavailable_ids": sorted(r["task_id"] for r in results
                                                 if r.get("status") == "docker_unavailable")}
