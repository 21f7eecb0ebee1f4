"""Build every table and figure the records allow, plus an index ``report.md`` quoting the manifests.

    from benchmarks.analysis.report import build_report
    report = build_report(["results/locoeval", "results/cab"], "reports/latest")

Output layout: ``<out>/report.md`` and one folder per benchmark (``<out>/<benchmark>/table1.md``
...). ``report.md`` opens with a validity block per (benchmark, backbone, method): samples and
tasks scored, errored, excluded and why, unfinished / missing, the run ids and the models (backbone,
user, judge) used. An artefact whose inputs do not exist is listed under "Not produced" with the
reason; an artefact whose builder fails is listed with the error and makes ``report.failed`` true.

Runs whose backbone, user or judge was scripted (``scripted/...`` test hooks) are refused
(:class:`ScriptedRunsError`) unless ``allow_scripted=True``; then every table and figure is
stamped "scripted replies — not a model's result". Shards of one run directory are merged by the
loader, so a sharded run gives the same tables as an unsharded run of the same samples.
"""

from __future__ import annotations

import logging
import sys
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from benchmarks.analysis import labels
from benchmarks.analysis.records import RunSet, load_runs
from benchmarks.analysis.run_records import CAB, LOCOEVAL, SCRIPTED_MARK
from benchmarks.records import RecordError

log = logging.getLogger(__name__)


@dataclass
class Artefact:
    benchmark: str
    name: str
    description: str
    paths: list[Path]
    markdown: str | None = None  # a table's Markdown, embedded in report.md


class ScriptedRunsError(RecordError):
    """The records include runs whose replies were scripted and the caller did not allow them."""


@dataclass
class Report:
    out_dir: Path
    runs: RunSet
    mark: str | None = None  # stamped on every table and figure (scripted replies)
    artefacts: list[Artefact] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def files(self) -> list[Path]:
        return [p for a in self.artefacts for p in a.paths]


class Skip(Exception):
    """Raised by a step when its inputs are absent (not an error)."""


