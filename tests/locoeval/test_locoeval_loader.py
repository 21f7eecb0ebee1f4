"""Sample format, loader errors (sample id + field path), sources and the official-layout converter."""

from __future__ import annotations

import copy
import json

import pytest

from benchmarks.locoeval.convert import convert_record, is_official_record
from benchmarks.locoeval.loader import load_samples
from benchmarks.locoeval.schema import SampleError, parse_sample, validate_sample
from conftest import tiny_sample, write_samples


def test_valid_sample_parses(tiny_repo):
    s = parse_sample(tiny_sample(tiny_repo))
    assert s.id == "tiny-1" and s.requirements[0].function_name == "add"
    assert s.outline[1].item_ids == ("R1.D1",) and s.outline[0].scripted
    assert s.repo_spec["project_path"] == "Tiny/tinyrepo"


@pytest.mark.parametrize("mutate, where, what", [
    (lambda s: s.pop("subset"), "<root>", "'subset' is a required property"),
    (lambda s: s.update(subset="two-hop"), "subset", "is not one of"),
    (lambda s: s["requirements"][0].pop("signature"), "requirements[0]", "'signature' is a required property"),
    (lambda s: s["requirements"][0]["distractors"][0].update(revised_by="R1.I9"),
     "requirements[0].distractors[0].revised_by", "unknown gt item 'R1.I9'"),
    (lambda s: s["outline"][2].update(turn=7), "outline[2].turn", "numbered 1..3"),
    (lambda s: s["outline"][1].update(item_ids=["R1.X"]), "outline[1].item_ids[0]", "unknown item 'R1.X'"),
    (lambda s: s["outline"][2].update(kind="info"), "requirements[0].distractors[0]", "never revised"),
    (lambda s: s["outline"][1].pop("item_ids"), "outline[1]", "'item_ids' is a required property"),
    (lambda s: s["tasks"][0].update(req_id="R2"), "tasks[0].req_id", "unknown requirement 'R2'"),
    (lambda s: s["requirements"][0]["gt_items"].append({"id": "R1.I1", "text": "dup"}),
     "requirements[0].gt_items[1].id", "duplicate item id"),
    (lambda s: s["repo"].pop("path"), "repo", "'path' is a required property"),
])
def test_errors_name_sample_and_field(tiny_repo, mutate, where, what):
    obj = copy.deepcopy(tiny_sample(tiny_repo))
    mutate(obj)
    with pytest.raises(SampleError) as err:
        validate_sample(obj, where="f.jsonl:3")
    msg = str(err.value)
    assert msg.startswith("f.jsonl:3: sample 'tiny-1': " + where), msg
    assert what in msg


def test_loader_reports_file_line(tiny_repo, tmp_path):
    good = tiny_sample(tiny_repo, "a")
    bad = tiny_sample(tiny_repo, "b")
    bad["requirements"][0]["tests"] = []
    path = write_samples(tmp_path / "s.jsonl", [good, bad])
    with pytest.raises(SampleError, match=r"s\.jsonl:2: sample 'b': requirements\[0\]\.tests"):
        load_samples(path)
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(SampleError, match=r"s\.jsonl:2: invalid JSON"):
        load_samples(path)
    write_samples(path, [good, good])
    with pytest.raises(SampleError, match="duplicate id"):
        load_samples(path)


def test_ids_limit_and_sources(tiny_repo, tmp_path):
    path = write_samples(tmp_path / "s.jsonl", [tiny_sample(tiny_repo, f"s{i}") for i in range(4)])
    assert [s.id for s in load_samples(path, limit=2)] == ["s0", "s1"]
    assert [s.id for s in load_samples(path, ids=["s3", "s1"])] == ["s1", "s3"]
    with pytest.raises(SampleError, match=r"run.ids: unknown id\(s\) \['nope'\]"):
        load_samples(path, ids=["nope"])
    (tmp_path / "list.json").write_text(json.dumps([tiny_sample(tiny_repo, "j")]))
    assert [s.id for s in load_samples(tmp_path / "list.json")] == ["j"]
    with pytest.raises(SampleError, match="does not exist"):
        load_samples(tmp_path / "missing.jsonl")
    demo = load_samples("package:benchmarks.locoeval/demo/samples.jsonl")
    assert len(demo) >= 3


def test_hf_source_through_datasets(tiny_repo, tmp_path):
    """``hf:<dataset>[:split]`` goes through datasets.load_dataset (here a local data directory)."""
    d = tmp_path / "hfdata"
    d.mkdir()
    obj = tiny_sample(tiny_repo, "hf-1")
    (d / "test.jsonl").write_text(json.dumps(obj) + "\n")
    samples = load_samples(f"hf:{d}")  # split "test" from test.jsonl
    assert [s.id for s in samples] == ["hf-1"]
    with pytest.raises(SampleError, match="cannot load Hugging Face dataset"):
        load_samples(f"hf:{tmp_path / 'nothing-here'}")


def test_converter_official_layout():
    row = {
        "sample_id": "loco-7", "type": "multi_hop", "project": "Utilities/boltons",
        "tasks": [{"namespace": "boltons.mathutils.clamp", "completion_path": "boltons/mathutils.py",
                   "signature": "def clamp(x, lower=float('-inf'), upper=float('inf')):",
                   "tests": ["tests/test_mathutils.py::test_clamp_examples"],
                   "information": ["clamp returns min(max(x, lower), upper)", {"content": "raise ValueError if upper < lower"}],
                   "distractions": [{"text": "swap the bounds", "original": 1}]}],
        "query_outlines": [
            {"type": "new_requirement", "outline": "introduce clamp", "namespace": "boltons.mathutils.clamp"},
            {"type": "mutation", "outline": "say swap", "items": [2]},
            {"type": "noisy_input", "outline": "ask about pip"},
            {"type": "correction", "outline": "fix it", "items": ["R1.I2"]},
        ],
    }
    assert is_official_record(row)
    obj = convert_record(row, where="official.jsonl:1")
    s = parse_sample(obj)
    assert s.subset == "multi-hop" and s.repo["provider"] == "deveval_archive"
    assert [st.kind for st in s.outline] == ["requirement", "distractor", "noise", "revision"]
    assert s.requirements[0].distractors[0].revised_by == "R1.I2"
    assert s.outline[1].item_ids == ("R1.D1",)
    assert not is_official_record(obj)
    with pytest.raises(SampleError, match=r"requirements\[0\]\.signature"):
        convert_record({**row, "tasks": [{**row["tasks"][0], "signature": None}]}, where="x")


def test_loader_warns_on_a_task_scored_twice(tmp_path):
    from benchmarks.locoeval.loader import SharedTaskWarning, load_samples

    repo = tmp_path / "repo"
    repo.mkdir()
    path = write_samples(tmp_path / "s.jsonl", [tiny_sample(repo, "a"), tiny_sample(repo, "b", subset="multi-hop")])
    with pytest.warns(SharedTaskWarning, match=r"tinypkg\.ops\.add is scored in 2 samples \(a, b\)"):
        load_samples(path)
