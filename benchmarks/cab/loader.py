"""CodeAssistBench issue records: parsing, validation, de-duplication and filtering.

Two record layouts exist upstream and both are accepted, in a JSONL file (one object per line)
or a JSON file holding a list of objects:

* v1 (``cab_verified_strict`` / ``_lenient``): ``labels`` and ``comments`` are JSON lists and
  ``number`` is an int;
* v2 / v3 (``cab_verified_v3``): ``labels`` and ``comments`` are *Python-repr strings*
  (``"[{'user': 'x', ...}]"``), decoded with :func:`ast.literal_eval`; ``number`` is a string.

The repository comes from the issue url (``https://github.com/<owner>/<repo>/issues/<n>``; one
v3 record points at ``/pull/<n>``), there is no repository field. Issues repeated under several
task ids (the strict file has 12 such pairs) are collapsed by url, keeping the first occurrence.
Every error names the file, the line (or list index) and the field.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from benchmarks.task import select_samples
from reconmem.platform import pyast
from reconmem.platform.jsonfiles import iter_json_records

# Language spellings differ between releases (v3: "cpp"; strict/lenient: "c++", "c#").
LANGUAGE_ALIASES = {"c++": "cpp", "cxx": "cpp", "c#": "csharp", "cs": "csharp", "js": "javascript",
                    "ts": "typescript", "golang": "go", "py": "python"}

_URL = re.compile(r"^https?://github\.com/(?P<owner>[A-Za-z0-9_.-]+)/(?P<name>[A-Za-z0-9_.-]+)/(?P<kind>issues|pull)/(?P<num>\d+)/?$")
_SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")


class CabDataError(ValueError):
    """A malformed CAB record; the message names file:line, the task id and the field."""


def normalize_language(language: str) -> str:
    """Canonical lower-case language name (``c++`` -> ``cpp``, ``c#`` -> ``csharp``)."""
    lang = language.strip().lower()
    return LANGUAGE_ALIASES.get(lang, lang)


@dataclass
class CabComment:
    user: str
    created_at: str
    body: str


@dataclass
class CabIssue:
    """One CAB issue, normalised across record layouts."""

    task_id: str
    number: str
    title: str
    body: str
    url: str
    owner: str
    name: str
    commit_id: str | None
    language: str  # canonical (see normalize_language)
    satisfaction_conditions: list[str]
    comments: list[CabComment] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    dockerfile: str | None = None
    created_at: str | None = None
    closed_at: str | None = None
    author: str | None = None
    classification: Any = None
    source: str = ""  # "<file>:<line>" of the record kept after de-duplication
    duplicate_task_ids: list[str] = field(default_factory=list)  # other task ids with the same url

    @property
    def repo(self) -> str:
        """``owner/name``."""
        return f"{self.owner}/{self.name}"

    @property
    def id(self) -> str:
        return self.task_id

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["repo"] = self.repo
        return d


# --------------------------------------------------------------------------- raw reading


def iter_raw_records(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("<file>:<line>", record)`` from a JSONL file or a JSON list file."""
    p = Path(path)
    if not p.is_file():
        raise CabDataError(f"{p}: CAB data file not found (set benchmark.data or CAB_DATA)")
    yield from iter_json_records(p, error=CabDataError)


# --------------------------------------------------------------------------- field parsing


def _literal_list(value: Any, where: str, field_name: str) -> list[Any]:
    """A list given either as a JSON list or as a Python-repr string of a list."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return []
        try:
            parsed = pyast.literal_eval(s)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise CabDataError(f"{where}: field '{field_name}': not a Python/JSON list literal ({type(exc).__name__}: {exc})") from exc
        if not isinstance(parsed, (list, tuple)):
            raise CabDataError(f"{where}: field '{field_name}': literal is a {type(parsed).__name__}, expected a list")
        return list(parsed)
    raise CabDataError(f"{where}: field '{field_name}': expected a list or a list literal string, got {type(value).__name__}")


def _required_str(row: dict[str, Any], key: str, where: str, *, allow_empty: bool = False) -> str:
    if key not in row:
        raise CabDataError(f"{where}: missing field '{key}'")
    v = row[key]
    if isinstance(v, int) and not isinstance(v, bool) and key == "number":
        return str(v)
    if not isinstance(v, str):
        raise CabDataError(f"{where}: field '{key}': expected a string, got {type(v).__name__}")
    if not allow_empty and not v.strip():
        raise CabDataError(f"{where}: field '{key}' is empty")
    return v


def _optional_text(row: dict[str, Any], key: str, where: str) -> str:
    v = row.get(key)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise CabDataError(f"{where}: field '{key}': expected a string or null, got {type(v).__name__}")
    return v


def parse_repo_url(url: str) -> tuple[str, str, str]:
    """``(owner, name, number)`` from a GitHub issue or pull-request url; ValueError otherwise."""
    m = _URL.match(url.strip())
    if not m:
        raise ValueError(f"not a GitHub issue url (https://github.com/<owner>/<repo>/issues/<n>): {url!r}")
    return m.group("owner"), m.group("name"), m.group("num")


def parse_record(row: dict[str, Any], where: str = "<record>") -> CabIssue:
    """Validate and normalise one raw record (either layout)."""
    task_id = row.get("task_id")
    if not isinstance(task_id, str) or not task_id.strip():
        raise CabDataError(f"{where}: missing or empty field 'task_id'")
    where = f"{where} ({task_id})"
    url = _required_str(row, "url", where)
    try:
        owner, name, url_number = parse_repo_url(url)
    except ValueError as exc:
        raise CabDataError(f"{where}: field 'url': {exc}") from exc
    number = _required_str(row, "number", where)
    if number.strip() != url_number:
        raise CabDataError(f"{where}: field 'number' ({number!r}) does not match the url ({url_number})")

    commit = row.get("commit_id")
    if commit is not None:
        if not isinstance(commit, str) or not _SHA.match(commit.strip()):
            raise CabDataError(f"{where}: field 'commit_id': expected a hex commit id or null, got {commit!r}")
        commit = commit.strip().lower()

    conditions = row.get("satisfaction_conditions")
    conditions = _literal_list(conditions, where, "satisfaction_conditions") if conditions is not None else None
    if not conditions:
        raise CabDataError(f"{where}: field 'satisfaction_conditions' is missing or empty")
    for i, c in enumerate(conditions):
        if not isinstance(c, str) or not c.strip():
            raise CabDataError(f"{where}: field 'satisfaction_conditions'[{i}]: expected a non-empty string")

    comments: list[CabComment] = []
    for i, c in enumerate(_literal_list(row.get("comments"), where, "comments")):
        if not isinstance(c, dict) or not isinstance(c.get("body", ""), str):
            raise CabDataError(f"{where}: field 'comments'[{i}]: expected an object with a string 'body'")
        comments.append(CabComment(user=str(c.get("user") or "unknown"), created_at=str(c.get("created_at") or ""),
                                   body=c.get("body") or ""))
    labels = [str(x) for x in _literal_list(row.get("labels"), where, "labels")]

    dockerfile = row.get("dockerfile")
    if dockerfile is not None and not isinstance(dockerfile, str):
        raise CabDataError(f"{where}: field 'dockerfile': expected a string or null, got {type(dockerfile).__name__}")
    language = _required_str(row, "language", where)
    return CabIssue(
        task_id=task_id.strip(),
        number=number.strip(),
        title=_required_str(row, "title", where),
        body=_optional_text(row, "body", where),  # empty in three v3 issues, null in one strict issue
        url=url.strip(),
        owner=owner,
        name=name,
        commit_id=commit,
        language=normalize_language(language),
        satisfaction_conditions=[c.strip() for c in conditions],
        comments=comments,
        labels=labels,
        dockerfile=dockerfile if (dockerfile or "").strip() else None,
        created_at=row.get("created_at"),
        closed_at=row.get("closed_at"),
        author=row.get("author"),
        classification=row.get("_classification"),
        source=where.split(" (")[0],
    )


# --------------------------------------------------------------------------- loading


def load_issues(
    path: str | Path,
    *,
    languages: Iterable[str] | None = None,
    task_ids: Sequence[str] | None = None,
    limit: int | None = None,
) -> list[CabIssue]:
    """Parse, de-duplicate by url (first occurrence kept) and filter a CAB data file.

    ``languages`` accepts any spelling (``c++`` == ``cpp``); ``task_ids`` keeps the listed ids (an
    unknown id is an error naming it; a duplicate's task id selects the kept record); ``limit``
    keeps the first N after the other filters.
    """
    issues: list[CabIssue] = []
    by_url: dict[str, CabIssue] = {}
    seen_ids: dict[str, str] = {}
    for where, row in iter_raw_records(path):
        issue = parse_record(row, where)
        if issue.task_id in seen_ids:
            raise CabDataError(f"{where}: task_id {issue.task_id!r} already used at {seen_ids[issue.task_id]}")
        seen_ids[issue.task_id] = where
        key = issue.url.rstrip("/").lower()
        if key in by_url:
            by_url[key].duplicate_task_ids.append(issue.task_id)
            continue
        by_url[key] = issue
        issues.append(issue)

    if languages:
        wanted = {normalize_language(str(lang)) for lang in languages}
        known = {i.language for i in issues}
        unknown = sorted(wanted - known)
        if unknown and not (wanted & known):
            raise CabDataError(f"benchmark.languages: {unknown} not in {path} (available: {sorted(known)})")
        issues = [i for i in issues if i.language in wanted]
    if task_ids or limit is not None:
        alias = {dup: i.task_id for i in issues for dup in i.duplicate_task_ids}
        ids = [alias.get(str(t), str(t)) for t in task_ids] if task_ids else None
        issues = select_samples(issues, ids=list(dict.fromkeys(ids)) if ids else None, limit=limit,
                                id_of=lambda i: i.task_id, error=CabDataError, source=str(path))
    return issues


def issue_text(issue: CabIssue) -> str:
    """The user's opening message: the issue title and body as filed."""
    body = issue.body.strip() or "(no description)"
    return f"{issue.title.strip()}\n\n{body}"
