"""What the analysis counts (docs/RECORDS.md "What is counted"): the selection of each run, one
record per sample across run ids and shards, missing samples, exclusions and the tasks a scored
sample counts - :class:`CountedRuns`, the base of :class:`benchmarks.analysis.records.RunSet`.

Every method is scored over the sample ids
its manifest selected (``selected``); a record of a sample outside that selection (left in the run
directory by an earlier ``run.ids`` / ``run.limit``) is left out of every count and listed by
:meth:`CountedRuns.outside_selection`. A sample whose record says ``error`` (after the run's
retries) is *scored* — its tasks count as failed (LoCoEval) or the issue as incorrect (CAB) — and
is counted as ``errored``. A selected sample without a finished record (no ``result.json``, or
``interrupted``) is *missing*: scored the same way (its tasks failed) and counted as ``missing``;
the tables mark such a method incomplete. A sample with an excluding status (``init_failed``,
``docker_unavailable``, ``excluded`` or an ``excluded_reason``) in *any* run of a benchmark is
excluded for every method and backbone of that benchmark. Manifests written before ``selected``:
the selection is the run's records, its folders without ``result.json`` and, when ``n_selected``
says records are missing, the samples another method of the backbone has.

Repeats (``run.repeat=K``): each repeat is its own run (manifest ``repeat.index``); samples are
merged per repeat, and every frame has a ``repeat`` column (1 for an unrepeated run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmarks import records as rec
from benchmarks.analysis.run_records import LOCOEVAL, RunRecord, SampleRecord
from benchmarks.records import RecordError


def _placeholder_tasks(n: int) -> list[dict[str, Any]]:
    return [{"req_id": f"#{i + 1}", "namespace": None, "outcome": "not_run", "passed": False} for i in range(n)]


@dataclass
class CountedRuns:
    """Loaded runs and what is counted of them (selection, merging, missing samples, exclusions)."""

    runs: list[RunRecord]
    warnings: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ selection
    def benchmarks(self, family: str | None = None) -> list[str]:
        return sorted({r.benchmark for r in self.runs if family is None or r.family == family})

    def select(self, benchmark: str | None = None, *, family: str | None = None,
               backbone: str | None = None, method: str | None = None) -> list[RunRecord]:
        return [r for r in self.runs
                if (benchmark is None or r.benchmark == benchmark) and (family is None or r.family == family)
                and (backbone is None or r.backbone == backbone) and (method is None or r.method == method)]

    @property
    def scripted_runs(self) -> list[RunRecord]:
        return [r for r in self.runs if r.scripted]

    def outside_selection(self, benchmark: str | None = None, **kw: Any) -> list[SampleRecord]:
        """The records left out because their run's manifest did not select their sample (none for a
        manifest written before ``selected``), in run order."""
        return [s for run in self.select(benchmark, **kw) for s in run.outside_selection]

    def merged_samples(self, benchmark: str | None = None, **kw: Any) -> list[SampleRecord]:
        """One record per (benchmark, backbone, method, repeat, sample id) across run ids and shards.

        Several run ids of the same setting and repeat are merged sample by sample (an ``ok`` record
        wins over others, then the newest run by manifest ``started``); duplicates are noted in
        ``warnings``. Records only: selected samples without a record are :meth:`missing_samples`.
        """
        chosen: dict[tuple[str, str, str, int, str], SampleRecord] = {}
        for run in sorted(self.select(benchmark, **kw), key=lambda r: str(r.manifest.get("started") or "")):
            for s in run.samples:
                key = (run.benchmark, run.backbone, run.method, run.repeat, s.sample_id)
                prev = chosen.get(key)
                if prev is None:
                    chosen[key] = s
                    continue
                msg = (f"sample {s.sample_id} of {run.benchmark}/{run.backbone}/{run.method} appears in run ids "
                       f"{prev.run.run_id} and {run.run_id}; using the ")
                if prev.ok and not s.ok:
                    msg += f"ok record of {prev.run.run_id}"
                else:
                    chosen[key] = s
                    msg += f"record of {run.run_id}"
                if msg not in self.warnings:
                    self.warnings.append(msg)
        return list(chosen.values())

    def missing_samples(self, benchmark: str | None = None, **kw: Any) -> list[SampleRecord]:
        """A ``missing`` record (every task failed, :func:`benchmarks.records.missing_result`) for each
        sample a run's manifest selected that no run of the same setting and repeat recorded.

        The entry (subset, tasks) is the manifest's; a manifest written before ``selected`` names no
        ids, so its selection is the run's folders without result.json plus, when ``n_selected``
        exceeds the records, the samples another method of the backbone has (their fields borrowed
        from such a record)."""
        merged = self.merged_samples(benchmark, **kw)
        have: dict[tuple[str, str, str, int], set[str]] = {}
        for s in merged:
            have.setdefault((s.run.benchmark, s.run.backbone, s.run.method, s.run.repeat), set()).add(s.sample_id)
        universe: dict[tuple[str, str, int], dict[str, SampleRecord]] = {}
        for s in merged:
            if s.ok or s.errored:
                universe.setdefault((s.run.benchmark, s.run.backbone, s.run.repeat), {}).setdefault(s.sample_id, s)
        out: dict[tuple[str, str, str, int, str], SampleRecord] = {}
        for run in sorted(self.select(benchmark, **kw), key=lambda r: str(r.manifest.get("started") or "")):
            key = (run.benchmark, run.backbone, run.method, run.repeat)
            recorded = have.get(key, set())
            entries = run.selection
            if entries is None:
                entries = self._legacy_selection(run, recorded, universe.get((run.benchmark, run.backbone, run.repeat), {}))
            for sid, entry in entries.items():
                if sid in recorded:
                    continue
                result = dict(rec.missing_result({**entry, "sample_id": sid}))
                out[(*key, sid)] = SampleRecord(run=run, dir=run.dir.sample(sid), result=result)
        return list(out.values())

    def _legacy_selection(self, run: RunRecord, recorded: set[str], others: dict[str, SampleRecord]
                          ) -> dict[str, dict[str, Any]]:
        """The selection of a run whose manifest has no ``selected``: its records, its folders without
        result.json and - when ``n_selected`` exceeds what it recorded - the other methods' samples."""
        keep = ("subset", "project", "repo_cluster", "n_turns", "n_tasks", "task_id", "repo")

        def entry(sid: str) -> dict[str, Any]:
            other = others.get(sid)
            if other is None:
                return {"sample_id": sid}
            r = other.result
            tasks = r.get("tasks") if isinstance(r.get("tasks"), list) else []
            return {"sample_id": sid, **{k: r[k] for k in keep if r.get(k) is not None},
                    "tasks": [{"req_id": t.get("req_id"), "namespace": t.get("namespace")} for t in tasks]}

        n_selected = run.manifest.get("n_selected")
        n_records = len({s.sample_id for s in run.samples})
        if n_selected is not None and n_records >= int(n_selected):
            return {}
        ids = dict.fromkeys(run.unfinished)
        if n_selected is None or int(n_selected) > n_records + len(ids):
            ids.update(dict.fromkeys(sorted(others)))
        return {sid: entry(sid) for sid in ids if sid not in recorded}

    def selected_samples(self, benchmark: str | None = None, **kw: Any) -> list[SampleRecord]:
        """:meth:`merged_samples` plus :meth:`missing_samples`: one record per selected sample."""
        return [*self.merged_samples(benchmark, **kw), *self.missing_samples(benchmark, **kw)]

    # ------------------------------------------------------------------ what is counted
    def excluded(self, benchmark: str) -> dict[str, str]:
        """Sample id -> reason, for samples excluded for every method and backbone of ``benchmark``
        (an excluding status in any of its runs, e.g. ``init_failed in full, mem0``)."""
        seen: dict[str, dict[str, list[str]]] = {}
        for s in self.merged_samples(benchmark):
            reason = s.excluded_reason
            if reason:
                seen.setdefault(s.sample_id, {}).setdefault(reason, []).append(
                    f"{s.run.backbone}/{s.run.method}")
        return {sid: "; ".join(f"{reason} in {', '.join(sorted(where))}" for reason, where in sorted(by.items()))
                for sid, by in sorted(seen.items())}

    def samples_with_exclusions(self, benchmark: str | None = None, *, family: str | None = None,
                                ) -> list[tuple[SampleRecord, dict[str, str]]]:
        """Each merged sample with its benchmark's exclusions (sample id -> why), computed once per benchmark."""
        excluded: dict[str, dict[str, str]] = {}
        out = []
        for s in self.selected_samples(benchmark, family=family):
            if s.run.benchmark not in excluded:
                excluded[s.run.benchmark] = self.excluded(s.run.benchmark)
            out.append((s, excluded[s.run.benchmark]))
        return out

    def scored_samples(self, benchmark: str | None = None, *, family: str | None = None) -> list[SampleRecord]:
        """Samples that enter the scores: ok, errored or missing, and not excluded for the benchmark."""
        out = []
        for s, ex in self.samples_with_exclusions(benchmark, family=family):
            if s.sample_id in ex or not s.scored:
                continue
            out.append(s)
        return out

    def _task_lists(self, benchmark: str | None) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """(benchmark, sample id) -> a recorded task list (to name the tasks of an errored sample
        that recorded none, as old runners wrote them)."""
        out: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for s in self.merged_samples(benchmark, family=LOCOEVAL):
            tasks = s.result.get("tasks")
            if isinstance(tasks, list) and tasks and all("req_id" in t for t in tasks):
                out.setdefault((s.run.benchmark, s.sample_id), tasks)
        return out

    def sample_tasks(self, s: SampleRecord, known: dict[tuple[str, str], list[dict[str, Any]]] | None = None
                     ) -> list[dict[str, Any]]:
        """The tasks a scored sample counts: its own for ``ok``; for an errored or missing one every
        task of the sample as failed (its recorded list, else another run's list of the same sample,
        else ``n_tasks`` placeholders ``#1..``)."""
        tasks = s.result.get("tasks")
        if s.ok:
            if not isinstance(tasks, list):
                raise RecordError(f"{s.dir.file(rec.RESULT)}: status ok but no 'tasks' list")
            return tasks
        if isinstance(tasks, list) and tasks:
            return [{**t, "passed": False, "outcome": t.get("outcome") or "not_run"} for t in tasks]
        known = known if known is not None else self._task_lists(s.run.benchmark)
        borrowed = known.get((s.run.benchmark, s.sample_id))
        if borrowed:
            return [{"req_id": t["req_id"], "namespace": t.get("namespace"), "outcome": "not_run", "passed": False}
                    for t in borrowed]
        n = s.result.get("n_tasks")
        if n is None:
            msg = f"{s.dir.file(rec.RESULT)}: {s.status} sample records neither 'tasks' nor 'n_tasks'; it counts 0 tasks"
            if msg not in self.warnings:
                self.warnings.append(msg)
            return []
        return _placeholder_tasks(int(n))
