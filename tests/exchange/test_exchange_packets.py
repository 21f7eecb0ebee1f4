"""Answer packets (``scripts.exchange pack|unpack``): the waiting requests of both brackets dealt to several
answerers with no two requests of one group in a packet, each packet answered with SCRIPTED replies
(``scripted_exchange.reply``, not a model's), unpacked, imported, and the re-run gives the direct run's records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cycle
from benchmarks.analysis.compare_runs import compare_runs
from benchmarks.exchange_packets import ANSWER_BLOCK, PACKETS_INDEX, deal, unpack
from benchmarks.records import RunDir
from benchmarks.records.files import RecordError
from reconmem.platform.llm.exchange import pending_requests


def _rows(spec: dict[str, int]) -> list[dict]:
    return [{"custom_id": f"req_{s}_{run}_{i}", "sample": s, "position": str(i), "run": run}
            for s, n in spec.items() for run in ("floor", "ceiling") for i in range(n)]


def test_deal_puts_at_most_one_request_of_a_group_in_a_packet():
    rows = _rows({"a1": 2, "a2": 1, "b1": 3, "c1": 1})
    groups = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}
    packets = deal(rows, groups, seed=3)
    assert len(packets) == 6  # group A and B each have 6 requests
    seen = [cid for p in packets for cid in p.requests]
    assert sorted(seen) == sorted(r["custom_id"] for r in rows)
    for p in packets:
        owners = [groups[cid.split("_")[1]] for cid in p.requests]
        assert len(owners) == len(set(owners)), p
    sizes = [len(p.requests) for p in packets]
    assert max(sizes) - min(sizes) <= 1
    assert [p.requests for p in deal(rows, groups, seed=3)] == [p.requests for p in packets]


def _reply(packet_md: Path, waiting: dict[str, dict]) -> str:
    ids = [line.split()[2] for line in packet_md.read_text().splitlines() if line.startswith("=============== REQUEST ")]
    return "".join(f"<<<ANSWER {cid}\n{cycle.markdown_answer(waiting[cid]).rstrip()}\nANSWER>>>\n\n" for cid in ids)


def test_packets_answered_separately_finish_both_brackets(tmp_path, capsys):
    from scripts.brackets import main as brackets
    from scripts.exchange import main as exchange

    cache = cycle.fresh_llm_cache(tmp_path / "c")
    common = ["benchmark=demo", "backbone.model=scripted/scripted_exchange:reply",
              "benchmark.evaluator=demo_replies.fake_evaluate", f"run.results_dir={tmp_path}",
              f"cache.dir={cache}", "benchmark.progress=false"]
    assert brackets([*common, "backbone=local"]) == 0
    exchange_args = ["backbone=exchange", "backbone.context_window=32768"]
    assert brackets([*common, *exchange_args]) == 0
    root = tmp_path / "demo" / "exchange"
    waiting = {r["custom_id"]: r for m in ("no_memory", "oracle_context")
               for r in pending_requests(root / m / "brackets")}
    out = tmp_path / "packets"
    assert exchange(["pack", str(root), "--out", str(out), "--seed", "1"]) == 0
    index = json.loads((out / PACKETS_INDEX).read_text())["packets"]
    dealt = [cid for p in index.values() for cid in p["requests"]]
    assert sorted(dealt) == sorted(waiting)
    for p in index.values():  # grouped per sample: a task's floor and ceiling prompts in different packets
        samples = [waiting[cid]["sample"] for cid in p["requests"]]
        assert len(samples) == len(set(samples))
    for name in index:
        text = (out / f"{name}.md").read_text()
        assert "answer in:" not in text and "Use only this text and your own knowledge" in text
        reply = tmp_path / f"reply_{name}.md"
        reply.write_text(_reply(out / f"{name}.md", waiting))
        assert exchange(["unpack", str(reply), "--packets", str(out), "--packet", name]) == 0
    assert exchange(["import", str(root)]) == 0
    assert brackets([*common, *exchange_args]) == 0
    for method in ("no_memory", "oracle_context"):
        through = root / method / "brackets"
        assert pending_requests(through) == []
        assert [s.result()["status"] for s in RunDir(through).sample_dirs()] == ["ok"] * 3
        assert compare_runs(tmp_path / "demo" / "local" / method / "brackets", through)["differences"] == []
    reply = next(tmp_path.glob("reply_*.md"))
    name = reply.stem.removeprefix("reply_")
    with pytest.raises(RecordError, match="exists"):  # an answer is never replaced
        unpack(reply, out, name)


def test_unpack_refuses_foreign_missing_and_duplicate_answers(tmp_path):
    run = tmp_path / "run"
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / PACKETS_INDEX).write_text(json.dumps(
        {"packets": {"packet_01": {"requests": {"req_aa": str(run), "req_bb": str(run)}, "groups": []}}}))
    reply = tmp_path / "reply.md"
    cases = {"<<<ANSWER req_aa\nx\nANSWER>>>\n": "unanswered: req_bb",
             "<<<ANSWER req_aa\nx\nANSWER>>>\n<<<ANSWER req_cc\ny\nANSWER>>>\n": "did not hold",
             "<<<ANSWER req_aa\nx\nANSWER>>>\n<<<ANSWER req_aa\ny\nANSWER>>>\n": "two answers for req_aa"}
    for text, message in cases.items():
        reply.write_text(text)
        with pytest.raises(RecordError, match=message):
            unpack(reply, tmp_path / "p", "packet_01")
    assert not (run / "exchange").exists()
    reply.write_text("<<<ANSWER req_aa\nfirst line\n\nlast\nANSWER>>>\n<<<ANSWER req_bb\n```python\nx = 1\n```\nANSWER>>>\n")
    assert len(ANSWER_BLOCK.findall(reply.read_text())) == 2
    written = unpack(reply, tmp_path / "p", "packet_01")
    assert [p.read_text() for p in written] == ["first line\n\nlast\n", "```python\nx = 1\n```\n"]
