"""The fork catalogue on small functions: each kind's sites, fork bodies, statements and refusals."""

from __future__ import annotations

import ast

import pytest

from benchmarks.locoeval.fork.catalogue import (CatalogueError, ExceptionFamily, Target, apply_changes,
                                                apply_to_text, overlapping, propose)
from fork_fixtures import EXCEPTIONS

MODULE = '''import time


''' + EXCEPTIONS + '''

def fetch(url, opts, retries=3):
    """Fetch ``url`` -- the docstring's 30 and ',' are not sites."""
    timeout = opts.get("timeout", 30)
    if len(url) > 200:
        raise TooLong("more than 200 characters, joined by ','")
    if not isinstance(url, str):
        raise ValueError("not a string")
    parts = url.split(",")
    key = ",".join(parts)
    stamp = time.strftime("%Y-%m-%d")
    time.sleep(5)
    width = 2 * len(parts)
    audit.record(url)
    cache.clear()
    return "; ".join(parts) + "%.2f" % timeout + stamp + str(width + retries) + key
'''


def _target(text: str = MODULE, name: str = "fetch") -> Target:
    return Target.of_function(text, name, exceptions=ExceptionFamily.of_files({"m.py": text}))


def _by_kind(changes):
    out = {}
    for c in changes:
        out.setdefault(c.kind, []).append(c)
    return out


def test_every_kind_finds_its_site_and_the_fork_body_parses():
    t = _target()
    kinds = _by_kind(propose(t))
    assert [(c.public_text, c.fork_text) for c in kinds["default"]] == [("30", "60")]
    assert [(c.public_text, c.fork_text) for c in kinds["scale"]] == [("5", "10")]
    assert [(c.public_text, c.fork_text) for c in kinds["bound"]] == [("200", "201")]
    assert [c.fork_value for c in kinds["strictness"]] == [">="]
    assert [c.fork_fragment for c in kinds["separator"]] == [      # url.split(","): splitting input is no site
        'key = ";".join(parts)', 'return ", ".join(parts) + "%.2f" % timeout + stamp + str(width + retries) + key']
    assert sorted(c.fork_text for c in kinds["format"]) == ['"%.3f"', '"%d/%m/%Y"']
    assert sorted(c.fork_text for c in kinds["exception"]) == ["Empty", "TypeError"]
    assert [c.fork_fragment for c in kinds["order"]] == ["cache.clear(); audit.record(url)"]
    for c in propose(t):
        body = apply_changes(t, [c])
        assert body != t.body()
        ast.parse("def f():\n" + "\n".join("    " + ln for ln in body.splitlines()))
        assert c.fork_value != c.public_value


def test_no_site_in_docstrings_messages_arithmetic_or_indices():
    t = _target()
    touched = {c.public_text for c in propose(t)}
    assert "2" not in touched                         # an operand of arithmetic is no setting
    assert not any("more than" in c.fragment for c in propose(t) if c.kind != "exception")
    doc_line = MODULE.splitlines().index('    """Fetch ``url`` -- the docstring\'s 30 and \',\' are not sites."""') + 1
    assert all(c.lines[0] != doc_line for c in propose(t))


def test_statements_name_the_fork_value_and_only_the_revision_both():
    t = _target()
    sep = next(c for c in propose(t) if c.kind == "separator" and c.public_value == "','")
    assert "';'" in sep.statement and "','" not in sep.statement
    assert "','" in sep.public_statement and "';'" not in sep.public_statement
    assert "';'" in sep.revision and "','" in sep.revision


def test_exception_sibling_needs_the_same_base_and_a_name_the_module_binds():
    fam = ExceptionFamily.of_files({"m.py": MODULE, "other.py": "class Stray(KeyError):\n    pass\n\n\n"
                                    "class Far(Error):\n    pass\n\n\nclass Loose(Exception):\n    pass\n"})
    assert fam.siblings("TooLong") == [("Empty", "m.py"), ("Far", "other.py")]
    assert fam.siblings("Stray") == []
    assert fam.siblings("Error") == []                   # Exception is a builtin base: same file only
    plain = MODULE.replace("if not isinstance(url, str):", "if not url:")
    t = Target.of_function(plain, "fetch", exceptions=ExceptionFamily.of_files({"m.py": plain}))
    assert [c.fork_text for c in propose(t) if c.kind == "exception"] == ["Empty"]  # no ValueError -> TypeError


def test_order_refuses_dependent_or_accumulating_statements():
    src = ("def f(a, out):\n    x = g(a)\n    out.append(a)\n    out.append(x)\n    h(x)\n    k(a)\n"
           "    log.debug(a)\n    m(a)\n")
    t = Target.of_function(src, "f")
    assert [c.fork_fragment for c in propose(t) if c.kind == "order"] == ["k(a); h(x)"]


