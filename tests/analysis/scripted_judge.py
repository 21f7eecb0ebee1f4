"""A scripted coverage judge (test double, not a model): supports every GT item whose text shares a
word with some snippet, citing that snippet. Importable as ``scripted/scripted_judge:reply``."""

from __future__ import annotations

import json
import re


def judge_items(messages, supported_by) -> str:
    """The judge's JSON answer: each GT item ``Gi`` is supported by the first snippet for which
    ``supported_by(gt_text, snippet_body)`` is true (shared by the scripted judges of the tests)."""
    text = messages[-1]["content"]
    gt_part, _, snip_part = text.partition("Snippets:")
    gts = re.findall(r"^(G\d+): (.*)$", gt_part, flags=re.M)
    snippets = re.findall(r"^([SC]\d+):\n(.*?)(?=^[SC]\d+:\n|^Answer with|\Z)", snip_part, flags=re.M | re.S)
    items = []
    for gid, gtext in gts:
        hit = next((eid for eid, body in snippets if supported_by(gtext, body)), None)
        items.append({"id": gid, "supported": hit is not None, "evidence": [hit] if hit else []})
    return json.dumps({"items": items})


def _shares_a_word(gtext: str, body: str) -> bool:
    words = {w for w in re.findall(r"[a-z]{4,}", gtext.lower())} - {"item"}
    return bool(words & set(re.findall(r"[a-z]{4,}", body.lower())))


def reply(messages, purpose):
    assert purpose == "coverage_judge"
    return judge_items(messages, _shares_a_word)
