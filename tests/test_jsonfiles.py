"""The one reader of JSON files: benchmark data files (JSON lines / JSON list / one object), JSON
lines read leniently (the exchange's answers) and single documents (manifests)."""

from __future__ import annotations

import pytest

from reconmem.platform.jsonfiles import iter_json_records, json_lines, read_json


class DataError(ValueError):
    pass


def test_jsonl_locations_skip_blank_lines(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert list(iter_json_records(p)) == [(f"{p}:1", {"a": 1}), (f"{p}:3", {"a": 2})]


def test_json_list_object_and_wrapped_list(tmp_path):
    lst, one, wrapped = tmp_path / "l.json", tmp_path / "o.json", tmp_path / "w.json"
    lst.write_text('[{"a": 1}, {"a": 2}]')
    one.write_text('{"a": 1}')
    wrapped.write_text('{"samples": [{"a": 3}]}')
    assert [w for w, _ in iter_json_records(lst)] == [f"{lst}[0]", f"{lst}[1]"]
    assert list(iter_json_records(one)) == [(f"{one}[0]", {"a": 1})]
    assert list(iter_json_records(wrapped, list_key="samples")) == [(f"{wrapped}[0]", {"a": 3})]


def test_json_lines_in_a_json_named_file(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{"a": 1}\n{"a": 2}\n')
    assert [r for _, r in iter_json_records(p)] == [{"a": 1}, {"a": 2}]


def test_errors_name_file_line_and_use_the_callers_type(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(DataError, match=r"bad\.jsonl:2: invalid JSON"):
        list(iter_json_records(p, error=DataError))
    q = tmp_path / "list.jsonl"
    q.write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(DataError, match=r"list\.jsonl:2: record is a list, expected an object"):
        list(iter_json_records(q, error=DataError))
    r = tmp_path / "broken.json"
    r.write_text('[{"a": 1},\n {"a": }]')
    with pytest.raises(DataError, match=r"broken\.json:2: invalid JSON"):
        list(iter_json_records(r, error=DataError))


def test_json_lines_report_a_bad_line_and_read_on(tmp_path):
    p = tmp_path / "answers.jsonl"
    p.write_text('{"a": 1}\n\n{"a": \n[2]\n')
    lines = list(json_lines(p))
    assert [(ln.lineno, ln.value) for ln in lines] == [(1, {"a": 1}), (3, None), (4, [2])]
    assert lines[0].error is None and lines[1].error is not None
    assert lines[1].problem().startswith(f"{p}:3: invalid JSON (")


def test_read_json_names_the_file_the_line_and_the_option(tmp_path):
    good, bad = tmp_path / "m.json", tmp_path / "bad.json"
    good.write_text('[{"a": 1}]')
    bad.write_text('[\n{"a": }]')
    assert read_json(good) == [{"a": 1}]
    with pytest.raises(DataError, match=r"bad\.json:2: invalid JSON"):
        read_json(bad, error=DataError)
    with pytest.raises(FileNotFoundError, match=r"^git sources file .*nope\.json not found \(option --git-sources\)$"):
        read_json(tmp_path / "nope.json", name="git sources file", option="--git-sources")
