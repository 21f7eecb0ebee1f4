"""The tell-finder (benchmarks/locoeval/tells.py, scripts/find_tells.py) on small seeded synthetic sets:
one with a planted tell (the distractor always right after the requirement and worded its own way),
one without (positions, wordings and kinds drawn alike for info and distractor turns)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from benchmarks.locoeval.tells import (TellError, detail_turns, feature_frame, find_tells, first_words, folds,
                                       load_set)
from scripts import find_tells as find_tells_script

OPENERS = ("For `{fn}`: we settled on {v}.", "A detail of `{fn}`: it uses {v}.",
           "One more on `{fn}`: the value is {v}.", "Note for `{fn}` -- {v} is what we want here.")
KINDS = ("number", "string", "raise")


def _sample(sid: str, repo: str, rng: random.Random, planted: bool, n_reqs: int = 2) -> tuple[dict, list[dict]]:
    """One valid sample with ``n_reqs`` tasks (two info turns and one distractor each) and its verification rows."""
    outline: list[dict] = [{"kind": "chat", "brief": "Open.", "text": "Hi, let's start."}]
    reqs, verif = [], []
    for k in range(1, n_reqs + 1):
        rid, fn = f"R{k}", f"f{k}"
        gt = [{"id": f"{rid}.I{i}", "text": f"{fn} detail {i}."} for i in (1, 2, 3)]
        ns = f"pkg.{sid.replace('-', '_')}.{fn}"
        reqs.append({"req_id": rid, "namespace": ns, "completion_path": "pkg/mod.py",
                     "signature": f"def {fn}():", "tests": ["tests/test_mod.py::test_it"], "gt_items": gt,
                     "distractors": [{"id": f"{rid}.D1", "text": f"{fn} wrong.", "revised_by": f"{rid}.I3"}]})
        kinds = {f"{rid}.I{i}": rng.choice(KINDS) for i in (1, 2, 3)}
        verif.append({"sample_id": sid, "req_id": rid, "namespace": ns,
                      "items": {i: {"kind": kd} for i, kd in kinds.items()},
                      "distractors": {f"{rid}.D1": {"revised_by": f"{rid}.I3",
                                                    "kind": "number" if planted else rng.choice(KINDS)}}})

        def say(item: str) -> str:
            text = rng.choice(OPENERS).format(fn=fn, v=rng.choice(["3", "'a'", "ValueError", "10 seconds"]))
            return "Actually, remember this: " + text if planted and item.endswith("D1") else text

        details = [{"kind": "info", "req_id": rid, "item_ids": [f"{rid}.I{i}"], "brief": "Detail.",
                    "text": say(f"{rid}.I{i}")} for i in (1, 2)]
        dis = {"kind": "distractor", "req_id": rid, "item_ids": [f"{rid}.D1"], "brief": "Wrong.", "text": say("D1")}
        if planted:
            details = [dis, *details]
        else:
            details.insert(rng.randrange(3), dis)
            for _ in range(rng.randrange(3)):
                details.insert(rng.randrange(1, len(details) + 1),
                               {"kind": "chat", "brief": "Chat.", "text": "OK, go on."})
        outline += [{"kind": "requirement", "req_id": rid, "brief": "Introduce.", "text": f"I need `{fn}`."},
                    *details, {"kind": "noise", "brief": "Aside.", "text": "Unrelated question?"},
                    {"kind": "revision", "req_id": rid, "item_ids": [f"{rid}.I3"], "brief": "Fix.",
                     "text": f"Correction for `{fn}`: not what I said."}]
    outline = [{"turn": n, **st} for n, st in enumerate(outline, 1)]
    sample = {"id": sid, "subset": rng.choice(["single-hop", "multi-hop"]), "project_path": f"Proj/{repo}",
              "repo": {"provider": "local", "path": f"/nonexistent/{repo}"}, "requirements": reqs,
              "outline": outline, "tasks": [{"req_id": r["req_id"], "kind": "function_generation",
                                             "query": "Write it."} for r in reqs]}
    return sample, verif


def write_set(root: Path, planted: bool, *, seed: int = 7, repos: int = 6, per_repo: int = 3) -> Path:
    """A set directory: samples.jsonl and samples.verification.jsonl."""
    rng = random.Random(seed)
    samples, verif = [], []
    for r in range(repos):
        for j in range(per_repo):
            s, v = _sample(f"repo{r}-{j}", f"repo{r}", rng, planted)
            samples.append(s)
            verif += v
    root.mkdir(parents=True, exist_ok=True)
    (root / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    (root / "samples.verification.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verif))
    return root


def test_first_words_hide_code_spans_and_punctuation():
    assert first_words("About `get_value`: it returns 3.", 2) == "about `_`"
    assert first_words("Correction, for `f`: no.", 1) == "correction"
    assert first_words("A detail of `f`", 2) == "a detail"


def test_detail_turns_are_info_and_distractor_turns_with_their_kind_and_requirement(tmp_path):
    samples, verification = load_set(write_set(tmp_path / "set", planted=True))
    turns = detail_turns(samples, verification)
    assert len(turns) == 6 * 3 * 2 * 3          # revision turns are not rows
    first = [t for t in turns if t.sample_id == "repo0-0" and t.req_id == "R1"]
    assert [t.is_distractor for t in first] == [True, False, False]
    assert first[0].turn == first[0].requirement_turn + 1 and first[0].detail_rank == 0
    assert all(t.fact_kind == "number" for t in turns if t.is_distractor)
    assert {t.fact_kind for t in turns if not t.is_distractor} <= set(KINDS)
    frame = feature_frame(first)
    assert frame["after_requirement"].tolist() == [1.0, 0.0, 0.0]
    assert frame["first_word"].iloc[0] == "actually"


def test_one_hot_columns_come_from_the_training_repositories_only(tmp_path):
    samples, verification = load_set(write_set(tmp_path / "set", planted=False))
    turns = detail_turns(samples, verification)
    frame = feature_frame(turns)
    groups = [t.repository for t in turns]
    frame.loc[[g == "Proj/repo0" for g in groups], "first_word"] = "onlyhere"
    fold_list = folds(frame, groups)
    held_out = [f for f in fold_list if {groups[i] for i in f.test} == {"Proj/repo0"}][0]
    assert "cat__first_word_onlyhere" not in held_out.columns
    word_cols = [i for i, c in enumerate(held_out.columns) if c.startswith("cat__first_word_")]
    assert word_cols and not np.any(held_out.x_test[:, word_cols])   # an unseen first word: all zeros
    others = [f for f in fold_list if f is not held_out]
    assert all("cat__first_word_onlyhere" in f.columns for f in others)


def test_a_planted_tell_is_found_by_both_models(tmp_path):
    samples, verification = load_set(write_set(tmp_path / "set", planted=True))
    report = find_tells(detail_turns(samples, verification), permutations=5, seed=0, top=5)
    assert not report.at_chance and report.verdict == "tell found"
    for m in report.models:
        assert m.balanced_accuracy.verdict == "above chance"
        assert m.balanced_accuracy.observed > 0.9 and m.roc_auc.observed > 0.9
        assert m.pick_rate > 0.9 > 0.5 > m.pick_chance
    logreg = report.models[0]
    assert logreg.model == "logreg"
    tells = {f["feature"] for f in logreg.top_features if f["weight"] > 0}
    assert tells & {"num__after_requirement", "cat__first_word_actually", "cat__first_two_words_actually remember"}


def test_a_set_without_a_tell_is_at_chance(tmp_path):
    samples, verification = load_set(write_set(tmp_path / "set", planted=False))
    report = find_tells(detail_turns(samples, verification), models=["logreg"], permutations=60, seed=0)
    bacc = report.models[0].balanced_accuracy
    assert report.at_chance, report.format()
    assert bacc.ci95[0] <= bacc.observed <= bacc.ci95[1]
    assert 0.4 < bacc.null_mean < 0.6


@pytest.mark.slow   # starts two worker processes
def test_the_permutation_null_does_not_depend_on_the_worker_processes(tmp_path):
    samples, verification = load_set(write_set(tmp_path / "set", planted=False))
    turns = detail_turns(samples, verification)
    one, two = (find_tells(turns, models=["logreg"], permutations=6, seed=3, jobs=j) for j in (1, 2))
    assert one.to_dict() == two.to_dict()


def test_find_tells_refuses_one_repository_and_a_set_without_distractors(tmp_path):
    samples, verification = load_set(write_set(tmp_path / "set", planted=False, repos=1))
    with pytest.raises(TellError, match="two repositories"):
        find_tells(detail_turns(samples, verification), permutations=1)
    turns = [t for t in detail_turns(samples, verification) if not t.is_distractor]
    with pytest.raises(TellError, match="both info and distractor"):
        find_tells(turns, permutations=1)


def test_script_prints_the_verdict_writes_json_and_exits_one_on_a_tell(tmp_path, capsys):
    root = write_set(tmp_path / "set", planted=True)
    out = tmp_path / "tells.json"
    status = find_tells_script.main(["--set", str(root), "--models", "logreg", "--permutations", "20",
                                     "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 1
    assert "verdict: tell found" in printed and "top features" in printed
    data = json.loads(out.read_text())
    assert data["verdict"] == "tell found" and data["permutations"] == 20 and data["n_repositories"] == 6
    assert data["models"][0]["balanced_accuracy"]["verdict"] == "above chance"


def test_script_names_a_missing_set_or_verification_file(tmp_path, capsys):
    assert find_tells_script.main(["--set", str(tmp_path / "nope")]) == 2
    assert "no samples file" in capsys.readouterr().err
    root = write_set(tmp_path / "set", planted=True)
    (root / "samples.verification.jsonl").unlink()
    assert find_tells_script.main(["--set", str(root)]) == 2
    assert "verification file" in capsys.readouterr().err
