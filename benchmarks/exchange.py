"""The exchange seen from run directories: what waits, per run and sample, and importing answers.

The folder format and the transport are :mod:`reconmem.platform.llm.exchange`; this module finds the
runs under a path (:class:`benchmarks.records.RunDir`), joins their pending requests with the sample
records (status ``pending``) and formats the report of ``python -m scripts.exchange status|import``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.records import RunDir, Status
from benchmarks.records.files import RecordError
from reconmem.platform.llm.exchange import ANSWERS, ImportReport, exchange_dir, import_answers, pending_requests


@dataclass
class RunWaiting:
    """One run's exchange state: its pending requests and its sample statuses."""

    run: RunDir
    requests: list[dict[str, Any]] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)

    @property
    def folder(self) -> Path:
        return exchange_dir(self.run.path)

    def per_sample(self) -> dict[str, list[dict[str, Any]]]:
        """Sample id (``-`` outside a sample) -> its waiting requests, in position order."""
        out: dict[str, list[dict[str, Any]]] = {}
        for request in self.requests:
            out.setdefault(str(request.get("sample") or "-"), []).append(request)
        return out


def exchange_runs(path: str | Path) -> list[RunDir]:
    """The run directories at or below ``path`` that have an exchange folder; RecordError when none."""
    runs = [r for r in RunDir.discover(path) if exchange_dir(r.path).is_dir()]
    if not runs and exchange_dir(path).is_dir():
        runs = [RunDir(Path(path))]
    if not runs:
        raise RecordError(f"{path}: no run with an exchange folder (run with backbone=exchange, or a backbone with "
                          f"an exchange node)")
    return runs


def waiting(path: str | Path) -> list[RunWaiting]:
    """Every exchange run under ``path`` with its pending requests and sample statuses."""
    out = []
    for run in exchange_runs(path):
        state = RunWaiting(run=run, requests=pending_requests(run.path))
        for sample in run.sample_dirs():
            result = sample.result()
            state.statuses[str(result.get("status")) if result else "unfinished"] += 1
        out.append(state)
    return out


def status_lines(states: list[RunWaiting], *, paths: bool = False) -> list[str]:
    """The report of ``scripts.exchange status``: per run the counts, per sample its waiting requests
    (``paths``: one markdown path per request instead)."""
    lines: list[str] = []
    total = 0
    for state in states:
        total += len(state.requests)
        if paths:
            lines += [r["markdown"] for r in state.requests]
            continue
        counts = ", ".join(f"{n} {s}" for s, n in sorted(state.statuses.items())) or "no sample records yet"
        lines.append(f"{state.run.path}: {len(state.requests)} request(s) waiting; samples: {counts}")
        for sample, requests in sorted(state.per_sample().items()):
            purposes = Counter(str(r.get("purpose")) for r in requests)
            lines.append(f"  {sample}: {len(requests)} waiting ({', '.join(f'{n} {p}' for p, n in sorted(purposes.items()))})")
            for r in requests:
                lines.append(f"    {r['custom_id']}  position {r.get('position') or '-'}  {r.get('purpose')}  {r['markdown']}")
        if state.requests:
            lines.append(f"  answer: {state.folder / ANSWERS}/<id>.md, or an OpenAI Batch output JSONL; "
                         f"all requests: {state.folder / 'requests.jsonl'}")
    if not paths:
        lines.append(f"{total} request(s) waiting in {len(states)} run(s)" + (
            "; then: python -m scripts.exchange import RUN [FILE|DIR], and re-run the same command" if total else
            "; re-run the same command to finish any pending sample" if any(
                state.statuses.get(Status.PENDING.value) for state in states) else ""))
    return lines


def import_into(path: str | Path, source: str | Path | None = None) -> list[tuple[RunDir, ImportReport]]:
    """Import answers into every exchange run under ``path`` (each from its own ``answers/``), or ``source``
    (a Batch output JSONL, a directory of ``<id>.md`` or one file) into the one run at ``path``."""
    runs = exchange_runs(path)
    if source is not None and len(runs) != 1:
        raise RecordError(f"{path}: {len(runs)} exchange runs below it; give one run directory with {source}")
    return [(run, import_answers(run.path, source)) for run in runs]


def import_lines(reports: list[tuple[RunDir, ImportReport]]) -> list[str]:
    """One line per problem, then one summary line per run."""
    lines: list[str] = []
    for run, report in reports:
        lines += [f"error: {e}" for e in report.errors]
        lines.append(f"{run.path}: {len(report.imported)} answer(s) imported, {len(report.unchanged)} already there, "
                     f"{len(report.errors)} rejected; {len(pending_requests(run.path))} request(s) still waiting")
    return lines
