"""The export of a demo run opened in ``inspect view`` in a real headless Chromium: the sample page
shows the sample's id, one of its user turns and its per-task scores. A screenshot is kept.

Needs Debian's ``chromium`` and ``chromium-driver`` (``make browser``; ``.ci/run`` installs them and
sets ``RECONMEM_REQUIRE_BROWSER=1``, so there a missing browser fails instead of skipping). The
screenshot goes to ``$RECONMEM_TEST_ARTIFACTS`` (default ``results/test-artifacts/``); its path is
printed. SCRIPTED replies (tests/export/scripted_demo.py)."""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

import browser_kit  # noqa: E402

from benchmarks import records as rec  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _artifacts() -> Path:
    return Path(os.environ.get("RECONMEM_TEST_ARTIFACTS") or ROOT / "results" / "test-artifacts")


@pytest.fixture
def browser_available():
    if browser_kit.browser_binaries() is None:
        if os.environ.get("RECONMEM_REQUIRE_BROWSER") == "1":
            pytest.fail("RECONMEM_REQUIRE_BROWSER=1 but chromium / chromedriver are not installed (make browser)")
        pytest.skip("chromium and chromedriver are not installed (make browser)")


def test_inspect_view_shows_a_demo_sample_in_chromium(browser_available, demo_results, tmp_path, capsys):
    from benchmarks.analysis.inspect_export import export_runs

    written = export_runs([demo_results], tmp_path / "logs", n_resamples=50)
    exported = next(e for e in written if e.run_dir.parent.name == "reconmem")
    sample_dir = exported.run_dir / rec.SAMPLES
    sid = sorted(d.name for d in sample_dir.iterdir())[0]
    result = rec.SampleDir(sample_dir / sid).result()
    turns = rec.SampleDir(sample_dir / sid).conversation()
    user_turn = turns[2]["content"]  # a preparation turn of the conversation, as the user said it
    url_part = urllib.parse.quote(exported.path.name)
    shot = _artifacts() / "inspect_view_demo_sample.png"
    with browser_kit.inspect_view(tmp_path / "logs", tmp_path / "inspect_view.log") as base, \
            browser_kit.chromium(tmp_path / "chromedriver.log") as browser:
        browser.open(f"{base}/#/logs/{url_part}/samples/sample/{urllib.parse.quote(result['sample_id'])}/1/")
        text = browser.wait_text([result["sample_id"], user_turn[:60], "TARGET"], seconds=180)
        browser.screenshot(shot)
    for task in result["tasks"]:  # each task's score as the viewer shows it: its req_id, then C or I
        mark = "C" if task["passed"] else "I"
        assert re.search(rf"\b{re.escape(task['req_id'])}\s+{mark}\b", text), (task, text[:1500])
    assert result["tasks"][0]["namespace"] in text  # the target: the judged functions
    assert shot.stat().st_size > 10_000
    with capsys.disabled():
        print(f"\ninspect view screenshot: {shot}")
