"""Versioned prompt templates of ReConMem (``<name>.v<version>.txt``, ``$field`` placeholders).

Templates use :class:`string.Template` syntax so JSON braces in them need no escaping. A missing
field is an error naming the template and the field.
"""

from __future__ import annotations

from reconmem.platform.templates import TemplateDir

# The versions ReConMem uses; recorded in the method's state() so runs say which prompts they used.
# memory_update v2 states what each action does to the new unit and adds REMOVE's
# "keep_new"; v1 stays loadable (``ReConMem(update_prompt_version=1)`` replays old caches/records).
PROMPT_VERSIONS = {
    "memory_sketching": 1,
    "memory_update": 2,
    "semantic_context": 1,
    "structural_context": 1,
}


PROMPTS = TemplateDir(__name__, versions=PROMPT_VERSIONS)
load_prompt = PROMPTS.text  # load_prompt(name[, version]): the raw template text
render_prompt = PROMPTS.render  # render_prompt(name[, version], **fields); KeyError names a missing field
