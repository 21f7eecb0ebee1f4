"""Splicing: extraction from replies, re-indentation, body replacement."""

from __future__ import annotations

import ast
import textwrap

import pytest

from benchmarks.deveval.splice import (ExtractionError, extract_completion, is_trivial_body, reindent,
                                       splice_body)

FILE = textwrap.dedent('''\
    import os


    class Box:
        """A box."""

        def size(self, extra=0):
            """Return the size."""
            return 0

        def other(self):
            return 1


    def top(x):
        return None
    ''')


def _splice_method(body: str) -> str:
    # Box.size body is line 9 only (docstring on line 8 stays)
    return splice_body(FILE, 9, 9, body, 8)


def test_fenced_whole_method_with_prose_is_reindented_into_class():
    reply = ("Sure! Here is the implementation:\n\n```python\ndef size(self, extra=0):\n"
             "    total = len(self.items)\n    return total + extra\n```\n\nThis counts the items.")
    comp = extract_completion(reply, "size")
    assert comp.source == "function"
    assert comp.body == "total = len(self.items)\nreturn total + extra"
    new = _splice_method(comp.body)
    assert "        total = len(self.items)\n        return total + extra\n" in new
    assert '"""Return the size."""' in new and "def other(self):" in new
    ast.parse(new)


def test_method_inside_a_class_in_the_reply():
    reply = textwrap.dedent('''\
        ```python
        class Box:
            def other(self):
                return 2

            def size(self, extra=0):
                return 42 + extra
        ```''')
    comp = extract_completion(reply, "size")
    assert comp.body == "return 42 + extra"
    assert "return 2" not in comp.body


def test_decorated_function_and_nested_function_are_kept_whole():
    reply = textwrap.dedent('''\
        @functools.lru_cache(maxsize=None)
        def top(x):
            def helper(y):
                if y:
                    return y * 2
                return 0
            return helper(x)
        ''')
    comp = extract_completion(reply, "top")
    assert comp.body.splitlines() == ["def helper(y):", "    if y:", "        return y * 2", "    return 0",
                                      "return helper(x)"]
    new = splice_body(FILE, 16, 16, comp.body, 4)
    ns: dict = {}
    exec(compile(new, "f", "exec"), ns)
    assert ns["top"](3) == 6


def test_nested_function_with_same_name_is_not_picked():
    reply = "def top(x):\n    def top(y):\n        return -1\n    return x + 1\n"
    comp = extract_completion(reply, "top")
    assert comp.body.endswith("return x + 1")
    assert comp.body.startswith("def top(y):")


def test_body_only_reply_with_wrong_indentation():
    reply = "```\n            if x:\n                return 1\n            return 2\n```"
    comp = extract_completion(reply, "top")
    assert comp.source == "body"
    new = splice_body(FILE, 16, 16, comp.body, 4)
    assert "def top(x):\n    if x:\n        return 1\n    return 2\n" in new


def test_bare_code_with_prose_around_it():
    reply = ("I think this should work.\ndef top(x):\n    return x * 3\nLet me know if you need more.")
    comp = extract_completion(reply, "top")
    assert comp.body == "return x * 3"


def test_imports_and_called_helpers_move_into_the_body():
    reply = textwrap.dedent('''\
        ```python
        from __future__ import annotations
        import re

        def _clean(s):
            return re.sub(r"\\s+", " ", s)

        def top(x):
            return _clean(x)

        def unused():
            pass
        ```''')
    comp = extract_completion(reply, "top")
    assert comp.moved == ["re", "_clean"]
    assert "unused" not in comp.body and "__future__" not in comp.body
    new = splice_body(FILE, 16, 16, comp.body, 4)
    ns: dict = {}
    exec(compile(new, "f", "exec"), ns)
    assert ns["top"]("a   b") == "a b"


def test_one_line_def():
    assert extract_completion("def top(x): return x + 1", "top").body == "return x + 1"


def test_multiline_signature_and_docstring_in_reply():
    reply = 'def top(\n    x,\n):\n    """Doc."""\n    # a comment\n    return x\n'
    comp = extract_completion(reply, "top")
    assert comp.body == '"""Doc."""\n# a comment\nreturn x'


def test_prefers_the_python_block_over_other_blocks():
    reply = "```bash\npip install foo\n```\n```python\ndef top(x):\n    return 7\n```"
    assert extract_completion(reply, "top").body == "return 7"


def test_empty_or_prose_only_reply_raises():
    with pytest.raises(ExtractionError):
        extract_completion("   ", "top")
    with pytest.raises(ExtractionError):
        extract_completion("I cannot do this, sorry (really).", "top")


@pytest.mark.parametrize("body,trivial", [("pass", True), ("...", True), ('"""doc"""\npass', True),
                                          ("", True), ("return 1", False), ("raise NotImplementedError", False)])
def test_trivial_bodies(body, trivial):
    assert is_trivial_body(body) is trivial


def test_reindent_keeps_relative_indentation_and_blank_lines():
    assert reindent("\tif a:\n\t\treturn 1\n\n\treturn 2", 8) == [
        "        if a:", "            return 1", "", "        return 2"]


def test_splice_rejects_out_of_range_lines():
    with pytest.raises(ValueError, match="outside a file"):
        splice_body("a\nb\n", 2, 5, "return 1", 4)
