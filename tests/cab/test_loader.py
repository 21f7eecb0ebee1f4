"""CAB loader on the real data files (shipped in tests/data/cab) and on malformed records."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.cab.loader import CabDataError, issue_text, load_issues, normalize_language, parse_record
from reconmem.platform.downloads import sha256_file

HERE = Path(__file__).parent
# the upstream files (tests/data/cab/PROVENANCE.md)
UPSTREAM_SHA256 = {
    "cab_verified_lenient.jsonl": "cc8b6892ab497fa51fa7483d338d82fc7580bdd834ea76fa4d611d8856a73c9c",
    "cab_verified_strict.jsonl": "f8ac549dc2dae4082133cb0e399f81a5cbcce8e8ddd1b5a133aa95a2a69f0187",
    "cab_verified_v3.jsonl": "cf63909b3f61047667bcf3861fc68c64e5f376cc18a687684588f91fca4dc0d0",
}


@pytest.fixture(scope="module")
def cab_dir(cab_data: Path) -> Path:
    return cab_data


def test_shipped_files_are_the_upstream_files_with_their_licence(cab_dir):
    assert {p.name: sha256_file(p) for p in sorted(cab_dir.glob("*.jsonl"))} == UPSTREAM_SHA256
    licence = (cab_dir / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert (cab_dir / "NOTICE").read_text().strip() == "Copyright Amazon.com, Inc. or its affiliates. All Rights Reserved."


def test_v3_all_records_parse(cab_dir):
    issues = load_issues(cab_dir / "cab_verified_v3.jsonl")
    assert len(issues) == 274
    assert [i.task_id for i in issues] == [f"cab_verified_{n}" for n in range(1, 275)]
    langs = {}
    for i in issues:
        langs[i.language] = langs.get(i.language, 0) + 1
    assert langs == {"cpp": 86, "c": 74, "javascript": 47, "java": 28, "typescript": 19, "go": 17, "python": 3}
    assert len({i.repo for i in issues}) == 108
    # repository and commit for every record (cab_verified_255 has commit_id null upstream)
    for i in issues:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", i.repo), i.task_id
        assert i.url.startswith(f"https://github.com/{i.repo}/")
        assert i.number == i.url.rstrip("/").rsplit("/", 1)[1]
        assert i.commit_id is None or re.fullmatch(r"[0-9a-f]{40}", i.commit_id), i.task_id
        assert i.satisfaction_conditions and all(isinstance(c, str) for c in i.satisfaction_conditions)
        assert all(c.body is not None for c in i.comments)
    assert [i.task_id for i in issues if i.commit_id is None] == ["cab_verified_255"]
    assert sum(1 for i in issues if i.dockerfile) == 0
    first = issues[0]
    assert first.repo == "78/xiaozhi-esp32" and first.labels == ["bug"] and first.comments  # Python-repr decoded
    pr = issues[89]
    assert pr.task_id == "cab_verified_90" and pr.repo == "geo-tp/ESP32-Bus-Pirate" and "/pull/" in pr.url


def test_strict_duplicates_collapsed(cab_dir):
    raw_lines = (cab_dir / "cab_verified_strict.jsonl").read_text().splitlines()
    assert len(raw_lines) == 95
    issues = load_issues(cab_dir / "cab_verified_strict.jsonl")
    assert len(issues) == 83
    assert len({i.url for i in issues}) == 83
    pairs = {(int(i.task_id.rsplit("_", 1)[1]), int(d.rsplit("_", 1)[1])) for i in issues for d in i.duplicate_task_ids}
    assert pairs == {(7, 82), (27, 83), (28, 32), (31, 85), (47, 68), (51, 63), (56, 93), (57, 62), (58, 72),
                     (61, 74), (70, 71), (78, 94)}
    assert {i.language for i in issues} >= {"cpp", "csharp"}  # c++ / c# normalised
    assert sum(1 for i in issues if i.dockerfile) == 16  # 18 rows, 2 of them duplicates
    # a duplicate's task id selects the kept record
    assert [i.task_id for i in load_issues(cab_dir / "cab_verified_strict.jsonl", task_ids=["cab_strict_82"])] == ["cab_strict_7"]


def test_lenient_parses(cab_dir):
    issues = load_issues(cab_dir / "cab_verified_lenient.jsonl")
    assert len(issues) == 54 and all(i.commit_id for i in issues)


def test_filters(cab_dir):
    path = cab_dir / "cab_verified_v3.jsonl"
    py = load_issues(path, languages=["Python"])
    assert len(py) == 3 and {i.language for i in py} == {"python"}
    assert len(load_issues(path, languages=["c++"])) == 86
    assert [i.task_id for i in load_issues(path, task_ids=["cab_verified_5", "cab_verified_2"])] == ["cab_verified_2", "cab_verified_5"]
    assert len(load_issues(path, limit=7)) == 7
    with pytest.raises(CabDataError, match="cab_verified_999"):
        load_issues(path, task_ids=["cab_verified_999"])
    with pytest.raises(CabDataError, match="benchmark.languages"):
        load_issues(path, languages=["cobol"])


def test_json_list_layout_and_fixture(tmp_path):
    rows = [json.loads(line) for line in (HERE / "fixture_issues.jsonl").read_text().splitlines()]
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(rows, indent=1))
    a = load_issues(p)
    b = load_issues(HERE / "fixture_issues.jsonl")
    assert [i.to_dict() | {"source": ""} for i in a] == [i.to_dict() | {"source": ""} for i in b]
    assert b[0].repo == "example/tinykv" and b[0].comments[0].user == "maintainer"
    assert issue_text(b[0]).startswith("Requests time out after 5 seconds")


def _record(**over):
    base = json.loads((HERE / "fixture_issues.jsonl").read_text().splitlines()[0])
    base.update(over)
    return base


@pytest.mark.parametrize("over, field", [
    ({"url": "https://gitlab.com/a/b/issues/1"}, "url"),
    ({"comments": "[{'user': 'x', 'body': 'unterminated"}, "comments"),
    ({"labels": "{'a': 1}"}, "labels"),
    ({"satisfaction_conditions": []}, "satisfaction_conditions"),
    ({"commit_id": "not-a-sha"}, "commit_id"),
    ({"number": "99"}, "number"),
    ({"title": 5}, "title"),
])
def test_bad_record_errors_name_the_field(tmp_path, over, field):
    p = tmp_path / "bad.jsonl"
    good = _record(task_id="ok_1")
    p.write_text(json.dumps(good) + "\n" + json.dumps(_record(task_id="bad_2", **over)) + "\n")
    with pytest.raises(CabDataError) as err:
        load_issues(p)
    msg = str(err.value)
    assert f"{p}:2" in msg and "bad_2" in msg and field in msg


def test_invalid_json_line_and_missing_task_id(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps(_record()) + "\n{not json\n")
    with pytest.raises(CabDataError, match=r"bad.jsonl:2: invalid JSON"):
        load_issues(p)
    with pytest.raises(CabDataError, match="task_id"):
        parse_record({"url": "x"}, "f:1")
    with pytest.raises(CabDataError, match="not found"):
        load_issues(tmp_path / "missing.jsonl")


def test_language_aliases():
    assert normalize_language("C++") == "cpp" and normalize_language("c#") == "csharp" and normalize_language("Go") == "go"