def test_several_changes_apply_together_and_overlaps_are_refused():
    t = _target()
    changes = propose(t)
    sep = next(c for c in changes if c.kind == "separator")
    exc = next(c for c in changes if c.kind == "exception")
    both = apply_changes(t, [sep, exc])
    assert '";".join(parts)' in both and "raise Empty(" in both
    bound = next(c for c in changes if c.kind == "bound")
    strict = next(c for c in changes if c.kind == "strictness")
    assert overlapping(bound, strict)
    with pytest.raises(CatalogueError):
        apply_to_text(MODULE, [sep, sep])


def test_positions_probes_comparisons_and_dates_are_no_sites():
    src = ('def f(m, o, name, dt, data):\n    """Doc."""\n    g = m.group(3)\n    head = data.read(4)\n'
           '    frozen = getattr(o, "frozen", False)\n    if name.lower() == "x":\n        return "%02d" % dt.day\n'
           '    key = "on_" + name.upper()\n    return name.lower()\n')
    kinds = _by_kind(propose(Target.of_function(src, "f")))
    assert "scale" not in kinds and "default" not in kinds and "format" not in kinds
    assert [c.fork_fragment for c in kinds["case"]] == ["return name.upper()"]


def test_an_unknown_function_is_a_clear_error():
    with pytest.raises(CatalogueError, match="no function 'nope'"):
        Target.of_function(MODULE, "nope")


def test_a_change_refuses_a_text_that_is_not_its_release():
    t = _target()
    sep = next(c for c in propose(t) if c.kind == "separator")
    with pytest.raises(CatalogueError, match="not"):
        apply_to_text(MODULE.replace('",".join(parts)', '"|".join(parts)'), [sep])


SETTINGS = '''def f(url, items, name, data):
    """Doc."""
    if url.scheme in ("http", "https", "ftp"):
        out = json.dumps(items, sort_keys=True)
    if url.kind not in ("a", "b"):
        return name.lower()
    blob = name.encode("utf-8")
    for i in sorted(items):
        pass
    items.sort(key=len)
    if len(items) < self.max_size:
        return 1
    return data.decode("ascii")
'''


def test_setting_kinds_flag_membership_case_sort_encoding():
    kinds = _by_kind(propose(Target.of_function(SETTINGS, "f")))
    assert [c.fork_fragment for c in kinds["flag"]] == ["out = json.dumps(items, sort_keys=False)"]
    assert sorted(c.fork_fragment for c in kinds["membership"]) == ['url.kind not in ("a",)',
                                                                    'url.scheme in ("http", "https")']
    assert [c.fork_fragment for c in kinds["case"]] == ["return name.upper()"]
    assert sorted(c.fork_fragment for c in kinds["sort"]) == ["items.sort(key=len, reverse=True)",
                                                              "sorted(items, reverse=True)"]
    assert sorted(c.fork_fragment for c in kinds["encoding"]) == ['blob = name.encode("latin-1")',
                                                                  'return data.decode("utf-8")']
    assert [c.fork_fragment for c in kinds["strictness"]] == ["len(items) <= self.max_size"]
    member = next(c for c in kinds["membership"] if "ftp" in c.fragment)
    assert '"ftp"' in member.statement and '"ftp"' not in member.fork_fragment


def test_side_takes_the_other_end_only_where_that_differs():
    src = ("def f(line, items):\n    key, _, value = line.partition('=')\n    head = line.split(':', 1)\n"
           "    parts = line.split(':')\n    at = line.find('#')\n    i = items.index(3)\n    return key, head, at\n")
    kinds = _by_kind(propose(Target.of_function(src, "f")))
    assert sorted(c.fork_fragment for c in kinds["side"]) == ["at = line.rfind('#')", "head = line.rsplit(':', 1)",
                                                             "key, _, value = line.rpartition('=')"]


def test_rich_comparison_methods_keep_their_operators():
    src = "class V:\n    def __lt__(self, other):\n        return self.size < other.size\n"
    assert [c for c in propose(Target.of_function(src, "V.__lt__")) if c.kind == "strictness"] == []


GUARDS = '''def f(items, name, cfg, pattern=None):
    """Doc: if items is None the docstring is no site."""
    if items is None:
        items = []
    if cfg.limit is not None and name:
        pass
    if not items:
        return []
    if not pattern:
        return True
    if cfg.ready:
        return False
    if name == "x":
        return ''
    while cfg.next is None:
        cfg = cfg.parent
    done = cfg.last is None
    first = cfg.first if cfg.first is not None else name
    return [n for n in items if n is not None], done, first, cfg.head is not None
'''


