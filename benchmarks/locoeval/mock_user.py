"""The mock user: writes each user query from the outline step and the previous assistant reply.

Scripted steps (``text`` set) are returned verbatim without any LLM call; otherwise one call with
purpose ``mock_user`` on the user backbone (``cfg.user_backbone``; Gemini-2.5-Flash in the papers).
For steps that convey information (info / distractor / revision) the item texts are given to the
mock user as facts to state verbatim, so the GT information really enters the conversation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks.locoeval.prompts import render
from benchmarks.locoeval.schema import CONVEYING_KINDS, OutlineStep, Sample

if TYPE_CHECKING:
    from reconmem.platform.llm import LLMClient

MAX_PREVIOUS_CHARS = 2000  # the previous reply is cut to this many characters in the user prompt


class MockUser:
    """Generates user queries for one sample's outline."""

    def __init__(self, llm: "LLMClient | None", *, max_tokens: int = 200) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.calls = 0
        self.empty_fallbacks = 0  # empty replies on conveying steps answered with the step's facts

    def facts_for(self, sample: Sample, step: OutlineStep) -> list[str]:
        """Texts of the items the step refers to (to be stated verbatim for conveying steps)."""
        items = sample.items_by_id()
        return [items[i].text for i in step.item_ids if i in items]

    def messages_for(self, sample: Sample, step: OutlineStep, previous: str | None) -> list[dict[str, str]]:
        """The chat messages of the mock-user call for ``step``."""
        facts = self.facts_for(sample, step)
        if facts and step.kind in CONVEYING_KINDS:
            facts_block = "Facts to state (verbatim):\n" + "\n".join(f"- {f}" for f in facts)
        elif facts:
            facts_block = "Earlier facts this step refers to (ask about them, do not restate them):\n" + \
                "\n".join(f"- {f}" for f in facts)
        else:
            facts_block = ""
        prev = (previous or "(this is the first message of the conversation)")[-MAX_PREVIOUS_CHARS:]
        return [
            {"role": "system", "content": render("mock_user_system", project=sample.project_path)},
            {"role": "user", "content": render("mock_user_turn", previous=prev, kind=step.kind,
                                               brief=step.brief, facts=facts_block)},
        ]

    def query_for(self, sample: Sample, step: OutlineStep, previous: str | None) -> str:
        """The user's query for ``step``: the scripted text, or one mock-user LLM call."""
        if step.text:
            return step.text
        if self.llm is None:
            raise RuntimeError(f"sample {sample.id!r} turn {step.turn}: the step has no scripted text and no "
                               "user backbone is configured (cfg.user_backbone)")
        resp = self.llm.chat(self.messages_for(sample, step, previous), purpose="mock_user", max_tokens=self.max_tokens)
        self.calls += 1
        text = resp.text.strip().strip('"').strip()
        if text:
            return text
        # An empty mock-user reply must not hand the outline's brief (an author label) to the method.
        # A conveying step falls back to its facts, which the mock user was told to state verbatim;
        # any other step errors the sample (counted as failed tasks, retried on resume).
        facts = self.facts_for(sample, step)
        if facts and step.kind in CONVEYING_KINDS:
            self.empty_fallbacks += 1
            return "\n".join(facts)
        raise RuntimeError(f"sample {sample.id!r} turn {step.turn}: the mock user returned an empty query "
                           f"(finish_reason={resp.finish_reason!r}); raise benchmark.user_max_tokens "
                           f"(now {self.max_tokens}) if the user model spends its budget on thinking")
