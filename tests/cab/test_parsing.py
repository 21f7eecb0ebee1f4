"""Parsers of the user status, the judge's evaluation and the JSON tool protocol (pure functions)."""

from __future__ import annotations

import pytest

from benchmarks.cab.judge import JudgeParseError, parse_judgment
from benchmarks.cab.user import FULLY_SATISFIED, NOT_SATISFIED, PARTIALLY_SATISFIED, parse_user_reply
from benchmarks.cab.tools import TOOL_NAMES
from reconmem.platform.tools import parse_json_tool_call
from cab_testkit import GOOD_JUDGMENT


@pytest.mark.parametrize("raw, status, text", [
    ("Thanks.\n\nSATISFACTION_STATUS: FULLY_SATISFIED\nREASON: all good", FULLY_SATISFIED, "Thanks."),
    ("Hmm?\n---\n**SATISFACTION_STATUS:** PARTIALLY_SATISFIED\n**REASON:** half", PARTIALLY_SATISFIED, "Hmm?"),
    ("What about X?\nSATISFACTION STATUS: [NOT SATISFIED]", NOT_SATISFIED, "What about X?"),
    ("Ok\nsatisfaction_status: fully_satisfied", FULLY_SATISFIED, "Ok"),
    ("Still broken.\nPARTIALLY_SATISFIED", PARTIALLY_SATISFIED, "Still broken."),
])
def test_user_status_stripped(raw, status, text):
    r = parse_user_reply(raw)
    assert r.status == status and r.text == text and "SATISFACTION" not in r.text.upper()


def test_user_status_missing_defaults_to_not_satisfied():
    r = parse_user_reply("Can you explain more?")
    assert r.status == NOT_SATISFIED and not r.status_found and r.text == "Can you explain more?"
    r = parse_user_reply("Question\nSATISFACTION_STATUS: maybe")
    assert r.status == NOT_SATISFIED and not r.status_found and r.text == "Question"
    assert parse_user_reply("a\nSATISFACTION_STATUS: FULLY_SATISFIED\nREASON: ok").reason == "ok"


def test_judgment_well_formed():
    j = parse_judgment(GOOD_JUDGMENT, 2)
    assert (j.verdict, j.technical_correctness, j.verbosity) == ("CORRECT", "CORRECT", "APPROPRIATE")
    assert (j.alignment_met, j.alignment_total) == (2, 2) and [c["satisfied"] for c in j.conditions] == [True, True]
    assert j.key_issues == "none" and j.reasoning.startswith("Matches") and not j.warnings


def test_judgment_markdown_and_variants():
    text = """## Evaluation
**TECHNICAL CORRECTNESS:** [PARTIALLY CORRECT]

**ALIGNMENT SCORE:** 1/3 CONDITIONS MET (33%)

- CONDITION 1: [TRUE] explains the flag
- CONDITION 2: [FALSE] no example
- CONDITION 3: FALSE - no file path

**VERBOSITY ASSESSMENT:**
CONCISE

**VERDICT:** PARTIALLY_CORRECT

**KEY ISSUES:**
- misses the example

**REASONING:** partial."""
    j = parse_judgment(text, 3)
    assert j.verdict == "PARTIALLY CORRECT" and j.technical_correctness == "PARTIALLY CORRECT"
    assert j.verbosity == "CONCISE" and (j.alignment_met, j.alignment_total) == (1, 3)
    assert [c["satisfied"] for c in j.conditions] == [True, False, False]
    assert "misses the example" in j.key_issues


def test_judgment_incorrect_not_mistaken_for_correct():
    text = GOOD_JUDGMENT.replace("VERDICT: CORRECT", "VERDICT: INCORRECT").replace("TECHNICAL CORRECTNESS: CORRECT",
                                                                                    "TECHNICAL CORRECTNESS: NOT CORRECT")
    j = parse_judgment(text, 2)
    assert j.verdict == "INCORRECT" and j.technical_correctness == "INCORRECT"


def test_judgment_alignment_derived_from_conditions():
    text = "\n".join(l for l in GOOD_JUDGMENT.splitlines() if not l.startswith("ALIGNMENT"))
    j = parse_judgment(text, 2)
    assert (j.alignment_met, j.alignment_total) == (2, 2) and j.warnings


@pytest.mark.parametrize("mutation, problem", [
    (lambda t: t.replace("VERDICT: CORRECT", "VERDICT: CORRECT/PARTIALLY CORRECT/INCORRECT"), "several values"),
    (lambda t: t.replace("VERDICT: CORRECT", "VERDICT: it depends"), "VERDICT"),
    (lambda t: t.replace("VERDICT: CORRECT\n", ""), "missing VERDICT"),
    (lambda t: t.replace("VERBOSITY ASSESSMENT: APPROPRIATE", "VERBOSITY ASSESSMENT: [CONCISE | APPROPRIATE | VERBOSE]"), "several"),
    (lambda t: t.replace("VERBOSITY ASSESSMENT: APPROPRIATE\n", ""), "VERBOSITY"),
    (lambda t: t.replace("TECHNICAL CORRECTNESS: CORRECT\n", ""), "TECHNICAL CORRECTNESS"),
    (lambda t: t.replace("ALIGNMENT SCORE: 2/2 CONDITIONS MET (100%)", "ALIGNMENT SCORE: 3/2").replace("CONDITION", "C"), "impossible"),
    (lambda t: "\n".join(l for l in t.splitlines() if not l.startswith(("ALIGNMENT", "CONDITION"))), "ALIGNMENT"),
])
def test_judgment_malformed_is_an_error(mutation, problem):
    with pytest.raises(JudgeParseError, match=problem):
        parse_judgment(mutation(GOOD_JUDGMENT), 2)


def test_json_tool_protocol():
    assert parse_json_tool_call('{"tool": "list_dir", "arguments": {"path": "src"}}', TOOL_NAMES) == ("list_dir", {"path": "src"})
    assert parse_json_tool_call('```json\n{"tool": "list_dir"}\n```', TOOL_NAMES) == ("list_dir", {})
    assert parse_json_tool_call("The answer is to set X.", TOOL_NAMES) is None
    assert parse_json_tool_call('{"config": 1}', TOOL_NAMES) is None  # a JSON answer that is not a tool call
    assert "not valid JSON" in parse_json_tool_call('{"tool": "read_file", "arguments": {"path": "a"', TOOL_NAMES)
    assert "unknown tool" in parse_json_tool_call('{"tool": "bash", "arguments": {"cmd": "ls"}}', TOOL_NAMES)
    assert "must be a JSON object" in parse_json_tool_call('{"tool": "read_file", "arguments": "a.py"}', TOOL_NAMES)
    assert "unexpected keys" in parse_json_tool_call('{"tool": "read_file", "arguments": {}, "then": "answer"}', TOOL_NAMES)
    assert "not valid JSON" in parse_json_tool_call('{"tool": "list_dir"} and then I will answer', TOOL_NAMES)


def test_failed_docker_build_makes_verdict_incorrect(fixture_issue):
    from benchmarks.cab.judge import JudgeAgent
    from reconmem.platform.testing import ScriptedLLM

    llm = ScriptedLLM([GOOD_JUDGMENT, GOOD_JUDGMENT])
    j = JudgeAgent(llm).judge(fixture_issue, "answer", {"success": False, "logs": "boom"})
    assert j.verdict == "INCORRECT" and j.verdict_before_docker == "CORRECT"
    assert "Success: False" in llm.calls[0]["messages"][1]["content"]
    assert JudgeAgent(llm).judge(fixture_issue, "answer", {"success": True, "logs": ""}).verdict == "CORRECT"
