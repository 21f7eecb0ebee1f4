"""Code entity localization (paper §2.2.1, Eq. 5-7) on a small repository built for tie cases."""

from __future__ import annotations

import pytest

from reconmem.platform.code import RepositoryIndex
from reconmem.platform.code.localize import leading_run, normalise_anchor, trailing_run


@pytest.fixture(scope="module")
def tie_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("tie_repo")
    files = {
        "alpha/util.py": "def run():\n    return 1\n\n\ndef run():\n    return 2\n",
        "beta/deep/util.py": "def run():\n    return 3\n\n\nclass Job:\n    def run(self):\n        return 4\n",
        "xx/tool.py": "def go():\n    pass\n",
        "yy/tool.py": "def go():\n    pass\n",
        "pkg/__init__.py": "class Api:\n    def call(self):\n        pass\n",
        "deep/readme.py": "VALUE = 1\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return RepositoryIndex.build(root)


def test_exact_lookup_first(tie_index):
    assert tie_index.localize("beta/deep/util.py/run") == "beta/deep/util.py/run"
    assert tie_index.localize("beta/deep") == "beta/deep"  # directories resolve exactly ...
    assert tie_index.localize("alpha/util.py/run#2") == "alpha/util.py/run#2"


def test_directories_are_never_candidates(tie_index):
    assert tie_index.localize("other/deep") is None  # ... but are not ranked candidates
    assert tie_index.localize("missing") is None


def test_rule_a_trailing_run_beats_leading_run(tie_index):
    # alpha/util.py/run: trailing 2, leading 1; beta/deep/util.py/run: trailing 3, leading 0
    assert tie_index.localize("alpha/deep/util.py/run") == "beta/deep/util.py/run"


def test_rule_b_leading_run_breaks_trailing_ties(tie_index):
    # both trailing 2 (util.py/run); beta/... has leading 1 and wins although its path is longer
    assert tie_index.localize("beta/util.py/run") == "beta/deep/util.py/run"


def test_rule_c_shorter_path_breaks_remaining_ties(tie_index):
    # trailing 2, leading 0 for both files; alpha/util.py/run is the shorter path
    assert tie_index.localize("util.py/run") == "alpha/util.py/run"
    # bare name: 4 candidates (incl. the duplicate run#2 and the method Job/run), all trailing 1 / leading 0
    assert tie_index.localize("run") == "alpha/util.py/run"


def test_rule_d_lexicographic_final_tie_break(tie_index):
    assert tie_index.localize("go") == "xx/tool.py/go"
    assert tie_index.localize("tool.py/go") == "xx/tool.py/go"
    assert tie_index.localize("yy/go") == "yy/tool.py/go"  # leading run decides before the tie-break


def test_method_anchor_and_file_stem_matching(tie_index):
    assert tie_index.localize("Job/run") == "beta/deep/util.py/Job/run"
    assert tie_index.localize("util/Job/run") == "beta/deep/util.py/Job/run"
    assert tie_index.localize("pkg.Api.call") == "pkg/__init__.py/Api/call"  # dotted, package __init__
    assert tie_index.localize("alpha.util.run") == "alpha/util.py/run"
    assert tie_index.localize("wrong.util.run") == "alpha/util.py/run"  # no exact module: ranked like wrong/util/run


def test_normalisation():
    assert normalise_anchor("  ./alpha/util.py/run() ") == "alpha/util.py/run"
    assert normalise_anchor("/alpha//util.py/") == "alpha/util.py"
    assert normalise_anchor("`alpha\\util.py`") == "alpha/util.py"
    assert normalise_anchor("f(x, y)") == "f"


def test_runs():
    assert trailing_run(["a", "x.py", "f"], ["b", "x.py", "f"]) == 2
    assert leading_run(["a", "x.py", "f"], ["a", "y.py", "f"]) == 1
    assert trailing_run(["mod", "C", "m"], ["pkg", "mod.py", "C", "m"]) == 3  # file stem matches
