"""``scripts.validate_locoeval`` on a fork set: every check of the tiny fork set passes, and a broken
verification or sample is flagged (test runs on the tiny self-made project)."""

from __future__ import annotations

import json
import textwrap

from benchmarks.locoeval.fork.ship import read_forks
from benchmarks.locoeval.fork.validate_set import alternative_body
from fork_fixtures import fork_env  # noqa: F401 (fixtures)
from fork_set_fixtures import MOD, tiny_fork_set  # noqa: F401 (fixtures)


def _public_body(root, rec) -> str:
    return textwrap.dedent("\n".join((root / rec.file).read_text().splitlines()[rec.body_start - 1:rec.body_end]))


def _write(tmp_path, fs, sample, bodies=None, item_changes=True):
    forks = read_forks(fs.set_dir / "forks.jsonl")
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps(sample) + "\n")
    rows = []
    for req in sample["requirements"]:
        rec = forks[req["namespace"]]
        body = (bodies or {}).get(req["req_id"], _public_body(fs.root, rec))
        row = {"sample_id": sample["id"], "req_id": req["req_id"], "namespace": req["namespace"],
               "distractor_bodies": [{"item_id": d["id"], "body": body} for d in req["distractors"]]}
        if item_changes:
            row["item_changes"] = {req["gt_items"][0]["id"]: [ch["key"] for ch in rec.changes]}
        rows.append(row)
    ver = tmp_path / "samples.verification.jsonl"
    ver.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return samples, ver


def _validate(capsys, samples, ver, fs, *extra):
    from scripts.validate_locoeval import main

    status = main(["--samples", str(samples), "--verification", str(ver), "--forks", str(fs.set_dir / "forks.jsonl"),
                   "--manifest", str(fs.manifest), "--quiet", "--timeout", "60", *extra])
    captured = capsys.readouterr()
    _validate.err = captured.err
    return status, captured.out.splitlines()


def test_alternative_body_restructures_the_fork_body():
    text = ("def f(xs, limit):\n    if len(xs) > limit:\n        raise ValueError(xs)\n"
            "    out = [x * 2 for x in xs]\n    return ';'.join(out)\n")
    alt, applied = alternative_body(text, ["f"], 2)
    assert "guard clause turned into if/else" in applied and "comprehension rewritten as an explicit loop" in applied
    assert "';'.join(out_v)" in alt and "for x_v in xs:" in alt


def test_every_check_of_the_tiny_fork_set_passes(tmp_path, capsys, tiny_fork_set):
    fs = tiny_fork_set
    samples, ver = _write(tmp_path, fs, fs.sample())
    status, lines = _validate(capsys, samples, ver, fs)
    assert status == 0, lines
    summary = lines[-1]
    assert "2 tasks in 1 samples checked; 0 failing checks" in summary
    for check in ("data 2/2", "fork_passes 2/2", "public_fails 2/2", "blank_fails 2/2", "constant_fails 2/2",
                  "distractor 2/2",
                  "not_in_snapshot 2/2", "hidden 2/2", "stated 2/2", "ceiling 2/2"):
        assert check in summary, (check, summary)


def test_a_broken_verification_and_sample_are_flagged(tmp_path, capsys, tiny_fork_set, monkeypatch):
    from benchmarks.locoeval.fork import validate

    fs = tiny_fork_set
    forks = read_forks(fs.set_dir / "forks.jsonl")
    tag_fork = forks["tinyfork.mod.tag"].fork_body
    assert "\n" not in tag_fork
    # a stand-in constant body that is tag's fork body: it passes tag's fork tests, and join's fail it
    monkeypatch.setattr(validate, "CONSTANT_BODIES", ("return None", tag_fork))
    sample = fs.sample()
    sample["outline"] = [s if s["kind"] != "revision" or s["req_id"] != "R2" else {**s, "text": "Something else."}
                         for s in sample["outline"]]
    samples, ver = _write(tmp_path, fs, sample, bodies={"R1": forks["tinyfork.mod.join"].fork_body})
    status, lines = _validate(capsys, samples, ver, fs, "--static-only")
    assert status == 1
    assert any(ln.startswith("FAIL tiny-fork-1/R2 tinyfork.mod.tag: stated: change") for ln in lines), lines
    assert any(ln.startswith("FAIL tiny-fork-1/R2 tinyfork.mod.tag: ceiling: change") for ln in lines), lines
    assert "(static only)" in lines[-1]
    status, lines = _validate(capsys, samples, ver, fs)
    assert any(ln.startswith("FAIL tiny-fork-1/R1 tinyfork.mod.join: distractor: R1.D1: the body that follows it passes")
               for ln in lines), lines
    assert f"FAIL tiny-fork-1/R2 tinyfork.mod.tag: constant_fails: the constant body `{tag_fork}` passes the fork's " \
        "tests" in lines, lines
    assert "constant_fails 1/2" in lines[-1]
    rows = [json.loads(x) for x in ver.read_text().splitlines()]
    rows[1]["distractor_bodies"] = []
    ver.write_text("".join(json.dumps(r) + "\n" for r in rows))
    status, lines = _validate(capsys, samples, ver, fs, "--static-only")
    assert "FAIL tiny-fork-1/R2 tinyfork.mod.tag: data: R2.D1: no distractor body in the verification file" in lines
    ver.write_text('{"sample_id": "x"}\n')
    status, _ = _validate(capsys, samples, ver, fs, "--static-only")
    assert status == 2 and "samples.verification.jsonl:1: missing field 'req_id'" in _validate.err
