"""Prompt templates of the LoCoEval benchmark (``string.Template`` syntax: ``$name``)."""

from __future__ import annotations

from reconmem.platform.templates import TemplateDir

# load(name): the text of <name>.txt (trailing newlines removed); render(name, **values) fills it,
# a missing placeholder raises KeyError naming it.
_PROMPTS = TemplateDir(__name__, strip="template")
load = _PROMPTS.text
render = _PROMPTS.render