def test_missing_treats_an_empty_value_as_none_only_in_if_and_while_headers():
    t = Target.of_function(GUARDS, "f")
    kinds = _by_kind(propose(t))
    assert [(c.fragment, c.fork_fragment) for c in kinds["missing"]] == [
        ("if items is None:", "if not items:"), ("if cfg.limit is not None and name:", "if cfg.limit and name:"),
        ("while cfg.next is None:", "while not cfg.next:"),
        ("first = cfg.first if cfg.first is not None else name", "first = cfg.first if cfg.first else name"),
        ("return [n for n in items if n is not None], done, first, cfg.head is not None",
         "return [n for n in items if n], done, first, cfg.head is not None"),
    ]        # not the assignment; cfg.head is part of a returned tuple, not the value returned
    ch = kinds["missing"][0]
    assert "`if not items:`" in ch.statement and "is None" not in ch.statement
    assert "`if items is None:`" in ch.public_statement and "`if not items:`" in ch.revision
    returned = Target.of_function("def g(x):\n    return x.y is not None\n", "g")
    assert [c.fork_fragment for c in propose(returned)] == ["return bool(x.y)"]
    for c in kinds["missing"]:
        ast.parse("def g():\n" + "\n".join("    " + ln for ln in apply_changes(t, [c]).splitlines()))


def test_empty_changes_what_a_guard_returns_for_the_empty_case():
    t = Target.of_function(GUARDS, "f")
    kinds = _by_kind(propose(t))
    assert sorted((c.fragment, c.fork_fragment) for c in kinds["empty"]) == [
        ("if name == \"x\": return ''", 'if name == "x": return None'),
        ("if not items: return []", "if not items: return None"),
        ("if not pattern: return True", "if not pattern: return False")]   # cfg.ready is no emptiness test
    ch = next(c for c in kinds["empty"] if c.public_text == "True")
    assert "`False`" in ch.statement and "True" not in ch.statement
    assert "return None" in apply_changes(t, [c for c in kinds["empty"] if c.public_text == "[]"])


def test_strip_key_base_and_rounding_sites():
    src = '''def build(rows, user_id, total, parts):
    """Doc."""
    out = {"user_id": user_id, "name": rows[0].strip(), "itemCount": len(rows)}
    out["created_at"] = now()
    seen = {"read_key": 1}
    for i, row in enumerate(rows):
        lines.append("%d: %s" % (i, row.rstrip("\\n")))
    for j, row in enumerate(rows):
        rows[j] = row
    pages = math.ceil(total / 10)
    half = math.floor(total / 2)
    share = int(total / parts)
    out["ratio"] = round(total / parts, 2)
    if seen["read_key"]:
        pass
    return out
'''
    t = Target.of_function(src, "build")
    kinds = _by_kind(propose(t))
    assert sorted(c.fork_text for c in kinds["key"]) == ['"createdAt"', '"item_count"', '"userId"']  # not read_key
    assert sorted(c.fork_fragment for c in kinds["strip"]) == [
        'lines.append("%d: %s" % (i, row.strip("\\n")))',
        'out = {"user_id": user_id, "name": rows[0].rstrip(), "itemCount": len(rows)}']
    assert [c.fork_fragment for c in kinds["base"]] == ["enumerate(rows, 1)"]   # j is an index: no site
    assert sorted(c.fork_fragment for c in kinds["rounding"]) == [
        "half = math.ceil(total / 2)", 'out["ratio"] = round(total / parts, 3)', "share = round(total / parts)"]
    # pages = math.ceil(...): a number of pieces rounds up, no site
    for c in propose(t):
        body = apply_changes(t, [c])
        ast.parse("def g():\n" + "\n".join("    " + ln for ln in body.splitlines()))
        assert c.public_value not in c.statement or c.public_value in c.fork_value


def test_fstring_separators_only_in_output_text_and_type_errors_become_value_errors():
    src = '''def show(k, v, host, port):
    """Doc."""
    if not isinstance(k, str):
        raise TypeError(f"bad {k}: {v}")
    log.info(f"{k}: {v}")
    url = f"{host}:{port}"
    return f"{k}: {v}"
'''
    t = Target.of_function(src, "show")
    kinds = _by_kind(propose(t))
    assert [c.fork_fragment for c in kinds["format"]] == ['return f"{k} - {v}"']   # not the message, log, address
    assert [c.fork_text for c in kinds["exception"]] == ["ValueError"]


