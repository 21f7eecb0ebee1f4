"""run.repeat=K and the manifest's selection on the toy benchmark
(tests/core/toy_benchmark.py; scripted backbone, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from benchmarks import records
from benchmarks.errors import ConfigError
from benchmarks.harness import repeat_cache_salt
from benchmarks.runloop import run
from test_runloop import _cfg  # noqa: F401 - the toy config

ITEMS = [{"id": "a", "cost": 0.1}, {"id": "b", "cost": 0.1}, {"id": "c", "cost": 0.1}]


def _dir(cfg, run_id: str) -> Path:
    return Path(cfg.run.results_dir) / "toy" / "scripted_bb" / "full" / run_id


def test_repeats_get_one_run_directory_each(tmp_path):
    cfg = _cfg(tmp_path, ITEMS, repeat=3, repeat_index=None)
    summary = run(cfg)
    assert summary["n_repeats"] == 3 and summary["run_ids"] == ["t-r1", "t-r2", "t-r3"]
    for i in (1, 2, 3):
        d = _dir(cfg, f"t-r{i}")
        manifest = json.loads((d / "manifest.json").read_text())
        assert manifest["run_id"] == f"t-r{i}" and manifest["repeat"] == {"index": i, "of": 3, "run_id": "t"}
        assert OmegaConf.load(d / "config.yaml").run.repeat_index == i
        assert sorted(p.name for p in (d / "samples").iterdir()) == ["a", "b", "c"]
    assert not _dir(cfg, "t").exists()
    # one repeat alone (one job per repeat)
    only = _cfg(tmp_path / "one", ITEMS, repeat=3, repeat_index=2)
    assert run(only)["run_id"] == "t-r2" and not _dir(only, "t-r1").exists()


def test_an_unrepeated_run_is_unchanged(tmp_path):
    cfg = _cfg(tmp_path, ITEMS, repeat=1, repeat_index=None)
    summary = run(cfg)
    assert summary["run_id"] == "t" and summary["repeat"] is None
    assert json.loads((_dir(cfg, "t") / "manifest.json").read_text())["repeat"] is None


@pytest.mark.parametrize("kw, needle", [({"repeat": 0}, "run.repeat=0"), ({"repeat": "x"}, "run.repeat=x"),
                                         ({"repeat": 2, "repeat_index": 3}, "run.repeat_index=3")])
def test_bad_repeat_options_are_one_line_errors(tmp_path, kw, needle):
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        run(_cfg(tmp_path, ITEMS, **kw))


def test_the_repeat_index_is_in_the_cache_key_only_when_k_exceeds_one(tmp_path):
    """SCRIPTED replies (ScriptedLLM with a response cache): the same request under repeat 2 is a new call."""
    from reconmem.platform.testing import ScriptedLLM

    assert repeat_cache_salt(OmegaConf.create({"run": {"repeat": 1, "repeat_index": None}})) is None
    assert repeat_cache_salt(OmegaConf.create({"run": {"repeat": 3, "repeat_index": 2}})) == {"repeat": 2}
    sent = []

    def reply(messages, purpose):
        sent.append(purpose)
        return f"reply {len(sent)}"

    llm = ScriptedLLM(reply, cache_path=tmp_path / "cache.sqlite")
    msgs = [{"role": "user", "content": "hello"}]
    first = llm.chat(msgs, purpose="turn_generation").text
    assert llm.chat(msgs, purpose="turn_generation").text == first and len(sent) == 1  # cached
    llm.cache_salt = {"repeat": 2}
    assert llm.chat(msgs, purpose="turn_generation").text == "reply 2" and len(sent) == 2  # its own key
    llm.cache_salt = {}
    assert llm.chat(msgs, purpose="turn_generation").text == first and len(sent) == 2  # K = 1 keys unchanged


def test_manifest_lists_the_selection_and_the_summary_counts_a_missing_sample(tmp_path):
    cfg = _cfg(tmp_path, ITEMS)
    run(cfg)
    d = _dir(cfg, "t")
    manifest = json.loads((d / "manifest.json").read_text())
    assert [e["sample_id"] for e in manifest["selected"]] == ["a", "b", "c"]
    assert manifest["selected"][0]["tasks"] == [{"req_id": "a", "namespace": None}]
    (d / "samples" / "b" / "result.json").unlink()
    assert records.RunDir(d).selection_results(["a", "b", "c"])[1]["status"] == records.Status.MISSING.value
    from benchmarks.runloop import build_benchmark, write_summary

    summary = write_summary(records.RunDir(d), cfg, build_benchmark(cfg), ["a", "b", "c"], ["a", "b", "c"], None)
    assert (summary["n_missing"], summary["n_unfinished"]) == (1, 1)
