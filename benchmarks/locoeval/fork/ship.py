"""The shipped fork data: validated screening rows -> ``benchmarks/locoeval/fork/set/``.

``python -m scripts.build_fork_set ship --screen <screen.jsonl>`` writes, for every task whose
latest row (by the current catalogue and derivation) is ``validated``:

- ``forks.jsonl``: one :class:`ForkRecord` per task (the format: ``set/FORMAT.md``): where the
  target is, the public body's sha256, the changes, the fork body, per test file the unified diff
  that makes the fork's test file and the sha256 of both sides, the hidden files, the screening's
  checks and versions, the snapshot's provider spec;
- ``deveval_tasks.jsonl``: the DevEval records of those tasks, verbatim;
- ``SOURCE.md``: where the data comes from, the counts, the projects' licences;
- ``sources.json``: the manifest entries of the set's projects (``pypi_sources.json`` format, git-route entries
  included): what ``benchmark.sources_manifest`` of ``locoeval_fork`` points at.

The fork's test files are not shipped: :func:`fork_test_text` rebuilds them by applying the diff
to the snapshot's file (its sha256 checked before and after). :func:`apply_diffs` applies the
change blocks of several diffs of one file at once (the test files of a sample whose targets share
a test file), refusing blocks that overlap.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.locoeval.fork.diffs import (Block, ForkDataError, apply_diff, apply_diffs, diff_blocks,  # noqa: F401
                                             snapshot_text)

SET_DIR = Path(__file__).resolve().parent / "set"
FORKS_FILE = "forks.jsonl"
TASKS_FILE = "deveval_tasks.jsonl"
SOURCES_FILE = "sources.json"      # the manifest entries (pypi_sources.json format) of the set's projects
SOURCE_FILE = "SOURCE.md"
DEVEVAL_ORIGIN = ("DevEval's `data.jsonl` (GitHub `seketeam/DevEval`, `data.tar.gz` at commit "
                  "c1653455e0a18480a29aa07ba51636070f113316)")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------ records
@dataclass(frozen=True)
class TestFileDiff:
    """How one of the fork's test files is made from the snapshot's file."""

    path: str
    diff: str
    public_sha256: str
    fork_sha256: str


@dataclass(frozen=True)
class ForkRecord:
    """One shipped fork task (a ``forks.jsonl`` line; ``set/FORMAT.md``)."""

    namespace: str
    test_ids: tuple[str, ...]                  # the judging tests: the task's DevEval node ids, then validate.judging_ids' others
    project_path: str                          # the snapshot: DevEval project, version, provider spec
    version: str
    repo: dict[str, Any]
    file: str                                  # the target function in the snapshot
    signature_line: int
    body_start: int
    body_end: int
    indent: int
    public_body_sha256: str
    changes: tuple[dict[str, Any], ...]
    fork_body: str
    tests: dict[str, TestFileDiff]
    hidden_files: tuple[str, ...]
    checks: dict[str, Any] = field(default_factory=dict)
    rewrites: tuple[dict[str, Any], ...] = ()
    catalogue_version: int | None = None
    derive_version: int | None = None

    def record(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out.update(test_ids=list(self.test_ids), changes=list(self.changes), hidden_files=list(self.hidden_files),
                   rewrites=list(self.rewrites),
                   tests={p: {"diff": t.diff, "public_sha256": t.public_sha256, "fork_sha256": t.fork_sha256}
                          for p, t in sorted(self.tests.items())})
        return out

    @classmethod
    def of(cls, obj: dict[str, Any], where: str = "forks") -> "ForkRecord":
        """A record from its JSON object; a missing or mistyped field is a one-line error naming it."""
        def need(key: str, kind: type | tuple[type, ...]) -> Any:
            if key not in obj:
                raise ForkDataError(f"{where}: missing field {key!r}")
            if not isinstance(obj[key], kind):
                raise ForkDataError(f"{where}: field {key!r}: expected {kind}, got {type(obj[key]).__name__}")
            return obj[key]

        tests = {}
        for path, t in need("tests", dict).items():
            if not isinstance(t, dict) or not all(isinstance(t.get(k), str) for k in ("diff", "public_sha256", "fork_sha256")):
                raise ForkDataError(f"{where}: field 'tests.{path}': needs diff, public_sha256, fork_sha256")
            tests[path] = TestFileDiff(path, t["diff"], t["public_sha256"], t["fork_sha256"])
        changes = need("changes", list)
        if not changes:
            raise ForkDataError(f"{where}: field 'changes': empty")
        return cls(namespace=need("namespace", str), test_ids=tuple(need("test_ids", list)),
                   project_path=need("project_path", str), version=need("version", str), repo=need("repo", dict),
                   file=need("file", str), signature_line=need("signature_line", int),
                   body_start=need("body_start", int), body_end=need("body_end", int), indent=need("indent", int),
                   public_body_sha256=need("public_body_sha256", str), changes=tuple(changes), fork_body=need("fork_body", str), tests=tests,
                   hidden_files=tuple(need("hidden_files", list)), checks=dict(obj.get("checks") or {}),
                   rewrites=tuple(obj.get("rewrites") or ()), catalogue_version=obj.get("catalogue_version"),
                   derive_version=obj.get("derive_version"))

    def fork_tests(self, read: Callable[[str], str]) -> dict[str, str]:
        """The fork's test files: path -> text (``read``: snapshot-relative path -> the snapshot's text)."""
        return {p: fork_test_text(t, read(p), where=f"{self.namespace}: {p}") for p, t in sorted(self.tests.items())}


def fork_test_text(test: TestFileDiff, public: str, *, where: str = "") -> str:
    """The fork's test file from the snapshot's ``public`` text (both sides' sha256 checked)."""
    if sha256_text(public) != test.public_sha256:
        raise ForkDataError(f"{where}: the snapshot's file differs from the one the fork's tests were derived from")
    text = apply_diff(public, test.diff, where=where)
    if sha256_text(text) != test.fork_sha256:
        raise ForkDataError(f"{where}: the rebuilt test file does not hash to fork_sha256")
    return text


def read_forks(path: str | Path) -> dict[str, ForkRecord]:
    """``forks.jsonl`` by namespace (a bad line or a namespace twice: one-line error naming file:line)."""
    from reconmem.platform.jsonfiles import iter_json_records

    out: dict[str, ForkRecord] = {}
    for where, obj in iter_json_records(Path(path), error=ForkDataError):
        rec = ForkRecord.of(obj, where)
        if rec.namespace in out:
            raise ForkDataError(f"{where}: namespace {rec.namespace!r} twice")
        out[rec.namespace] = rec
    return out


# ------------------------------------------------------------------------------ shipping
def shipped_body(body: str) -> str:
    """A screening row's fork body as shipped: ``\n`` line ends, dedented (a CRLF module's body keeps
    its ``\r`` in the row, which stops the dedent and the judge's splice)."""
    from benchmarks.locoeval.verified.source import dedent_body

    return dedent_body(body.replace("\r\n", "\n"))


def public_body_sha256(body: str) -> str:
    """The screening's hash of a reference body (dedented)."""
    from benchmarks.locoeval.verified.source import dedent_body

    return hashlib.sha256(dedent_body(body).encode()).hexdigest()


def fork_record(row: dict[str, Any], root: Path, repo: dict[str, Any], indent: int,
                test_ids: tuple[str, ...]) -> ForkRecord:
    """The shipped record of one validated screening row over its snapshot ``root`` (``test_ids``:
    the task's DevEval node ids); every test diff is applied to the snapshot's file and must give
    back the same diff (round trip)."""
    from benchmarks.locoeval.fork.tests_derive import unified_diffs

    ns = row["namespace"]
    tests = {}
    for path, diff in sorted((row.get("derivation") or {}).get("diffs", {}).items()):
        public = snapshot_text(root, path)
        text = apply_diff(public, diff, where=f"{ns}: {path}")
        if unified_diffs({path: public}, {path: text}).get(path) != diff:
            raise ForkDataError(f"{ns}: {path}: the diff does not round-trip over the snapshot's file")
        tests[path] = TestFileDiff(path, diff, sha256_text(public), sha256_text(text))
    if not tests:
        raise ForkDataError(f"{ns}: the screening row has no test diff")
    der = row.get("derivation") or {}
    return ForkRecord(namespace=ns, test_ids=test_ids, project_path=row["project_path"], version=row["version"],
                      repo=repo, file=row["file"], signature_line=row["signature_line"], body_start=row["body_start"],
                      body_end=row["body_end"], indent=indent, public_body_sha256=row["public_body_sha256"],
                      changes=tuple(row["changes"]), fork_body=shipped_body(row["fork_body"]), tests=tests,
                      hidden_files=tuple(row["hidden_files"]), checks=dict(row.get("checks") or {}),
                      rewrites=tuple(der.get("rewrites") or ()), catalogue_version=row.get("catalogue_version"),
                      derive_version=row.get("derive_version"))


def row_version(row: dict[str, Any]) -> tuple[int, int]:
    """(catalogue version, derivation version) of a screening row (missing: 0)."""
    return int(row.get("catalogue_version") or 0), int(row.get("derive_version") or 0)


def latest_validated(screen: Path) -> tuple[list[dict[str, Any]], tuple[int, int] | None]:
    """The validated rows among the latest row per task of the newest (catalogue, derivation) version
    in the file, and that version (None: an empty file). A re-screen under a new version appends rows
    of that version; the older ones are then left out."""
    from benchmarks.locoeval.fork.screen import read_results

    rows = list(read_results(screen))
    if not rows:
        return [], None
    newest = max(row_version(r) for r in rows)
    latest = {r["namespace"]: r for r in rows if row_version(r) == newest}
    return [r for r in latest.values() if r.get("status") == "validated"], newest


@dataclass
class ShipResult:
    forks: list[ForkRecord]
    records: list[dict[str, Any]]
    skipped: dict[str, str]          # namespace -> why it is not shipped
    version: tuple[int, int] | None = None   # the screening rows' (catalogue, derivation) version


def build(screen: Path, *, deveval_data: Path | None = None, manifest: Any = None,
          snapshot: Callable[[Any], Path] | None = None) -> ShipResult:
    """The fork records of a screening file (``snapshot``: manifest entry -> its root, for tests)."""
    from benchmarks.deveval.providers import get_snapshot, reference_function
    from benchmarks.deveval.tasks import load_manifest, parse_task
    from benchmarks.locoeval.fork.screen import load_records
    from benchmarks.locoeval.fork.validate import judging_ids

    man = manifest if manifest is not None and not isinstance(manifest, (str, Path)) else load_manifest(manifest)
    records = load_records(deveval_data)
    forks: list[ForkRecord] = []
    used: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    rows, version = latest_validated(screen)
    for row in sorted(rows, key=lambda r: (r["project_path"], r["namespace"])):
        ns = row["namespace"]
        entry = man.project(row["project_path"])
        if entry is None or entry.version != row["version"]:
            skipped[ns] = f"no manifest entry {row['project_path']} {row['version']}"
            continue
        if ns not in records:
            skipped[ns] = "no DevEval record (pass --deveval-data)"
            continue
        root = Path(snapshot(entry) if snapshot else get_snapshot(entry.repo_spec(), manifest=man))
        task = parse_task(records[ns], ns)
        ref = reference_function(root, task, entry.task(ns))
        if (ref["body_start"], ref["body_end"]) != (row["body_start"], row["body_end"]) \
                or public_body_sha256(ref["body"]) != row["public_body_sha256"]:
            raise ForkDataError(f"{ns}: the snapshot's reference body differs from the screened one")
        forks.append(fork_record(row, root, {k: v for k, v in entry.repo_spec().items() if v is not None},
                                 ref["indent"], tuple(judging_ids(task.tests, row["derivation"]["rewrites"]))))
        used.append(records[ns])
    return ShipResult(forks, used, skipped, version)


def write_set(result: ShipResult, out_dir: Path, *, screen: Path, licences: dict[str, str | None],
              sources: list[dict[str, Any]] | None = None) -> None:
    """``forks.jsonl``, ``deveval_tasks.jsonl``, ``SOURCE.md`` and (``sources``: the manifest entries of
    the set's projects) ``sources.json`` in ``out_dir`` (atomic writes)."""
    from benchmarks.records import atomic_write_json, atomic_write_text, write_jsonl

    out_dir.mkdir(parents=True, exist_ok=True)
    if sources is not None:
        atomic_write_json(out_dir / SOURCES_FILE, sources)
    write_jsonl(out_dir / FORKS_FILE, [f.record() for f in result.forks])
    write_jsonl(out_dir / TASKS_FILE, result.records)
    projects: dict[str, list[ForkRecord]] = {}
    for f in result.forks:
        projects.setdefault(f.project_path, []).append(f)
    rows = "\n".join(f"| {p} {fs[0].version} | {len(fs)} | {licences.get(p) or 'not declared in PKG-INFO'} |"
                     for p, fs in sorted(projects.items()))
    skipped = "".join(f"\n- `{ns}`: {why}" for ns, why in sorted(result.skipped.items()))
    version = "catalogue version {}, derivation version {}".format(*result.version) if result.version else "no rows"
    text = f"""# Fork set data: origin

Written by `python -m scripts.build_fork_set ship --screen {screen}` from the fork screening's
validated rows: {len(result.forks)} fork tasks in {len(projects)} repositories (screening rows of {version};
screening file sha256 `{hashlib.sha256(screen.read_bytes()).hexdigest()}`). Format: `FORMAT.md`; how the forks and their tests are
made: `benchmarks/locoeval/fork/__init__.py`.

- `{FORKS_FILE}`: per task the fork's changes and body, the diffs that turn the project's test files
  into the fork's (applied to the snapshot's files when a task is judged), the hidden files and the
  screening's checks.
- `{TASKS_FILE}`: the DevEval task records of these tasks, copied verbatim from {DEVEVAL_ORIGIN};
  that repository contains no licence file, so their reuse terms are the DevEval authors'.

The code fragments, fork bodies and test diffs are derived from the projects' sdists and stay under
each project's licence (from the sdists' `PKG-INFO`):

| project (sdist) | fork tasks | licence (PKG-INFO) |
|---|---:|---|
{rows}
""" + (f"\nValidated rows not shipped:{skipped}\n" if skipped else "")
    atomic_write_text(out_dir / SOURCE_FILE, text)
    umask = os.umask(0)
    os.umask(umask)
    for name in (FORKS_FILE, TASKS_FILE, SOURCE_FILE, *((SOURCES_FILE,) if sources is not None else ())):
        os.chmod(out_dir / name, 0o666 & ~umask)


def ship(screen: Path, out_dir: Path = SET_DIR, *, deveval_data: Path | None = None, manifest: Any = None,
         skip_for: Callable[[list[str]], Mapping[str, str]] | None = None) -> ShipResult:
    """Build and write the shipped fork data; returns what was shipped and skipped. ``skip_for``:
    the built namespaces -> those to leave out, with why (``releases.release_skips``: the other-release
    check)."""
    from benchmarks.deveval.providers import get_snapshot
    from benchmarks.deveval.tasks import load_manifest
    from benchmarks.locoeval.verified.generate import licence_of

    man = manifest if manifest is not None and not isinstance(manifest, (str, Path)) else load_manifest(manifest)
    result = build(screen, deveval_data=deveval_data, manifest=man)
    if skip_for is not None:
        result = without(result, skip_for([f.namespace for f in result.forks]))
    licences = {}
    for f in result.forks:
        if f.project_path not in licences:
            licences[f.project_path] = licence_of(Path(get_snapshot(man.project(f.project_path).repo_spec(),
                                                                    manifest=man)))
    sources = [man.project(p).raw for p in sorted({f.project_path for f in result.forks})]
    write_set(result, out_dir, screen=screen, licences=licences, sources=sources)
    return result


def without(result: ShipResult, skip: Mapping[str, str]) -> ShipResult:
    """``result`` without the tasks of ``skip`` (namespace -> why), which joins its skipped ones."""
    built = {f.namespace for f in result.forks}
    skipped = {**result.skipped, **{ns: why for ns, why in skip.items() if ns in built}}
    keep = [f for f in result.forks if f.namespace not in skipped]
    records = [r for r in result.records if r["namespace"] not in skipped]
    return ShipResult(keep, records, skipped, result.version)


def summary(result: ShipResult) -> dict[str, Any]:
    return {"forks": len(result.forks), "projects": len({f.project_path for f in result.forks}),
            "screening_version": list(result.version or ()), "skipped": result.skipped}


