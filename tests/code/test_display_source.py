"""Code shown to a model (``display_source``) versus code retrieval reads (``source``).

``source`` is the exact byte span of an entity (its first line without its indentation) and feeds the
embeddings and BM25 documents; ``display_source`` is what prompts show: the entity at column 0 as
consistently indented code.
"""

from __future__ import annotations

import ast
import textwrap

from reconmem.platform.code import FUNCTION, TYPE, RepositoryIndex
from reconmem.platform.code.compress import compress_entity
from reconmem.platform.code.retrieval import lexical_text
from reconmem.platform.code.search import entity_text


def _decorated_methods(index: RepositoryIndex) -> list[str]:
    return [p for p, e in index.entities.items()
            if e.kind == FUNCTION and e.parent and index.entities[e.parent].kind == TYPE
            and index.source(p).startswith("@")]


def test_every_decorated_method_of_boltons_is_shown_as_parseable_code_from_its_decorator(boltons_index):
    methods = _decorated_methods(boltons_index)
    assert len(methods) >= 70  # 77 in boltons 23.1.1: @property, @classmethod, @staticmethod, ... 
    kinds = {boltons_index.source(p).split("\n", 1)[0].split("(")[0] for p in methods}
    assert {"@classmethod", "@staticmethod", "@property"} <= kinds
    for path in methods:
        shown = boltons_index.display_source(path)
        assert shown.startswith("@"), path  # the decorator at column 0
        tree = ast.parse(shown)
        assert len(tree.body) == 1 and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)), path
        assert tree.body[0].name == boltons_index.get(path).name and tree.body[0].decorator_list, path
        entity = boltons_index.get(path)
        assert shown == textwrap.dedent(boltons_index.line_prefix(entity) + boltons_index.source(path)), path


def test_the_exact_span_of_a_decorated_method_is_what_did_not_parse(boltons_index):
    """The shape ``display_source`` repairs: the decorator at column 0, the def and body indented."""
    path = "boltons/cacheutils.py/LRI/__init__"
    assert boltons_index.display_source(path).startswith("def __init__(")
    decorated = _decorated_methods(boltons_index)[0]
    raw = boltons_index.source(decorated)
    assert raw.split("\n")[1].startswith("    ")
    try:
        ast.parse(raw)
        parsed = True
    except SyntaxError:
        parsed = False
    assert not parsed


def test_retrieval_reads_the_exact_span_and_prompts_the_display(boltons_index):
    """Embedding texts and BM25 documents are built from ``source`` (rankings unchanged by the display)."""
    decorated = set(_decorated_methods(boltons_index))
    functions = [p for p, e in boltons_index.entities.items() if e.kind == FUNCTION]
    for path in functions:
        e = boltons_index.entities[path]
        assert lexical_text(boltons_index, path) == f"{e.path}\n{e.signature}\n{boltons_index.source(path)}"
        assert entity_text(boltons_index, path) == f"{e.path}\n{e.signature}\n{boltons_index.source(path)[:512]}"
        assert compress_entity(boltons_index, path) == f"# path: {path}\n{boltons_index.display_source(path)}"
    assert any(boltons_index.display_source(p) != boltons_index.source(p) for p in decorated)


def test_display_of_awkward_layouts(tmp_path):
    (tmp_path / "mod.py").write_text(textwrap.dedent('''\
        import contextlib


        class Box:
            @contextlib.contextmanager
            def opened(self):
                """Open the box.

        Text of a docstring left of the method.
                """
                \t
                yield self

            def size(self): return 1


        def top():
            x = 1; y = [
                2]
            return x, y
        '''), encoding="utf-8")
    (tmp_path / "tabs.py").write_text("class T:\n\t@staticmethod\n\tdef f():\n\t\treturn 2\n", encoding="utf-8")
    index = RepositoryIndex.build(tmp_path, cache_dir=False)
    opened = index.display_source("mod.py/Box/opened")
    assert opened.startswith("@contextlib.contextmanager\ndef opened(self):\n    \"\"\"Open the box.\n\n")
    assert "\nText of a docstring left of the method.\n" in opened  # a line left of the def keeps its text
    assert "\n\n    yield self" in opened  # the whitespace-only line is blank
    ast.parse(opened)
    assert index.display_source("mod.py/Box/size") == "def size(self): return 1"
    assert index.display_source("tabs.py/T/f") == "@staticmethod\ndef f():\n\treturn 2"
    assert index.display_source("mod.py") == index.source("mod.py")
    assert index.display_source("mod.py/top") == index.source("mod.py/top")  # already at column 0
