"""Repository index on a real project: boltons 23.1.1 (PyPI sdist)."""

from __future__ import annotations

from reconmem.platform.code import DIRECTORY, FILE, FUNCTION, TYPE, VARIABLE

LRI = "boltons/cacheutils.py/LRI"


def test_entity_counts_by_kind_are_pinned(boltons_index):
    # Observed on boltons 23.1.1 (extraction rules in reconmem/platform/code/extract.py); a change here means
    # the extraction changed — update INDEX_VERSION in reconmem/platform/code/index.py along with these numbers.
    assert boltons_index.counts() == {DIRECTORY: 3, FILE: 63, TYPE: 102, FUNCTION: 1187, VARIABLE: 579}
    assert boltons_index.errors == {}
    assert sorted(p for p, e in boltons_index.entities.items() if e.kind == DIRECTORY) == ["boltons", "docs", "tests"]


def test_paths_and_parent_links(boltons_index):
    idx = boltons_index
    assert idx.parent(f"{LRI}/__init__") == LRI
    assert idx.parent(LRI) == "boltons/cacheutils.py"
    assert idx.parent("boltons/cacheutils.py") == "boltons"
    assert idx.parent("boltons") is None
    assert idx.parent("no/such/path") is None
    for path, e in idx.entities.items():  # every parent link points at an existing entity one level up
        if e.parent is not None:
            assert e.parent in idx.entities, path
            assert path.startswith(e.parent + "/"), path
            assert path in idx.children(e.parent)
    kids = idx.children(LRI)
    assert kids[0] == f"{LRI}/__init__"
    assert {f"{LRI}/get", f"{LRI}/pop", f"{LRI}/max_size", f"{LRI}/on_miss", f"{LRI}/hit_count"} <= set(kids)
    assert idx.get(f"{LRI}/max_size").kind == VARIABLE  # self.max_size = ... in __init__
    assert idx.get("boltons/cacheutils.py/DEFAULT_MAX_SIZE").kind == VARIABLE  # module-level assignment
    assert idx.get("boltons/cacheutils.py/_HashedKey/__slots__").kind == VARIABLE  # class attribute
    assert "boltons/cacheutils.py/LRU" in idx.children("boltons/cacheutils.py")


def test_spans_source_and_signatures(boltons_index):
    idx = boltons_index
    lri = idx.get(LRI)
    assert (lri.kind, lri.start_line, lri.end_line, lri.signature) == (TYPE, 103, 338, "class LRI(dict):")
    src = idx.source(LRI)
    assert src.startswith("class LRI(dict):") and src.count("\n") + 1 == lri.end_line - lri.start_line + 1
    get = idx.get(f"{LRI}/get")
    assert get.signature == "def get(self, key, default=None):"
    assert idx.source(f"{LRI}/get").splitlines()[0] == "def get(self, key, default=None):"
    file_lines = idx.source("boltons/cacheutils.py").splitlines()
    assert file_lines[get.start_line - 1].strip() == "def get(self, key, default=None):"
    init = idx.get(f"{LRI}/__init__")
    assert init.signature.startswith("def __init__(self, max_size=DEFAULT_MAX_SIZE, values=None,") and init.signature.endswith("on_miss=None):")
    # decorators belong to the signature and the span; property setters get an occurrence suffix
    path_prop = idx.get("boltons/urlutils.py/URL/path")
    assert path_prop.signature == "@property\n    def path(self):"
    assert path_prop.start_line == 579
    assert idx.get("boltons/urlutils.py/URL/path#2").signature.startswith("@path.setter")


def test_duplicate_names_are_unique_and_deterministic(boltons_index):
    dups = sorted(p for p in boltons_index.entities if "#" in p)
    assert "boltons/urlutils.py/URL/path#2" in dups
    assert "boltons/fileutils.py/atomic_rename#2" in dups  # defined in both branches of a module-level if
    assert len(dups) == 12


def test_localize_partial_anchors(boltons_index):
    loc = boltons_index.localize
    assert loc(LRI) == LRI  # exact
    assert loc("LRI/get") == f"{LRI}/get"  # Class/method
    assert loc("remap") == "boltons/iterutils.py/remap"  # bare function name
    assert loc("wrongdir/cacheutils.py/LRI") == LRI  # wrong directory prefix
    assert loc("cacheutils.py/LRI/__init__") == f"{LRI}/__init__"
    assert loc("./boltons/cacheutils.py/LRI/get()") == f"{LRI}/get"  # normalisation
    assert loc("boltons.cacheutils.LRI.get") == f"{LRI}/get"  # dotted module path
    assert loc("boltons.cacheutils") == "boltons/cacheutils.py"
    assert loc("get") == f"{LRI}/get"  # many `get`s: shortest path wins after equal runs
    assert loc("boltons/cacheutils.py/NoSuchThing") is None
    assert loc("") is None


def test_compressed_class_keeps_signatures_and_drops_bodies(boltons_index):
    text = boltons_index.compress(LRI)
    lines = text.splitlines()
    assert lines[0] == f"# path: {LRI}"
    assert lines[1] == "class LRI(dict):"
    assert "    def get(self, key, default=None):" in lines
    assert "    def pop(self, key, default=_MISSING):" in lines
    assert "    def __init__(self, max_size=DEFAULT_MAX_SIZE, values=None," in lines
    assert "        self.max_size = max_size" in lines  # attributes shown under the __init__ they come from
    assert "self.soft_miss_count += 1" not in text  # body of get()
    assert "return default" not in text
    assert len(text) < len(boltons_index.source(LRI)) / 4
    full = boltons_index.compress(LRI, hcc=False)
    assert full == f"# path: {LRI}\n" + boltons_index.source(LRI)
    # functions are kept in full under HCC
    assert boltons_index.compress(f"{LRI}/get") == f"# path: {LRI}/get\n" + boltons_index.source(f"{LRI}/get").replace("\n    ", "\n")


def test_compressed_file_is_a_recursive_summary(boltons_index):
    text = boltons_index.compress("boltons/cacheutils.py")
    assert text.startswith("# path: boltons/cacheutils.py\n")
    assert "\nclass LRI(dict):\n    def __init__(" in text
    assert "\nclass LRU(LRI):\n    def __getitem__(self, key):\n" in text
    assert "\nDEFAULT_MAX_SIZE = 128\n" in text
    assert "\ndef cached(cache, scoped=True, typed=False, key=None):\n" in text
    assert len(text) < len(boltons_index.source("boltons/cacheutils.py")) / 4
