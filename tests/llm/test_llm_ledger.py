"""UsageLedger: tag scopes, totals by purpose and tags, JSONL round trip, thread safety."""

from __future__ import annotations

import threading

from reconmem.platform.llm import Usage, UsageLedger, current_tags
from reconmem.platform.testing import ScriptedLLM


def test_tags_scopes_nest_and_reset():
    ledger = UsageLedger()
    with ledger.tags(sample="s1", phase="build"):
        ledger.record("memory_update", Usage(10, 2), cached=False, model="m", seconds=0.5)
        with ledger.tags(turn=3, phase="answer"):
            assert current_tags() == {"sample": "s1", "phase": "answer", "turn": 3}
            ledger.record("turn_generation", Usage(100, 20), cached=False, model="m", seconds=1.0)
        ledger.record("judge", Usage(5, 1), cached=True, model="m", seconds=0.0, role="judge")
    ledger.record("persona", Usage(1, 1), cached=False, model="m", seconds=0.1)
    e = ledger.events
    assert (e[0]["sample"], e[0]["phase"], "turn" in e[0]) == ("s1", "build", False)
    assert (e[1]["turn"], e[1]["phase"]) == (3, "answer")
    assert e[2]["role"] == "judge" and e[2]["cached"] is True
    assert "sample" not in e[3] and current_tags() == {}


def test_totals_by_purpose_tags_and_filters():
    ledger = UsageLedger()
    llm = ScriptedLLM(lambda messages, purpose: "abcd" * 5, ledger=ledger)
    msgs = [{"role": "user", "content": "q" * 36}]  # "user\n"+36 chars = 41 -> 11 tokens + 4 + 3 = 18
    for sample in ("a", "b"):
        with ledger.tags(sample=sample):
            for turn in range(3):
                with ledger.tags(turn=turn):
                    llm.chat(msgs, purpose="turn_generation")
            llm.chat(msgs, purpose="judge")
    by_purpose = ledger.totals()
    assert set(by_purpose) == {"turn_generation", "judge"}
    assert by_purpose["turn_generation"]["calls"] == 6
    assert by_purpose["turn_generation"]["input_tokens"] == 6 * 18
    assert by_purpose["turn_generation"]["output_tokens"] == 6 * 5
    assert by_purpose["judge"]["total_tokens"] == 2 * (18 + 5)
    by_sample = ledger.totals(by=("sample", "purpose"))
    assert by_sample[("a", "judge")]["calls"] == 1 and by_sample[("b", "turn_generation")]["calls"] == 3
    only_b = ledger.totals(by=(), sample="b")
    assert only_b["calls"] == 4 and only_b["input_tokens"] == 4 * 18
    assert ledger.totals(by="turn", purpose="judge") == {None: ledger.totals(by=(), purpose="judge")}


def test_jsonl_round_trip(tmp_path):
    ledger = UsageLedger()
    with ledger.tags(sample="x", role="assistant"):
        ledger.record("turn_generation", Usage(7, 3), cached=False, model="local/m", seconds=0.25)
    ledger.record("judge", Usage(2, 1), cached=True, model="local/m", seconds=0.0)
    path = ledger.to_jsonl(tmp_path / "sub" / "usage.jsonl")
    back = UsageLedger.from_jsonl(path)
    assert back.events == ledger.events
    assert back.totals() == ledger.totals()
    assert not list((tmp_path / "sub").glob("*.tmp"))


def test_thread_safe_recording_with_per_thread_tags():
    ledger = UsageLedger()

    def worker(i):
        with ledger.tags(sample=f"s{i}"):
            for _ in range(200):
                ledger.record("judge", Usage(1, 1), cached=False, model="m", seconds=0.0)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    per_sample = ledger.totals(by="sample")
    assert {k: v["calls"] for k, v in per_sample.items()} == {f"s{i}": 200 for i in range(4)}
