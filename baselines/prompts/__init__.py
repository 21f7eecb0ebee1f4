"""Prompt templates of the baselines, one text file each (``string.Template`` syntax: ``$name``).

``render(name, **values)`` fills ``baselines/prompts/<name>.txt`` (surrounding whitespace stripped);
a missing placeholder is a KeyError naming it.
"""

from __future__ import annotations

from reconmem.platform.templates import TemplateDir

PROMPTS = TemplateDir(__name__, strip="rendered")
render = PROMPTS.render
