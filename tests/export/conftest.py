"""Fixtures of the export tests: one scripted run of the demo (SCRIPTED replies, fake evaluator)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def demo_results(tmp_path_factory) -> Path:
    """``results/`` of Full and ReConMem on the three demo samples with scripted replies."""
    import scripted_demo

    root = tmp_path_factory.mktemp("scripted_demo") / "results"
    scripted_demo.run_demo(str(root))
    return root
