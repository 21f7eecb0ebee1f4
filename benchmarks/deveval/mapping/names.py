"""The index names of a DevEval project: its directory name, plus every other name it was published as."""

from __future__ import annotations

# Projects published on the index under other names (all of them are searched, releases merged).
INDEX_NAMES: dict[str, tuple[str, ...]] = {
    "Database/mongo-doc-manager": ("mongo-connector",),
    "Security/zxcvbn-python": ("zxcvbn-python", "zxcvbn"),        # releases from 4.4.28 on are `zxcvbn`
    "Database/arctic-latest": ("arctic-latest", "arctic"),        # man-group's arctic, republished
}


def index_names(project_path: str) -> tuple[str, ...]:
    """Every name to look the project up under, the preferred one first."""
    return INDEX_NAMES.get(project_path, (project_path.rstrip("/").split("/")[-1],))


def index_name(project_path: str) -> str:
    return index_names(project_path)[0]