def test_catalogue_7_kinds_propose_the_same_changes_as_before():
    """The screening carries a row forward when its proposals did not change: the kinds that catalogue 7
    had keep their keys, fork texts and statements (pinned from catalogue 7)."""
    got = [(c.key, c.fork_text) for c in propose(_target())]
    assert got == [("default:18:34", "60"), ("strictness:19:7", " >= "), ("bound:19:18", "201"),
                   ("exception:20:14", "Empty"), ("exception:22:14", "TypeError"), ("separator:24:10", '";"'),
                   ("format:25:26", '"%d/%m/%Y"'), ("scale:26:15", "10"),
                   ("order:28:4", "cache.clear()\n    audit.record(url)"), ("separator:30:11", '", "'),
                   ("format:30:30", '"%.3f"')]
    got = [(c.key, c.fork_text) for c in propose(Target.of_function(SETTINGS, "f"))]
    assert got == [("membership:3:39", ""), ("flag:4:42", "False"), ("membership:5:29", ","), ("case:6:15", "upper"),
                   ("encoding:7:23", '"latin-1"'), ("sort:8:13", "sorted(items, reverse=True)"),
                   ("sort:10:4", "items.sort(key=len, reverse=True)"), ("strictness:11:7", " <= "),
                   ("encoding:13:23", '"utf-8"')]
    sep = next(c for c in propose(_target()) if c.key == "separator:24:10")
    assert sep.statement == 'A decision for `fetch`: we use \';\' as the separator -- `key = ";".join(parts)`.'


ABSENT = '''class Session(dict):
    def peek(self, queue=""):
        """Doc."""
        storage = self.get("_f_" + queue, [])
        return storage

    def count(self, info):
        return info["Table"].get("ItemCount", 0)

    def appended(self, queue):
        storage = self.get(queue, [])
        storage.append(1)
        return storage

    def values(self, queue):
        return list(self.get(queue, {}).values())

    def timeout(self, opts):
        return opts.get("timeout", 30)
'''


def test_absent_gives_none_only_where_the_fallback_is_returned_as_it_is():
    def absent(name):
        return [(c.public_text, c.fork_fragment) for c in propose(Target.of_function(ABSENT, f"Session.{name}"))
                if c.kind == "absent"]
    assert absent("peek") == [("[]", 'storage = self.get("_f_" + queue, None)')]
    assert absent("count") == [("0", 'return info["Table"].get("ItemCount", None)')]
    assert absent("appended") == [] and absent("values") == []     # used further: None would crash
    assert absent("timeout") == []                                   # a number: the ``default`` kind's
    ch = propose(Target.of_function(ABSENT, "Session.peek"))[0]
    assert "`None`" in ch.statement and "[]" not in ch.statement
    assert "[]" in ch.public_statement and "None" not in ch.public_statement
    assert "None" in ch.revision and "[]" in ch.revision


COLLECTION = '''def bootstraps(names, kind):
    """Doc."""
    forbidden = ("__pycache__", "common")
    shown = ["a", "b", "c"]
    print(shown)
    flags = {"x", "y", True}
    out = set()
    for name in names:
        if name in forbidden or kind not in flags:
            continue
        out.add(name)
    return out
'''


def test_collection_leaves_out_the_last_element_of_a_local_set_only_tested_with_in():
    t = Target.of_function(COLLECTION, "bootstraps")
    got = [c for c in propose(t) if c.kind == "collection"]
    assert [c.fork_fragment for c in got] == ['forbidden = ("__pycache__",)']   # shown is printed; flags has a bool
    ch = got[0]
    assert '"common"' in ch.statement and "`forbidden`" in ch.statement
    assert 'forbidden = ("__pycache__",)' in apply_changes(t, [ch])
    assert '"common"' in ch.public_statement and ch.fork_fragment in ch.revision and ch.fragment in ch.revision
    assert ch.notes[-1] == '"common"'                 # what a requirement text would name


CODECS = '''def convert(value, raw, name):
    """Doc."""
    text = value.decode(errors="surrogateescape")
    data = raw.encode("utf-8", "strict")
    other = raw.encode("ascii", "replace") + raw.encode("utf-8", "bogus")
    if name.startswith(("W/", "w/")):
        name = name[2:]
    if name.endswith((".py", ".pyc", ".pyo")) or name.startswith(prefixes):
        return text, data, other
    return name
'''


def test_errors_swaps_the_codec_error_handler_and_affix_drops_the_last_accepted_prefix():
    t = Target.of_function(CODECS, "convert")
    kinds = _by_kind(propose(t))
    assert [c.fork_fragment for c in kinds["errors"]] == ['text = value.decode(errors="replace")',
                                                         'data = raw.encode("utf-8", "replace")',
                                                         'other = raw.encode("ascii", "ignore") + raw.encode("utf-8", "bogus")']
    assert [c.fork_fragment for c in kinds["affix"]] == ['name.startswith(("W/",))',
                                                        'name.endswith((".py", ".pyc")) or name.startswith(prefixes)']
    err = kinds["errors"][0]
    assert "'replace'" in err.statement and "surrogateescape" not in err.statement
    assert "'surrogateescape'" in err.public_statement and "'replace'" in err.revision
    assert [c.notes[-1] for c in kinds["affix"]] == ['"w/"', '".pyo"']
    assert '"w/"' in kinds["affix"][0].statement and 'startswith(("W/",))' in apply_changes(t, [kinds["affix"][0]])
