"""Extraction from replies that copy the shape of an entity shown without its first line's indentation.

A model shown ``@classmethod`` at column 0 above an indented ``def`` and body may answer in the same
shape; the extractor moves the definition back under its decorator. Every reply here is a scripted
reply written in the shape the issue reports (the first line at column 0, the rest as in the file).
"""

from __future__ import annotations

import textwrap

import pytest

from benchmarks.deveval.splice import ExtractionError, extract_completion, splice_body

FILE = textwrap.dedent('''\
    import contextlib


    def require_capability(name):
        def wrap(fn):
            fn.capability = name
            return fn
        return wrap


    class Client:
        def __init__(self, host):
            self.host = host
            self.enabled = []

        @classmethod
        def from_config(cls, conf):
            raise NotImplementedError

        @staticmethod
        def normalise(host):
            raise NotImplementedError

        @require_capability("ENABLE")
        def enable(self, *capabilities):
            raise NotImplementedError

        @contextlib.contextmanager
        def session(self):
            raise NotImplementedError
    ''')

# function name -> (1-based line of its body in FILE, the scripted reply in the copied shape)
COPIED = {
    "from_config": (18, '''Here is the implementation:

```python
# client.py/Client/from_config
@classmethod
    def from_config(cls, conf):
        client = cls(conf["host"])
        return client
```
'''),
    "normalise": (22, '''```python
@staticmethod
    def normalise(host):
        """Lower-case host without a trailing dot."""
        return host.lower().rstrip(".")
```'''),
    "enable": (26, '''```python
@require_capability("ENABLE")
    def enable(self, *capabilities):
        self.enabled.extend(c.upper() for c in capabilities)
        return list(self.enabled)
```'''),
    "session": (30, '''```python
from contextlib import contextmanager

@contextmanager
    def session(self):
        self.enabled.append("SESSION")
        try:
            yield self
        finally:
            self.enabled.remove("SESSION")
```'''),
}


def _spliced_client(name: str, reply: str):
    line, _ = COPIED[name]
    comp = extract_completion(reply, name)
    assert comp.source == "function"
    ns: dict = {}
    exec(compile(splice_body(FILE, line, line, comp.body, 8), "client.py", "exec"), ns)
    return ns["Client"], comp


@pytest.mark.parametrize("name", list(COPIED))
def test_the_copied_shape_is_extracted_and_runs(name):
    client_cls, comp = _spliced_client(name, COPIED[name][1])
    if name == "from_config":
        assert client_cls.from_config({"host": "h"}).host == "h"
    elif name == "normalise":
        assert client_cls.normalise("Mail.Example.") == "mail.example"
        assert comp.body.startswith('"""Lower-case host')
    elif name == "enable":
        assert client_cls("h").enable("a", "b") == ["A", "B"]
        assert client_cls.enable.capability == "ENABLE"  # the file's decorator is kept
    else:
        c = client_cls("h")
        with c.session() as inside:
            assert inside is c and c.enabled == ["SESSION"]
        assert c.enabled == []
        assert comp.moved == ["contextmanager"]


@pytest.mark.parametrize("name", list(COPIED))
def test_the_shape_shown_after_the_fix_still_works(name):
    """The same replies in the shape models see now (decorator and def at column 0)."""
    _, reply = COPIED[name]
    lines = reply.split("\n")
    fixed = "\n".join(ln[4:] if ln.startswith("    ") else ln for ln in lines)
    assert extract_completion(fixed, name).body == extract_completion(reply, name).body


def test_stacked_and_multi_line_decorators_and_a_sibling_method():
    reply = textwrap.dedent('''\
        ```python
        @functools.lru_cache(
                maxsize=None,
            )
            @staticmethod
            def normalise(host):
                if not host:
                    return ""
                return host.lower()

        @classmethod
            def from_config(cls, conf):
                return cls(conf["host"])
        ```''')
    assert extract_completion(reply, "normalise").body == 'if not host:\n    return ""\nreturn host.lower()'
    assert extract_completion(reply, "from_config").body == 'return cls(conf["host"])'


def test_the_copied_shape_without_a_fence():
    reply = ("Sure, this should do it:\n@staticmethod\n    def normalise(host):\n        return host.strip()\n"
             "It strips the host.")
    assert extract_completion(reply, "normalise").body == "return host.strip()"


def test_a_decorator_without_a_definition_is_still_no_code():
    with pytest.raises(ExtractionError):
        extract_completion("```python\n@classmethod\n    x = 1\n```", "from_config")
