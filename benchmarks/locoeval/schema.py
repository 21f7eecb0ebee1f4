"""The LoCoEval sample format of this harness: JSON schema + cross-field checks + typed views.

One sample = one long conversation over one repository with 1+ function-generation tasks
(../shared/specs/locoeval.md). The JSON schema lives beside this module
(``sample.schema.json``); :func:`validate_sample` adds the checks a JSON schema cannot express
(unique ids, references between requirements / outline / tasks, turn numbering, every distractor
revised later). Every error names the sample id and the field path, e.g.
``sample 'boltons-s1': requirements[0].distractors[0].revised_by: unknown gt item 'R1.I9'``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

SUBSETS = ("single-hop", "multi-hop")
STEP_KINDS = ("requirement", "info", "distractor", "revision", "retrospective", "noise", "chat")
# Steps whose item_ids carry information the user must convey (the rest may reference items only).
CONVEYING_KINDS = ("info", "distractor", "revision")


class SampleError(ValueError):
    """A sample does not match the format; the message names the source, sample id and field path."""


@lru_cache(maxsize=1)
def sample_schema() -> dict[str, Any]:
    """The JSON schema of one sample (``benchmarks/locoeval/sample.schema.json``)."""
    text = resources.files("benchmarks.locoeval").joinpath("sample.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class InfoItem:
    id: str
    text: str
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class Distractor:
    id: str
    text: str
    revised_by: str  # the gt item id that later restates the correct value


@dataclass(frozen=True)
class Requirement:
    req_id: str
    namespace: str
    completion_path: str
    signature: str
    tests: tuple[str, ...]
    gt_items: tuple[InfoItem, ...]
    distractors: tuple[Distractor, ...]
    description: str = ""

    @property
    def function_name(self) -> str:
        return self.namespace.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class OutlineStep:
    turn: int
    kind: str
    brief: str
    req_id: str | None = None
    item_ids: tuple[str, ...] = ()
    text: str | None = None  # scripted user query (used verbatim, no mock-user call)
    topic: str | None = None

    @property
    def scripted(self) -> bool:
        return bool(self.text)


@dataclass(frozen=True)
class Task:
    req_id: str
    query: str
    kind: str = "function_generation"


@dataclass(frozen=True)
class Sample:
    id: str
    subset: str
    project_path: str
    repo: dict[str, Any]
    requirements: tuple[Requirement, ...]
    outline: tuple[OutlineStep, ...]
    tasks: tuple[Task, ...]
    meta: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    target_docstrings: str = "keep"  # "remove": the indexed snapshot loses the targets' docstrings too

    def requirement(self, req_id: str) -> Requirement:
        for req in self.requirements:
            if req.req_id == req_id:
                return req
        raise KeyError(f"sample {self.id!r}: no requirement {req_id!r}")

    def items_by_id(self) -> dict[str, InfoItem | Distractor]:
        out: dict[str, InfoItem | Distractor] = {}
        for req in self.requirements:
            for it in req.gt_items:
                out[it.id] = it
            for d in req.distractors:
                out[d.id] = d
        return out

    @property
    def repo_spec(self) -> dict[str, Any]:
        """The provider spec, with the sample's project_path filled in where a provider needs it."""
        spec = dict(self.repo)
        if spec.get("provider") in ("deveval_archive", "local"):
            spec.setdefault("project_path", self.project_path)
        return spec

    @property
    def repo_cluster(self) -> str:
        """Repository cluster for bootstrap CIs: the project path."""
        return self.project_path

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)


