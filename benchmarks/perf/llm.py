"""``python -m scripts.bench llm``: generation speed of a backbone and the response-cache speed-up.

Runs one real prompt (~128 output tokens, temperature 0) through :class:`reconmem.platform.llm.LLMClient`
with a fresh response cache, then the identical call again (a cache hit), and prints two lines:
load time, RSS and tokens/s; then miss vs. hit seconds and their ratio.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
PROMPT = [
    {"role": "system", "content": "You are a helpful coding assistant."},
    {"role": "user", "content": "Write a Python function `parse_iso_date(text)` that parses an ISO-8601 date "
                                "string (YYYY-MM-DD) into a datetime.date, raising ValueError on bad input. "
                                "Include a docstring and two usage examples."},
]


def load_backbone_config(name_or_path: str) -> dict[str, Any]:
    """A backbone node from ``conf/backbone/<name>.yaml`` (or a YAML path), with its ``defaults`` merged."""
    from omegaconf import OmegaConf

    path = Path(name_or_path)
    if not path.suffix:
        path = REPO_ROOT / "conf" / "backbone" / f"{name_or_path}.yaml"
    if not path.is_file():
        raise SystemExit(f"bench llm: no backbone config {path} (try --backbone local)")
    node = OmegaConf.load(path)
    merged = OmegaConf.create({})
    for entry in node.pop("defaults", None) or []:
        if entry != "_self_":
            merged = OmegaConf.merge(merged, load_backbone_config(str(path.with_name(f"{entry}.yaml"))))
    return OmegaConf.to_container(OmegaConf.merge(merged, node), resolve=True)


def rss_gb() -> float:
    """Resident set size of this process in GB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
