"""DevEval's task file (data.jsonl) fetched into place, verified against the shipped checksum
(``python -m scripts.fetch_deveval``).

Source: GitHub seketeam/DevEval, file ``data.tar.gz`` at commit
c1653455e0a18480a29aa07ba51636070f113316 (2024-09-04), which unpacks to ``data.jsonl``
(1,825 tasks). Checksums: benchmarks/deveval/data/data.jsonl.sha256.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from benchmarks.deveval.tasks import DATA_SHA256_FILE
from reconmem.platform.downloads import DownloadError, download_url, sha256_file

COMMIT = "c1653455e0a18480a29aa07ba51636070f113316"
URL = f"https://github.com/seketeam/DevEval/raw/{COMMIT}/data.tar.gz"


def _checksums() -> dict[str, str]:
    out = {}
    for line in DATA_SHA256_FILE.read_text().splitlines():
        if line.strip():
            digest, name = line.split()
            out[name] = digest
    return out


def _extract_jsonl(archive: Path, dest_dir: Path) -> Path:
    with tarfile.open(archive) as tf:
        member = next((m for m in tf.getmembers() if m.name.rsplit("/", 1)[-1] == "data.jsonl"), None)
        if member is None:
            raise DownloadError(f"{archive} holds no data.jsonl")
        member.name = "data.jsonl"
        tf.extract(member, dest_dir, filter="data")
    return dest_dir / "data.jsonl"


def fetch(dest: Path, source: str | None = None, url: str = URL) -> Path:
    """Put a verified data.jsonl at ``dest``; returns ``dest``."""
    sums = _checksums()
    if dest.exists() and sha256_file(dest) == sums["data.jsonl"]:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        tmp = Path(tmp)
        if source:
            src = Path(source)
            jsonl = _extract_jsonl(src, tmp) if src.name.endswith((".tar.gz", ".tgz")) else src
        else:
            archive = download_url(url, tmp / "data.tar.gz", sha256=sums["data.tar.gz"])
            jsonl = _extract_jsonl(archive, tmp)
        got = sha256_file(jsonl)
        if got != sums["data.jsonl"]:
            raise DownloadError(f"{jsonl}: sha256 {got} does not match {sums['data.jsonl']}")
        shutil.copyfile(jsonl, tmp / "final.jsonl")
        os.replace(tmp / "final.jsonl", dest)
    return dest
