"""Scripted replies (not a model's) that also record every prompt a method sends, for
``test_prompts_do_not_depend_on_the_cache_dir``. ``backbone.model=scripted/prompt_recorder:reply``."""

from __future__ import annotations

import json
from typing import Any

import scripted_methods

PROMPTS: list[tuple[str, str]] = []  # (purpose, the request's messages as JSON), in call order


def reply(messages: list[dict[str, Any]], purpose: str) -> str:
    PROMPTS.append((purpose, json.dumps(messages, ensure_ascii=False, sort_keys=True)))
    return scripted_methods.reply(messages, purpose)
