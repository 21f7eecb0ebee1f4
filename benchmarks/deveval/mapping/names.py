"""The index name of a DevEval project (its directory name, unless the index spells it otherwise)."""

from __future__ import annotations

INDEX_NAMES = {
    "Database/mongo-doc-manager": "mongo-connector",
}


def index_name(project_path: str) -> str:
    return INDEX_NAMES.get(project_path, project_path.rstrip("/").split("/")[-1])
