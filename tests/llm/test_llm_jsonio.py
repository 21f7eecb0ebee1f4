"""JSON repair of model output, and chat_json's counted failures."""

from __future__ import annotations

import logging

import pytest

from reconmem.platform.jsonio import JSONRepairError, parse_json_lenient
from reconmem.platform.testing import ScriptedLLM

MSGS = [{"role": "user", "content": "give JSON"}]


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('Here you go:\n```\n{"a": 1}\n```\nAnything else?', {"a": 1}),
        ('Sure! {"name": "x", "ok": true} Hope this helps.', {"name": "x", "ok": True}),
        ('{"a": [1, 2,], "b": {"c": 3,},}', {"a": [1, 2], "b": {"c": 3}}),
        ("{'a': 'it\\'s', 'b': \"say \\\"hi\\\"\"}", {"a": "it's", "b": 'say "hi"'}),
        ("{'q': 'he said \"no\"'}", {"q": 'he said "no"'}),
        ('{"ok": True, "none": None, "no": False}', {"ok": True, "none": None, "no": False}),
        ('{"facts": ["one", "two", "thr', {"facts": ["one", "two", "thr"]}),
        ('{"a": 1, "b": ', {"a": 1}),
        ('{"a": 1, "b"', {"a": 1}),
        ('[{"x": 1}, {"y": [2, 3', [{"x": 1}, {"y": [2, 3]}]),
        ('{"a": {"b": [1, 2, 3.', {"a": {"b": [1, 2]}}),
        ('{"s": "line1\nline2"}', {"s": "line1\nline2"}),
        ('[1, 2, 3]', [1, 2, 3]),
    ],
)
def test_repairs(text, expected):
    assert parse_json_lenient(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "no json at all", "{:}", "}{", "{\"a", "[{\"key\": "])
def test_unrepairable_raises(text):
    with pytest.raises(JSONRepairError):
        parse_json_lenient(text)


def test_chat_json_counts_and_logs_failures(caplog):
    llm = ScriptedLLM(["I cannot do that.", '{"facts": ["a"]}', '{"facts": "not a list"}', '```json\n{"facts": [1,],}\n```'])

    def validate(value):
        if not isinstance(value.get("facts"), list):
            raise ValueError("facts must be a list")

    with caplog.at_level(logging.WARNING, logger="reconmem.platform.llm"):
        assert llm.chat_json(MSGS, purpose="memory_extraction") is None
        assert llm.chat_json(MSGS, purpose="memory_extraction", validate=validate) == {"facts": ["a"]}
        assert llm.chat_json(MSGS, purpose="judge", validate=validate) is None
        assert llm.chat_json(MSGS, purpose="judge", validate=validate) == {"facts": [1]}
    assert llm.json_failures == {"memory_extraction": 1, "judge": 1}
    assert "unparseable JSON" in caplog.text and "facts must be a list" in caplog.text


def test_chat_json_validate_may_transform():
    llm = ScriptedLLM(['{"score": "4"}'])
    assert llm.chat_json(MSGS, purpose="judge", validate=lambda v: int(v["score"])) == 4