def _path(parts: list[Any] | tuple[Any, ...]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<root>"


def _fail(where: str, sample_id: str, field_path: str, msg: str) -> SampleError:
    prefix = f"{where}: " if where else ""
    return SampleError(f"{prefix}sample {sample_id!r}: {field_path}: {msg}")


def validate_sample(obj: Any, *, where: str = "") -> None:
    """Check ``obj`` against the JSON schema and the cross-field rules; raise :class:`SampleError`."""
    import jsonschema

    sample_id = obj.get("id", "<no id>") if isinstance(obj, dict) else "<not an object>"
    validator = jsonschema.Draft202012Validator(sample_schema())
    errors = sorted(validator.iter_errors(obj), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        err = errors[0]
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise _fail(where, sample_id, _path(list(err.absolute_path)), err.message + more)
    _check_references(obj, where, sample_id)


def _check_references(obj: dict[str, Any], where: str, sid: str) -> None:
    req_ids: dict[str, int] = {}
    gt_ids: dict[str, str] = {}
    dis_ids: dict[str, str] = {}
    for ri, req in enumerate(obj["requirements"]):
        if req["req_id"] in req_ids:
            raise _fail(where, sid, f"requirements[{ri}].req_id", f"duplicate req_id {req['req_id']!r}")
        req_ids[req["req_id"]] = ri
        for ii, it in enumerate(req["gt_items"]):
            if it["id"] in gt_ids or it["id"] in dis_ids:
                raise _fail(where, sid, f"requirements[{ri}].gt_items[{ii}].id", f"duplicate item id {it['id']!r}")
            gt_ids[it["id"]] = req["req_id"]
        for di, d in enumerate(req["distractors"]):
            if d["id"] in gt_ids or d["id"] in dis_ids:
                raise _fail(where, sid, f"requirements[{ri}].distractors[{di}].id", f"duplicate item id {d['id']!r}")
            dis_ids[d["id"]] = req["req_id"]
    for ri, req in enumerate(obj["requirements"]):
        for di, d in enumerate(req["distractors"]):
            if d["revised_by"] not in gt_ids:
                raise _fail(where, sid, f"requirements[{ri}].distractors[{di}].revised_by",
                            f"unknown gt item {d['revised_by']!r}")

    turns = [s["turn"] for s in obj["outline"]]
    if turns != list(range(1, len(turns) + 1)):
        bad = next(i for i, t in enumerate(turns) if t != i + 1)
        raise _fail(where, sid, f"outline[{bad}].turn", f"turns must be numbered 1..{len(turns)} in order, got {turns[bad]}")

    first_turn: dict[str, int] = {}
    revised_at: dict[str, list[int]] = {}
    for si, step in enumerate(obj["outline"]):
        if "req_id" in step and step["req_id"] not in req_ids:
            raise _fail(where, sid, f"outline[{si}].req_id", f"unknown requirement {step['req_id']!r}")
        for k, iid in enumerate(step.get("item_ids", [])):
            if iid not in gt_ids and iid not in dis_ids:
                raise _fail(where, sid, f"outline[{si}].item_ids[{k}]", f"unknown item {iid!r}")
            if step["kind"] == "distractor" and iid not in dis_ids:
                raise _fail(where, sid, f"outline[{si}].item_ids[{k}]", f"a distractor step must list distractor ids, got {iid!r}")
            if step["kind"] in ("info", "revision") and iid not in gt_ids:
                raise _fail(where, sid, f"outline[{si}].item_ids[{k}]", f"an {step['kind']} step must list gt item ids, got {iid!r}")
            first_turn.setdefault(iid, step["turn"])
            if step["kind"] == "revision":
                revised_at.setdefault(iid, []).append(step["turn"])
    for ri, req in enumerate(obj["requirements"]):
        for di, d in enumerate(req["distractors"]):
            if d["id"] not in first_turn:
                continue  # declared but never said: nothing to revise
            later = [t for t in revised_at.get(d["revised_by"], []) if t > first_turn[d["id"]]]
            if not later:
                raise _fail(where, sid, f"requirements[{ri}].distractors[{di}]",
                            f"distractor {d['id']!r} (turn {first_turn[d['id']]}) is never revised by a later "
                            f"revision step listing {d['revised_by']!r}")

    seen_tasks: set[str] = set()
    for ti, task in enumerate(obj["tasks"]):
        if task["req_id"] not in req_ids:
            raise _fail(where, sid, f"tasks[{ti}].req_id", f"unknown requirement {task['req_id']!r}")
        if task["req_id"] in seen_tasks:
            raise _fail(where, sid, f"tasks[{ti}].req_id", f"duplicate task for {task['req_id']!r}")
        seen_tasks.add(task["req_id"])


def parse_sample(obj: dict[str, Any], *, where: str = "") -> Sample:
    """Validate and convert one JSON object into a :class:`Sample`."""
    validate_sample(obj, where=where)
    reqs = tuple(
        Requirement(
            req_id=r["req_id"], namespace=r["namespace"], completion_path=r["completion_path"],
            signature=r["signature"], tests=tuple(r["tests"]),
            gt_items=tuple(InfoItem(i["id"], i["text"], tuple(i.get("evidence", ()))) for i in r["gt_items"]),
            distractors=tuple(Distractor(d["id"], d["text"], d["revised_by"]) for d in r["distractors"]),
            description=r.get("description", ""),
        )
        for r in obj["requirements"]
    )
    steps = tuple(
        OutlineStep(turn=s["turn"], kind=s["kind"], brief=s["brief"], req_id=s.get("req_id"),
                    item_ids=tuple(s.get("item_ids", ())), text=s.get("text"), topic=s.get("topic"))
        for s in obj["outline"]
    )
    tasks = tuple(Task(req_id=t["req_id"], query=t["query"], kind=t["kind"]) for t in obj["tasks"])
    return Sample(id=obj["id"], subset=obj["subset"], project_path=obj["project_path"], repo=dict(obj["repo"]),
                  requirements=reqs, outline=steps, tasks=tasks, meta=dict(obj.get("meta", {})), raw=obj,
                  target_docstrings=obj.get("target_docstrings", "keep"))
