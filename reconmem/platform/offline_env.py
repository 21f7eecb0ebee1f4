"""The process environment an entry point sets before its heavy imports (torch, transformers,
sentence-transformers, litellm, matplotlib read these variables when they are imported).

Call :func:`set_offline_env` first thing in a script; values already in the environment win.
"""

from __future__ import annotations

import os
from typing import Mapping, MutableMapping

# The Hugging Face libraries load local folders only and never ask the hub (models come through
# reconmem.platform.hub, sha256-verified).
HUB_OFFLINE: Mapping[str, str] = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

ENTRY_POINT_ENV: Mapping[str, str] = {
    **HUB_OFFLINE,
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm's bundled price map, no fetch at import
    "TOKENIZERS_PARALLELISM": "false",  # no fork warnings from the Rust tokenizers
    "MPLBACKEND": "Agg",  # figures are written to files, never shown
}


def set_offline_env(environ: MutableMapping[str, str] | None = None) -> None:
    """Set every :data:`ENTRY_POINT_ENV` variable not already set in ``environ`` (default ``os.environ``)."""
    target = os.environ if environ is None else environ
    for name, value in ENTRY_POINT_ENV.items():
        target.setdefault(name, value)
