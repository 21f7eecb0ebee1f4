"""The one prompt-template helper every prompt directory uses."""

from __future__ import annotations

import pytest

from baselines import prompts as baseline_prompts
from benchmarks.cab.prompts import render_prompt as cab_render
from benchmarks.locoeval import prompts as locoeval_prompts
from reconmem.memory.prompts import render_prompt
from reconmem.platform.templates import TemplateDir, fill


def test_fill_keeps_json_braces_and_dollar_escape():
    assert fill('{"a": $x, "cost": "$$5"}', "inline", x=1) == '{"a": 1, "cost": "$5"}'


def test_missing_placeholder_names_file_and_placeholder():
    with pytest.raises(KeyError, match=r"baselines/prompts/mem0_recall.txt needs a value for \$memories"):
        baseline_prompts.render("mem0_recall")
    with pytest.raises(KeyError, match=r"benchmarks/locoeval/prompts/task_query.txt needs a value for \$query"):
        locoeval_prompts.render("task_query", name="f", file="x.py", signature="def f(): ...")
    with pytest.raises(KeyError, match=r"reconmem/memory/prompts/memory_update.v2.txt"):
        render_prompt("memory_update")
    with pytest.raises(KeyError, match=r"benchmarks/cab/prompts/user_turn.txt"):
        cab_render("user_turn.txt")


def test_missing_file_is_named():
    with pytest.raises(FileNotFoundError, match=r"baselines/prompts/no_such.txt"):
        TemplateDir("baselines.prompts").text("no_such.txt")
    with pytest.raises(KeyError, match="unknown prompt template 'nope'"):
        render_prompt("nope")


def test_locoeval_json_example_survives_rendering():
    text = locoeval_prompts.render("builder_mutate", namespace="boltons.x.f", item="keeps order")
    assert '{"text": "..."}' in text and "boltons.x.f" in text
