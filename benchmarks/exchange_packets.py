"""Answer packets: the waiting requests of exchange runs dealt out to several answerers.

A measurement answered by people (or expert stand-ins) instead of a model API must keep each answer
independent of the others. ``pack`` deals the waiting requests of every exchange run under a path
into packets so that **no packet holds two requests of one group** (a group is a sample's repository
when a samples file is given, otherwise the sample itself). Because a task's floor and ceiling
requests (two bracket runs) belong to the same sample, they always land in different packets.
Each packet is one markdown file: the answering instructions, then every request as the exchange
rendered it (the line naming the answer file's path is left out). ``unpack`` splits an answerer's
reply file (``<<<ANSWER <id>`` ... ``ANSWER>>>`` blocks) verbatim into the runs' ``answers/<id>.md``
files, refusing ids the packet did not hold, duplicates and existing answer files; then
``scripts.exchange import`` validates and stores them as any other answer.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.exchange import exchange_runs
from benchmarks.records.files import RecordError
from reconmem.platform.jsonfiles import iter_json_records
from reconmem.platform.llm.exchange import ANSWERS, exchange_dir, pending_requests
from reconmem.platform.llm.ledger import atomic_write_text

PACKETS_INDEX = "packets.json"
ANSWER_BLOCK = re.compile(r"^<<<ANSWER (req_[0-9a-f]+)[ \t]*\n(.*?)\n?ANSWER>>>[ \t]*$", re.S | re.M)
INSTRUCTIONS = """\
You are answering requests that a benchmark sent to a language model; your answers stand in for the
model's. Below are several independent requests, each headed "=============== REQUEST <id> ===============",
followed by its chat messages (system, user, ...). Answer each one exactly as the assistant would reply
to those messages, using only what the request itself contains and your own knowledge.

Rules (strict):
- Use only this text and your own knowledge: open no other file, run no command or code, do no search,
  ask no model. (Reading this packet and writing your reply are the only actions.)
- Treat each request on its own: do not carry information from one request to another.
- Follow each request's instructions (for example "Reply with the complete function ... in one
  ```python code block") and respect its length limit.
- Reply with every answer, in this exact format, one after another, and nothing outside the blocks:

<<<ANSWER req_xxxxxxxxxxxxxxxxxxxxxxxx
...your reply text exactly as the assistant would send it...
ANSWER>>>
"""


@dataclass
class Packet:
    """One answerer's share: request id -> the run directory that asked it."""

    name: str
    requests: dict[str, str] = field(default_factory=dict)
    groups: set[str] = field(default_factory=set)


def sample_groups(samples_file: str | Path, field_name: str = "project_path") -> dict[str, str]:
    """Sample id -> its group (``field_name`` of each record of a samples JSONL file)."""
    out = {}
    for where, rec in iter_json_records(Path(samples_file), error=RecordError):
        if "id" not in rec or field_name not in rec:
            raise RecordError(f"{where}: a sample record needs 'id' and {field_name!r}")
        out[str(rec["id"])] = str(rec[field_name])
    return out


def deal(requests: list[dict[str, Any]], groups: dict[str, str], *, seed: int = 0) -> list[Packet]:
    """Deal ``requests`` (pending rows with ``run``) into as few packets as the rule allows: at most one
    request per group in a packet; packets filled in turn so their sizes differ by little."""
    by_group: dict[str, list[dict[str, Any]]] = {}
    for r in requests:
        sample = str(r.get("sample") or "-")
        by_group.setdefault(groups.get(sample, sample), []).append(r)
    n = max((len(v) for v in by_group.values()), default=0)
    packets = [Packet(name=f"packet_{i + 1:02d}") for i in range(n)]
    rng = random.Random(seed)
    order = sorted(by_group, key=lambda g: (-len(by_group[g]), g))
    for group in order:
        rows = sorted(by_group[group], key=lambda r: (str(r["run"]), str(r.get("sample")), str(r.get("position"))))
        rng.shuffle(rows)
        slots = sorted(range(n), key=lambda i: (len(packets[i].requests), rng.random()))
        for row, i in zip(rows, slots):
            packets[i].requests[row["custom_id"]] = str(row["run"])
            packets[i].groups.add(group)
    return packets


def _request_text(markdown: Path) -> str:
    lines = markdown.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.startswith("- answer in: "))


def pack(path: str | Path, out: str | Path, *, samples_file: str | Path | None = None, seed: int = 0,
         instructions: str = INSTRUCTIONS) -> list[Packet]:
    """Write one ``<packet>.md`` per packet and ``packets.json`` (packet -> request id -> run) under ``out``."""
    rows = []
    for run in exchange_runs(path):
        for r in pending_requests(run.path):
            rows.append({**r, "run": str(run.path)})
    if not rows:
        raise RecordError(f"{path}: no request is waiting")
    groups = sample_groups(samples_file) if samples_file is not None else {}
    packets = deal(rows, groups, seed=seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    markdown = {r["custom_id"]: Path(r["markdown"]) for r in rows}
    for p in packets:
        body = [instructions.rstrip("\n"), ""]
        for cid in p.requests:
            body += [f"=============== REQUEST {cid} ===============", "", _request_text(markdown[cid]), ""]
        atomic_write_text(out / f"{p.name}.md", "\n".join(body))
    index = {p.name: {"requests": p.requests, "groups": sorted(p.groups)} for p in packets}
    atomic_write_text(out / PACKETS_INDEX, json.dumps({"seed": seed, "samples": str(samples_file or ""),
                                                        "packets": index}, indent=1) + "\n")
    return packets


def unpack(reply_file: str | Path, packets_dir: str | Path, packet: str) -> list[Path]:
    """Split one answerer's reply for ``packet`` into ``answers/<id>.md`` of the runs that asked; every
    request of the packet must be answered exactly once."""
    reply_file, packets_dir = Path(reply_file), Path(packets_dir)
    index_file = packets_dir / PACKETS_INDEX
    if not index_file.is_file():
        raise RecordError(f"{index_file}: no packets index (run `scripts.exchange pack` first)")
    packets = json.loads(index_file.read_text(encoding="utf-8"))["packets"]
    if packet not in packets:
        raise RecordError(f"{index_file}: no packet {packet!r}")
    asked: dict[str, str] = packets[packet]["requests"]
    blocks = ANSWER_BLOCK.findall(reply_file.read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for cid, body in blocks:
        if cid not in asked:
            raise RecordError(f"{reply_file}: an answer for {cid}, which {packet} did not hold")
        if cid in seen:
            raise RecordError(f"{reply_file}: two answers for {cid}")
        seen[cid] = body
    missing = sorted(set(asked) - set(seen))
    if missing:
        raise RecordError(f"{reply_file}: {len(missing)} request(s) of {packet} unanswered: {', '.join(missing)}")
    written = []
    for cid, body in seen.items():
        target = exchange_dir(asked[cid]) / ANSWERS / f"{cid}.md"
        if target.exists():
            raise RecordError(f"{target}: exists (an answer is never replaced)")
    for cid, body in seen.items():
        target = exchange_dir(asked[cid]) / ANSWERS / f"{cid}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, body + "\n")
        written.append(target)
    return written
