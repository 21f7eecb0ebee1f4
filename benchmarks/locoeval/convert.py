"""Converter from the official LoCoEval release's layout into this harness's sample format.

The official data (arXiv 2603.06358) could not be obtained for this project, so the converter is
written against the layout the paper describes, with tolerant key aliases. ASSUMPTIONS (adjust
``KEY_ALIASES`` / ``KIND_ALIASES`` when the real files differ; the loader calls this module for any
row that is not already in our format):

1. One JSON object per conversation. Its id is under ``id`` / ``sample_id`` / ``conv_id``; the
   subset under ``subset`` / ``type`` / ``setting`` with values like ``single_hop``, ``single-hop``,
   ``multi hop`` (normalised to ``single-hop`` / ``multi-hop``).
2. The DevEval project is ``project_path`` / ``project`` / ``repo`` (e.g. ``Utilities/boltons``);
   the repository snapshot is the DevEval ``Source_Code`` archive unless ``repo`` is an object
   (then it is used as our provider spec as is).
3. The function-generation tasks are a list under ``requirements`` / ``tasks`` / ``targets``, each
   with a DevEval ``namespace`` and its information items under ``gt_items`` / ``information`` /
   ``info_items`` / ``items`` (strings or objects with ``text`` / ``content``), distracting items
   under ``distractors`` / ``distractions`` / ``mutations`` (objects with the item they contradict in
   ``revised_by`` / ``target`` / ``original``, an index or an id). ``completion_path``, ``tests`` and
   ``signature`` are taken from the row, else from the DevEval record of the namespace
   (``deveval_tasks``; the signature is then read from the snapshot by ``signature_reader``).
4. The conversation outline is a list under ``outline`` / ``outlines`` / ``query_outlines`` /
   ``turns``, one entry per user turn, with a type (``kind`` / ``type`` / ``category``), the
   outline text (``brief`` / ``outline`` / ``content`` / ``description``), optionally the task it
   belongs to (``req_id`` / ``namespace`` / ``task``) and the items it conveys (``item_ids`` /
   ``items``, ids or indices). Unknown types become ``chat``.
5. The final queries are ``final_queries`` / ``task_queries`` (one per task, in task order); when
   absent a standard function-generation query is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from benchmarks.locoeval.schema import SampleError

KEY_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "sample_id", "conv_id", "conversation_id"),
    "subset": ("subset", "type", "setting", "hop"),
    "project_path": ("project_path", "project", "repo_name", "repository"),
    "requirements": ("requirements", "tasks", "targets", "functions"),
    "outline": ("outline", "outlines", "query_outlines", "turns", "dialogue_outline"),
    "gt_items": ("gt_items", "information", "info_items", "items", "information_items"),
    "distractors": ("distractors", "distractions", "mutations", "distracting_items"),
    "kind": ("kind", "type", "category", "pattern"),
    "brief": ("brief", "outline", "content", "description", "query_outline"),
    "step_items": ("item_ids", "items", "info_ids"),
    "final_queries": ("final_queries", "task_queries", "generation_queries"),
}

KIND_ALIASES: dict[str, str] = {
    "requirement": "requirement", "new_requirement": "requirement", "task": "requirement",
    "info": "info", "information": "info", "detail": "info",
    "distractor": "distractor", "distraction": "distractor", "mutation": "distractor",
    "revision": "revision", "iterative": "revision", "iterative_requirement": "revision", "correction": "revision",
    "retrospective": "retrospective", "review": "retrospective", "recall": "retrospective",
    "noise": "noise", "noisy": "noise", "noisy_input": "noise", "irrelevant": "noise",
    "chat": "chat", "parallel": "chat", "parallel_topic": "chat", "topic": "chat",
}


def is_official_record(row: Mapping[str, Any]) -> bool:
    """True when ``row`` is not in our format (ours always has requirements + outline + tasks + subset)."""
    ours = {"id", "subset", "requirements", "outline", "tasks"}
    return not ours.issubset(row.keys())


def _get(row: Mapping[str, Any], key: str, default: Any = None) -> Any:
    for alias in KEY_ALIASES[key]:
        if alias in row and row[alias] is not None:
            return row[alias]
    return default


def _subset(value: Any, where: str) -> str:
    norm = re.sub(r"[\s_]+", "-", str(value).strip().lower())
    if norm in ("single-hop", "singlehop", "single"):
        return "single-hop"
    if norm in ("multi-hop", "multihop", "multi"):
        return "multi-hop"
    raise SampleError(f"{where}: subset: cannot map {value!r} to single-hop / multi-hop")


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        return str(value.get("text") or value.get("content") or value.get("value") or "")
    return str(value)


def convert_record(row: Mapping[str, Any], *, where: str = "",
                   deveval_tasks: Mapping[str, Mapping[str, Any]] | None = None,
                   signature_reader: Callable[[Mapping[str, Any]], str] | None = None) -> dict[str, Any]:
    """Convert one official-layout row into our sample object (validated later by the loader)."""
    sid = str(_get(row, "id", "") or "")
    if not sid:
        raise SampleError(f"{where}: no sample id under any of {KEY_ALIASES['id']}")
    loc = f"{where}: sample {sid!r}"
    project = _get(row, "project_path")
    repo = row.get("repo")
    if isinstance(repo, Mapping):
        repo_spec = dict(repo)
        project = project or repo_spec.get("project_path") or repo_spec.get("name")
    else:
        project = project or repo
        repo_spec = {"provider": "deveval_archive", "project_path": str(project or "")}
    if not project:
        raise SampleError(f"{loc}: project_path: missing (tried {KEY_ALIASES['project_path']})")

    raw_reqs = _get(row, "requirements") or []
    if not raw_reqs:
        raise SampleError(f"{loc}: requirements: missing (tried {KEY_ALIASES['requirements']})")
    requirements = []
    item_index: dict[tuple[int, int], str] = {}
    for ri, r in enumerate(raw_reqs):
        req_id = str(r.get("req_id") or f"R{ri + 1}")
        ns = r.get("namespace")
        if not ns:
            raise SampleError(f"{loc}: requirements[{ri}].namespace: missing")
        dev = dict((deveval_tasks or {}).get(ns, {}))
        comp = r.get("completion_path") or dev.get("completion_path")
        tests = r.get("tests") or dev.get("tests")
        sig = r.get("signature")
        if not sig and signature_reader and dev:
            sig = signature_reader(dev)
        for field, val in (("completion_path", comp), ("tests", tests), ("signature", sig)):
            if not val:
                raise SampleError(f"{loc}: requirements[{ri}].{field}: missing in the row and not derivable "
                                  "(pass deveval_tasks / signature_reader to convert_record)")
        gts = []
        for ii, it in enumerate(_get(r, "gt_items") or []):
            iid = str(it.get("id")) if isinstance(it, Mapping) and it.get("id") else f"{req_id}.I{ii + 1}"
            item_index[(ri, ii)] = iid
            gts.append({"id": iid, "text": _text(it)})
        dis = []
        for di, d in enumerate(_get(r, "distractors") or []):
            did = str(d.get("id")) if isinstance(d, Mapping) and d.get("id") else f"{req_id}.D{di + 1}"
            target = d.get("revised_by", d.get("target", d.get("original"))) if isinstance(d, Mapping) else None
            if isinstance(target, int):
                target = item_index.get((ri, target))
            if not target:
                raise SampleError(f"{loc}: requirements[{ri}].distractors[{di}]: no revised_by/target/original")
            dis.append({"id": did, "text": _text(d), "revised_by": str(target)})
        requirements.append({"req_id": req_id, "namespace": ns, "completion_path": comp, "signature": sig,
                             "tests": list(tests), "gt_items": gts, "distractors": dis})
    ns_to_req = {r["namespace"]: r["req_id"] for r in requirements}
    all_ids = [i["id"] for r in requirements for i in r["gt_items"] + r["distractors"]]

    outline = []
    for si, st in enumerate(_get(row, "outline") or []):
        if isinstance(st, str):
            st = {"brief": st}
        kind_raw = str(_get(st, "kind", "chat")).strip().lower().replace(" ", "_")
        step: dict[str, Any] = {"turn": si + 1, "kind": KIND_ALIASES.get(kind_raw, "chat"),
                                "brief": _text(_get(st, "brief", "")) or "(continue the conversation)"}
        req = st.get("req_id") or ns_to_req.get(st.get("namespace", "")) or st.get("task")
        if req:
            step["req_id"] = str(req)
        items = _get(st, "step_items") or []
        ids = [all_ids[i] if isinstance(i, int) and 0 <= i < len(all_ids) else str(i) for i in items]
        if ids:
            step["item_ids"] = ids
        if st.get("text") or st.get("query"):
            step["text"] = str(st.get("text") or st.get("query"))
        outline.append(step)
    if not outline:
        raise SampleError(f"{loc}: outline: missing (tried {KEY_ALIASES['outline']})")

    finals = _get(row, "final_queries") or []
    tasks = []
    for ri, r in enumerate(requirements):
        q = _text(finals[ri]) if ri < len(finals) else (
            f"Based on everything we discussed, please implement `{r['namespace'].rsplit('.', 1)[-1]}` now.")
        tasks.append({"req_id": r["req_id"], "kind": "function_generation", "query": q})
    return {"id": sid, "subset": _subset(_get(row, "subset", ""), loc), "project_path": str(project),
            "repo": repo_spec, "requirements": requirements, "outline": outline, "tasks": tasks,
            "meta": {"converted_from": "official", "source": where}}
