"""Judging fork tasks: Pass@1 on the fork's tests with the sample's other forks in place, and the
benchmark ``locoeval_fork`` through the run loop with both brackets (SCRIPTED backbone replies)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.locoeval.fork.judge import ForkJudge, fork_edits, hidden_files
from benchmarks.locoeval.fork.ship import ForkDataError, read_forks
from benchmarks.locoeval.schema import parse_sample
from fork_fixtures import fork_env, judge  # noqa: F401 (fixtures)
from fork_set_fixtures import MOD, TESTS, tiny_fork_set  # noqa: F401 (fixtures)


def _reply(name: str, body: str) -> str:
    lines = "\n".join("    " + ln if ln.strip() else "" for ln in body.splitlines())
    return f"Here it is:\n```python\ndef {name}(parts, limit=3):\n{lines}\n```"


def _public_body(root: Path, rec) -> str:
    import textwrap

    lines = (root / rec.file).read_text().splitlines()[rec.body_start - 1:rec.body_end]
    return textwrap.dedent("\n".join(lines))


@pytest.fixture(scope="module")
def fork_judge(tiny_fork_set, fork_env, tmp_path_factory):
    from benchmarks.sandbox.local import LocalExecutor

    forks = read_forks(tiny_fork_set.set_dir / "forks.jsonl")
    executor = LocalExecutor(timeout_s=60, work_root=tmp_path_factory.mktemp("work"))
    return forks, ForkJudge(forks, executor=executor, env_for=lambda s: fork_env,
                            sources_manifest=str(tiny_fork_set.manifest))


def test_the_fork_body_passes_and_the_public_and_blank_bodies_fail(tiny_fork_set, fork_judge):
    forks, judge_ = fork_judge
    sample = parse_sample(tiny_fork_set.sample())
    for req in sample.requirements:
        rec = forks[req.namespace]
        name = req.function_name
        fork = judge_(sample, req, _reply(name, rec.fork_body))
        assert (fork["outcome"], fork["passed"]) == ("pass", True), fork["log"][-800:]
        assert fork["completion"].strip() == rec.fork_body.strip() and fork["located_by"] == "fork record"
        public = judge_(sample, req, _reply(name, _public_body(tiny_fork_set.root, rec)))
        assert public["outcome"] == "fail", public["log"][-800:]
        blank = judge_(sample, req, _reply(name, "raise NotImplementedError"))
        assert blank["outcome"] == "fail"
    none = judge_(sample, sample.requirements[0], "I cannot write it.")
    assert (none["outcome"], none["detail"]) == ("fail", "no_code")


def test_the_other_targets_hold_their_fork_bodies_and_both_test_diffs_apply(tiny_fork_set):
    fs = tiny_fork_set
    forks = read_forks(fs.set_dir / "forks.jsonl")
    join, tag = forks["tinyfork.mod.join"], forks["tinyfork.mod.tag"]
    read = lambda p: (fs.root / p).read_text()  # noqa: E731
    edits = fork_edits([join, tag], join, "return 'mine'", read)
    assert "return 'mine'" in edits[MOD]
    assert all(ln in edits[MOD] for ln in tag.fork_body.splitlines() if ln.strip())
    single = {ns: rec.fork_tests(read)[TESTS] for ns, rec in forks.items()}
    for text in single.values():                      # each target's rewritten operands are in the merged file
        changed = [ln for ln in text.splitlines() if ln not in read(TESTS).splitlines()]
        assert changed and all(ln in edits[TESTS].splitlines() for ln in changed)
    alone = fork_edits([join], join, None, read)
    assert alone[MOD] == read(MOD) and alone[TESTS] == single["tinyfork.mod.join"]
    sample = parse_sample(fs.sample())
    assert hidden_files(sample, forks) == sorted(set(join.hidden_files) | set(tag.hidden_files))


def test_a_snapshot_whose_target_body_changed_is_refused(tiny_fork_set):
    fs = tiny_fork_set
    forks = read_forks(fs.set_dir / "forks.jsonl")
    join = forks["tinyfork.mod.join"]
    read = lambda p: (fs.root / p).read_text().replace('",".join(parts)', '"+".join(parts)')  # noqa: E731
    with pytest.raises(ForkDataError, match="is not the one the fork was made from"):
        fork_edits([join], join, "return 1", read)


def test_a_sample_task_without_a_fork_record_is_an_error(tiny_fork_set, fork_judge):
    forks, judge_ = fork_judge
    raw = tiny_fork_set.sample()
    raw["requirements"][0]["namespace"] = "tinyfork.mod.register"
    sample = parse_sample(raw)
    with pytest.raises(ForkDataError, match="tinyfork.mod.register: no record in the fork data"):
        judge_(sample, sample.requirements[0], _reply("register", "return []"))


# ------------------------------------------------------------------------------ the benchmark
def _cfg(*overrides: str):
    from hydra import compose, initialize_config_dir

    import benchmarks

    conf = Path(benchmarks.__file__).resolve().parents[1] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.fixture(scope="module")
def fork_runs(tiny_fork_set, tmp_path_factory, monkeypatch_module):
    from benchmarks.runloop import run

    fs = tiny_fork_set
    tmp = tmp_path_factory.mktemp("fork_runs")
    samples = tmp / "samples.jsonl"
    samples.write_text(json.dumps(fs.sample()) + "\n")
    monkeypatch_module.setenv("FORK_TEST_FORKS", str(fs.set_dir / "forks.jsonl"))
    runs = {}
    for method in ("no_memory", "oracle_context"):
        cfg = _cfg(f"method={method}", "benchmark=locoeval_fork", "backbone=local",
                   "backbone.model=scripted/fork_set_fixtures:fork_reply", f"benchmark.samples={samples}",
                   f"benchmark.forks={fs.set_dir / 'forks.jsonl'}", f"benchmark.deveval_data={fs.data}",
                   f"benchmark.sources_manifest={fs.manifest}", f"run.results_dir={tmp}", "cache.llm=false",
                   f"cache.dir={tmp / 'cache'}", "benchmark.progress=false", "run.run_id=t", "executor=local")
        runs[method] = (cfg, Path(run(cfg)["run_dir"]))
    return runs


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_both_brackets_run_on_the_fork_set_and_the_fork_judges(fork_runs, tiny_fork_set):
    for method, (_, run_dir) in fork_runs.items():
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["benchmark"] == "locoeval_fork" and "forks" in manifest["data_checksums"]
        result = json.loads((run_dir / "samples" / "tiny-fork-1" / "result.json").read_text())
        assert result["status"] == "ok", (method, result)
        assert [t["passed"] for t in result["tasks"]] == [True, True], (method, result["tasks"])


def test_the_ceiling_holds_the_fork_decisions_not_the_distractors(fork_runs, tiny_fork_set):
    _, run_dir = fork_runs["oracle_context"]
    d = run_dir / "samples" / "tiny-fork-1"
    rows = [json.loads(x) for x in (d / "conversation.jsonl").read_text().splitlines()]
    assert [r["oracle_turns"] for r in rows if r["role"] == "assistant" and r["phase"] == "task"] == [[1, 4], [5, 8]]
    contexts = [json.loads(x) for x in (d / "contexts.jsonl").read_text().splitlines()]
    sample = tiny_fork_set.sample()
    for req, ctx in zip(sample["requirements"], [c for c in contexts if c["phase"] == "task"]):
        prompt = "\n".join(m["content"] for m in ctx["context"]["messages"])
        decision = next(s["text"] for s in sample["outline"] if s["kind"] == "revision" and s["req_id"] == req["req_id"])
        distractor = req["distractors"][0]["text"]
        assert decision in prompt and distractor not in prompt


def test_the_indexed_snapshot_lacks_the_hidden_files_and_the_targets(fork_runs, tiny_fork_set):
    from benchmarks.locoeval.fork.runner import LoCoEvalFork

    cfg, _ = fork_runs["no_memory"]
    bench = LoCoEvalFork(cfg)
    forks = bench.forks(cfg)
    sample = parse_sample(tiny_fork_set.sample())
    from benchmarks.locoeval.repo import blanked_copy, snapshot_root

    root = snapshot_root(sample.repo_spec)
    tree = blanked_copy(root, [(r.namespace, r.completion_path) for r in sample.requirements],
                        cache_dir=Path(str(cfg.cache.dir)), project_path=sample.project_path,
                        hidden_files=[TESTS, *hidden_files(sample, forks)], strip_docstrings=True)
    assert not (tree / TESTS).exists() and (tree / MOD).exists()
    text = (tree / MOD).read_text()
    assert "Join parts with commas" not in text and '",".join(parts)' not in text


def test_a_sample_that_does_not_match_its_fork_is_a_data_error(tiny_fork_set, tmp_path):
    from benchmarks.errors import DataError
    from benchmarks.locoeval.fork.runner import LoCoEvalFork

    raw = tiny_fork_set.sample()
    raw["target_docstrings"] = "keep"
    cfg = _cfg("benchmark=locoeval_fork", f"benchmark.forks={tiny_fork_set.set_dir / 'forks.jsonl'}",
               f"benchmark.deveval_data={tiny_fork_set.data}", f"benchmark.sources_manifest={tiny_fork_set.manifest}")
    with pytest.raises(DataError, match="benchmark.forks: sample 'tiny-fork-1': target_docstrings must be 'remove'"):
        LoCoEvalFork(cfg).check_data(cfg, [parse_sample(raw)])
    raw = tiny_fork_set.sample()
    raw["requirements"][1]["tests"] = ["tests/test_mod.py::test_join"]
    with pytest.raises(DataError, match="R2 tinyfork.mod.tag: tests differ"):
        LoCoEvalFork(cfg).check_data(cfg, [parse_sample(raw)])
