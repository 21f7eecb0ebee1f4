"""benchmarks/deveval/data/README.md states the shipped manifest's counts as they are."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.deveval.tasks import SHIPPED_MANIFEST, load_manifest

README = Path(SHIPPED_MANIFEST).with_name("README.md")


def test_readme_counts_match_the_shipped_manifest():
    text = " ".join(README.read_text(encoding="utf-8").split())
    m = re.search(r"for (\d+) DevEval projects \(([\d,]+) tasks, ([\d,]+) of them usable", text)
    assert m, f"{README}: no 'for N DevEval projects (T tasks, U of them usable' sentence"
    projects, tasks, usable = (int(g.replace(",", "")) for g in m.groups())
    manifest = load_manifest()
    entries = manifest.select(None)
    assert projects == len(entries)
    assert tasks == sum(len(e.tasks) for e in entries)
    assert usable == sum(1 for e in entries for t in e.tasks if t.usable)