def _step(report: Report, benchmark: str, name: str, fn: Callable[[], Artefact | None]) -> None:
    try:
        art = fn()
    except Skip as why:
        report.skipped.append(f"{benchmark}/{name}: {why}")
        return
    except Exception as exc:  # noqa: BLE001 - one broken artefact must not hide the others
        report.failures.append(f"{benchmark}/{name}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        log.error("report: %s/%s failed: %s", benchmark, name, exc)
        return
    if art is not None:
        report.artefacts.append(art)


def _write_csv(frame: Any, path: Path, mark: str | None = None) -> Path:
    from benchmarks.records import atomic_write_text

    if mark:
        frame = frame.assign(mark=mark)
    return atomic_write_text(path, frame.to_csv(index=False))


def _table_artefact(benchmark: str, table: Any, out: Path, description: str, mark: str | None = None) -> Artefact:
    if mark:
        table.mark(mark)
    return Artefact(benchmark, table.name, description, table.write(out), table.to_markdown())


def _locoeval(report: Report, runs: RunSet, benchmark: str, out: Path, *, n_resamples: int, seed: int,
              embed: Callable | None, tsne: bool) -> None:
    from benchmarks.analysis import coverage as cov
    from benchmarks.analysis import figures, tables

    mark = report.mark
    tasks = runs.tasks_frame(benchmark)
    samples = runs.samples_frame(benchmark, family=LOCOEVAL)
    methods_present = set(samples["method"]) if not samples.empty else set()

    def need_tasks() -> None:
        if tasks.empty:
            raise Skip("no scored LoCoEval samples")

    def t1() -> Artefact:
        need_tasks()
        return _table_artefact(benchmark, tables.table1(tasks, samples, n_resamples=n_resamples, seed=seed, names=runs.labels), out,
                               "Pass@1 (errored counted) and CR, Δ vs the strongest baseline, paired bootstrap", mark)

    def t3() -> Artefact:
        if samples.empty or not (samples["status"] == "ok").any():
            raise Skip("no ok LoCoEval samples")
        return _table_artefact(benchmark, tables.table3(samples, names=runs.labels), out, "end-to-end tokens and cost per conversation",
                               mark)

    def t4() -> Artefact:
        if samples.empty or not ((samples["method"] == labels.PROPOSED) & (samples["status"] == "ok")).any():
            raise Skip(f"no ok samples of method '{labels.PROPOSED}'")
        return _table_artefact(benchmark, tables.table4(samples, names=runs.labels), out, "ReConMem's token breakdown by stage", mark)

    def t6() -> Artefact:
        if not methods_present & set(labels.ABLATIONS):
            raise Skip("no ablation runs (reconmem_wo_*)")
        return _table_artefact(benchmark, tables.table6(tasks, samples, budgets=runs.budgets(benchmark),
                                                        n_resamples=n_resamples, seed=seed, names=runs.labels), out,
                               "ablations with their CR gap, budgets and paired tests", mark)

    def f5() -> Artefact:
        ledger = runs.ledger_frame(benchmark, methods=[labels.PROPOSED, "full"])
        data = figures.per_turn_tokens(ledger)
        if data.empty:
            raise Skip("no ledger events of reconmem / full")
        paths = [_write_csv(data, out / "fig5_per_turn_tokens.csv", mark), *figures.figure5(data, out, mark=mark, names=runs.labels)]
        return Artefact(benchmark, "fig5", "per-turn tokens of ReConMem and Full", paths)

    def f6() -> Artefact:
        frame = cov.coverage_frame(runs.merged_samples(benchmark))
        if frame.empty:
            raise Skip("no coverage.json records (run `make coverage RUNS=...` first)")
        summary = cov.coverage_summary(frame, n_resamples=n_resamples, seed=seed)
        if summary.empty:
            raise Skip("no task-run with a complete coverage judgment")
        table = cov.coverage_table(summary)
        if mark:
            table.mark(mark)
        paths = [*table.write(out), _write_csv(frame, out / "coverage_task_runs.csv", mark),
                 *figures.figure6(summary, out, mark=mark)]
        return Artefact(benchmark, "fig6", "GT-item coverage and complementarity with cluster-bootstrap CIs", paths,
                        table.to_markdown())

    def f7() -> Artefact:
        if not tsne:
            raise Skip("disabled (--no-tsne)")
        from benchmarks.analysis import tsne as tsne_mod

        items = tsne_mod.retrieved_items(runs.merged_samples(benchmark))
        if items.empty:
            raise Skip("no recorded task contexts of reconmem with original/dual-query items")
        points = tsne_mod.tsne_points(items, embed=embed, seed=seed)
        if points.empty:
            raise Skip("fewer than 3 retrieved items per panel")
        paths = [_write_csv(points.drop(columns=["text"]), out / "fig7_tsne.csv", mark),
                 *tsne_mod.figure7(points, out, mark=mark)]
        return Artefact(benchmark, "fig7", "t-SNE of retrieved semantic / structural contexts by query branch", paths)

    def f8() -> Artefact:
        need_tasks()
        by_k = figures.pass_by_group(tasks, "k")
        by_l = figures.pass_by_group(tasks, "l")
        paths = [_write_csv(by_k, out / "fig8_by_k.csv", mark), _write_csv(by_l, out / "fig8_by_l.csv", mark),
                 *figures.figure8(by_k, by_l, out, mark=mark, names=runs.labels)]
        return Artefact(benchmark, "fig8", "Pass@1 by tasks per conversation k and length interval l", paths)

    extensions = labels.extension_methods(methods_present)

    def beyond() -> list[str]:
        """The paper's references present, then the methods beyond the paper (their config labels)."""
        refs = [m for m in ("full", labels.PROPOSED) if m in methods_present]
        return [*refs[:1], *extensions, *refs[1:]] if refs else list(extensions)

    def t1x() -> Artefact | None:
        if not extensions or tasks.empty:
            return None  # nothing beyond the paper: no artefact, no skip line
        table = tables.table1(tasks, samples, methods=beyond(), n_resamples=n_resamples, seed=seed, names=runs.labels)
        table.name, table.title = "table1x", "Table 1x. Beyond the paper: Pass@1 (%) and CR on LoCoEval"
        return _table_artefact(benchmark, table, out, "Pass@1 and CR of the methods beyond the paper, beside Full "
                                                      "History and ReConMem", mark)

    def t3x() -> Artefact | None:
        if not extensions or samples.empty or not (samples["status"] == "ok").any():
            return None
        table = tables.table3(samples, methods=beyond(), names=runs.labels)
        table.name, table.title = "table3x", "Table 3x. Beyond the paper: average end-to-end LLM tokens per conversation"
        return _table_artefact(benchmark, table, out, "end-to-end tokens and cost of the methods beyond the paper", mark)

    def bk() -> Artefact:
        from benchmarks.analysis import brackets

        if not brackets.present(tasks):
            raise Skip("no bracket runs (no_memory, oracle_context)")
        table = brackets.brackets_table(tasks, n_resamples=n_resamples, seed=seed, names=runs.labels,
                                        outside=runs.outside_selection_frame(benchmark))
        return _table_artefact(benchmark, table, out, "floor, ceiling and memory headroom, with each method's recovered share",
                               mark)

    for name, fn in (("table1", t1), ("brackets", bk), ("table3", t3), ("table4", t4), ("table6", t6), ("table1x", t1x),
                     ("table3x", t3x), ("fig5", f5), ("fig6", f6), ("fig7", f7), ("fig8", f8)):
        _step(report, benchmark, name, fn)


def _cab(report: Report, runs: RunSet, benchmark: str, out: Path) -> None:
    from benchmarks.analysis import cab_tables

    records = cab_tables.cab_records(runs, benchmark)

    def summary() -> Any:
        if not records:
            raise Skip("no CAB records")
        return cab_tables.cab_summary(records)

    def t2() -> Artefact:
        return _table_artefact(benchmark, cab_tables.table2(summary(), cab_tables.cab_paired(records), names=runs.labels), out,
                               "CAB correctness, verbosity, turns, paired McNemar tests", report.mark)

    def t5() -> Artefact:
        return _table_artefact(benchmark, cab_tables.table5(summary(), names=runs.labels), out,
                               "CAB tokens and cost per issue and per turn", report.mark)

    _step(report, benchmark, "table2", t2)
    _step(report, benchmark, "table5", t5)


def build_report(paths: str | Path | Sequence[str | Path], out_dir: str | Path, *, n_resamples: int = 2000,
                 seed: int = 0, embed: Callable | None = None, tsne: bool = True, command: str | None = None,
                 allow_scripted: bool = False) -> Report:
    """Load every run under ``paths`` and write all possible artefacts and ``report.md`` to ``out_dir``.

    Raises :class:`ScriptedRunsError` when a run's backbone, user or judge was scripted and
    ``allow_scripted`` is false (nothing is written)."""
    out_dir = Path(out_dir)
    runs = load_runs(paths)
    scripted = runs.scripted_runs
    if scripted and not allow_scripted:
        first = scripted[0]
        who = ", ".join(f"{k}={v}" for k, v in first.models.items() if str(v or "").startswith("scripted/")) or "scripted"
        raise ScriptedRunsError(f"{first.path}: {len(scripted)} run(s) used scripted replies ({who}); these are not a "
                                "model's result — pass --allow-scripted to build a report marked as such")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = Report(out_dir=out_dir, runs=runs, mark=SCRIPTED_MARK if scripted else None)
    if not runs.runs:
        report.skipped.append(f"no run directories found under {paths}")
    for b in runs.benchmarks(LOCOEVAL):
        _locoeval(report, runs, b, out_dir / b, n_resamples=n_resamples, seed=seed, embed=embed, tsne=tsne)
    for b in runs.benchmarks(CAB):
        _cab(report, runs, b, out_dir / b)
    write_index(report, paths, command=command)
    return report


# ---------------------------------------------------------------------------- report.md

def _md(s: Any) -> str:
    return str(s if s is not None else "—").replace("|", "\\|").replace("\n", " ")


def validity_lines(runs: RunSet) -> list[str]:
    """The report's opening block: per (benchmark, backbone, method) what was scored."""
    from benchmarks.analysis.render import fmt_usd

    lines = ["## Validity", "",
             "What every number below was computed over (docs/RECORDS.md \"What is counted\"): every method over the "
             "samples its run manifest selected; scored = ok + errored + missing samples; an errored sample (still "
             "failing after the run's retries) counts its tasks as failed (LoCoEval) or the issue as incorrect (CAB); "
             "missing = selected but no finished record (no result.json, or interrupted): counted as failed the same "
             "way, and the tables mark the method incomplete (‡); an excluded sample is out for every method alike; "
             "unfinished = sample folders without result.json, interrupted and pending records (resume the run); outside "
             "selection = records of samples the run's manifest did not select (left in the run directory by an earlier "
             "run.ids / run.limit): left out of every number; repeats = "
             "run.repeat runs (counts are over all repeats). Tables 1 and 6 compare the methods of a row over the "
             "samples every one of them was scored on (the intersection of their runs' selections; their notes name "
             "the runs cut to it); CR is against Full History under the method's own code retriever.", ""]
    cost_by_key: dict[tuple[str, str, str], float] = {}
    for m in runs.manifests():
        k = (m["benchmark"], m["backbone"], m["method"])
        cost_by_key[k] = cost_by_key.get(k, 0.0) + float(m.get("cost_usd") or 0.0)
    for bench in runs.benchmarks():
        v = runs.validity(bench)
        lines += [f"### {bench}", "",
                  "| backbone (model) | method | user model | judge model | run ids | selected | scored samples | "
                  "tasks | errored | missing (failed) | excluded (why) | unfinished | outside selection (left out) | "
                  "repeats | cost (USD) |",
                  "|---|---|---|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|---:|"]
        for _, r in v.iterrows():
            excl = str(int(r["excluded"])) + (f" ({r['excluded_why']})" if r["excluded_why"] else "")
            outside = str(int(r["outside_selection"])) + (f" ({r['outside_ids']})" if r["outside_ids"] else "")
            row = [runs.labels.backbone_label(r["backbone"]) + (" **[scripted]**" if r["scripted"] else ""),
                   runs.labels.method_label(r["method"]), r["user_model"], r["judge_model"], r["run_ids"],
                   "—" if r["selected"] is None or r["selected"] != r["selected"] else int(r["selected"]),
                   int(r["scored"]), "—" if r["tasks"] is None or r["tasks"] != r["tasks"] else int(r["tasks"]),
                   int(r["errored"]), int(r["missing"]), excl, int(r["unfinished"]), outside, int(r["repeats"]),
                   fmt_usd(cost_by_key.get((bench, r["backbone"], r["method"]), 0.0))]
            lines.append("| " + " | ".join(_md(x) for x in row) + " |")
        lines.append("")
    models: dict[str, set[str]] = {"backbone": set(), "user": set(), "judge": set()}
    for r in runs.runs:
        for role in models:
            if r.models.get(role):
                models[role].add(str(r.models[role]))
    lines += ["Models called (from the run manifests): " + "; ".join(
        f"{role}: {', '.join(f'`{m}`' for m in sorted(ms)) or '—'}" for role, ms in models.items()), ""]
    no_cost = sum(int(s.token_summary.get("n_events_without_cost", 0)) for r in runs.runs for s in r.samples)
    if no_cost:
        lines += [f"Cost: {no_cost} ledger events carry no `cost_usd` and count as $0 (records written before "
                  "pricing, or a model the price map lacks).", ""]
    return lines


def write_index(report: Report, paths: Any, *, command: str | None = None) -> Path:
    from benchmarks.records import atomic_write_text

    out = report.out_dir
    lines = ["# ReConMem harness report", "",
             f"Generated {datetime.now(timezone.utc).isoformat(timespec='seconds')} by "
             f"`{command or ' '.join(sys.argv)}` from {', '.join(f'`{p}`' for p in ([paths] if isinstance(paths, (str, Path)) else paths))}.",
             ""]
    if report.mark:
        lines += [f"> **{report.mark.upper()}**: {len(report.runs.scripted_runs)} run(s) used scripted replies "
                  "(built with --allow-scripted). Every table and figure is marked.", ""]
    lines += validity_lines(report.runs)
    manifests = report.runs.manifests()
    lines += ["## Runs", "",
              "| benchmark | backbone | model | user model | judge model | method | run_id | shards | samples | "
              "cost (USD) | git_rev | dirty | started | python | command |",
              "|---|---|---|---|---|---|---|---|---|---:|---|---|---|---|---|"]
    for m in manifests:
        counts = ", ".join(f"{k}: {v}" for k, v in sorted(m["status_counts"].items())) or "none"
        rev = (m.get("git_rev") or "—")[:12]
        lines.append("| " + " | ".join(_md(x) for x in (m["benchmark"], m["backbone"], m.get("model"),
                                                          m.get("user_model"), m.get("judge_model"), m["method"],
                                                          m["run_id"], m.get("n_shards"), counts,
                                                          f"{float(m.get('cost_usd') or 0):.4f}",
                                                          rev, m.get("git_dirty"), m.get("started"), m.get("python"),
                                                          m.get("command"))) + " |")
    packages: dict[str, set[str]] = {}
    checksums: dict[str, set[str]] = {}
    for m in manifests:
        for k, v in (m.get("packages") or {}).items():
            packages.setdefault(k, set()).add(str(v))
        for k, v in (m.get("data_checksums") or {}).items():
            checksums.setdefault(k, set()).add(str(v))
    if packages:
        lines += ["", "### Package versions (from the run manifests)", "", "| package | version(s) |", "|---|---|"]
        for k in sorted(packages):
            vs = sorted(packages[k])
            lines.append(f"| {_md(k)} | {_md(', '.join(vs))}{' **(differs across runs)**' if len(vs) > 1 else ''} |")
    if checksums:
        lines += ["", "### Data checksums (sha256)", "", "| data | checksum(s) |", "|---|---|"]
        for k in sorted(checksums):
            vs = sorted(checksums[k])
            lines.append(f"| {_md(k)} | {_md(', '.join(vs))}{' **(differs across runs)**' if len(vs) > 1 else ''} |")
    by_bench: dict[str, list[Artefact]] = {}
    for a in report.artefacts:
        by_bench.setdefault(a.benchmark, []).append(a)
    for bench, arts in by_bench.items():
        lines += ["", f"## {bench}", ""]
        for a in arts:
            rel = [p.relative_to(out).as_posix() for p in a.paths]
            lines += [f"#### {a.name}: {a.description}", "", "Files: " + ", ".join(f"[{r}]({r})" for r in rel), ""]
            if a.markdown:
                lines += [a.markdown.replace("### ", "##### ", 1), ""]
            lines += [f"![{a.name}]({r})" for r in rel if r.endswith(".png")]
            lines.append("")
    if report.skipped:
        lines += ["", "## Not produced", ""] + [f"- {s}" for s in report.skipped]
    if report.failures:
        lines += ["", "## Failed", ""]
        for f in report.failures:
            head, _, tb = f.partition("\n")
            lines += [f"- {head}", "", "```", tb.strip(), "```"]
    if report.runs.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in report.runs.warnings]
    path = atomic_write_text(out / "report.md", "\n".join(lines).rstrip() + "\n")
    report.artefacts.append(Artefact("", "index", "report index", [path]))
    return path
