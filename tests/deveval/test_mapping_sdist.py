"""The sdist route's release search, install retries, runner fix-up, network classification and
superseded entries, against a local stand-in index (loopback) and scripted resolver / executor stand-ins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.deveval.evaluate import needs_network
from benchmarks.deveval.mapping import match, project, report
from benchmarks.deveval.mapping.names import index_names
from benchmarks.deveval.mapping.project import ProjectJob
from benchmarks.deveval.mapping.requirements import (obsolete_runner, os_packages_from_build_log,
                                                     unpin_runner)
from benchmarks.deveval.tasks import load_manifest, parse_task, parse_project_entry, superseded_path

from index_server import IndexServer
from test_mapping import CORE_V2, PROJECT, RECORDS, _files, _sdist

TASKS = [parse_task(r) for r in RECORDS[:3]]          # all three sit in toyproj/core.py at CORE_V2's lines


def _job(tmp_path: Path, name: str = "toyproj", **kw) -> ProjectJob:
    return ProjectJob(PROJECT, name, TASKS, tmp_path / f"{name}.json", None, log=lambda m: None, **kw)


@pytest.fixture()
def index(monkeypatch, tmp_path):
    monkeypatch.setenv("RECONMEM_CACHE", str(tmp_path / "cache"))
    with IndexServer() as srv:
        monkeypatch.setenv("RECONMEM_PYPI_JSON", srv.url + "/pypi")
        yield srv


def _add(srv: IndexServer, name: str, version: str, core: str, when: str, tests: bool = True) -> None:
    srv.add_sdist(name, version, f"{name}-{version}.tar.gz", _sdist(version, _files(core, with_tests=tests)),
                  f"{when}T12:00:00Z")


def test_full_position_matches_tie_break_to_the_upload_nearest_the_collection_date(index, tmp_path):
    for version, when in (("1.0", "2023-03-01"), ("1.1", "2023-11-20"), ("1.2", "2024-01-10"),
                          ("1.3", "2024-05-20")):
        _add(index, "toyproj", version, CORE_V2, when)
    _add(index, "toyproj", "9.0", CORE_V2, "2024-06-20")            # after DevEval's release: never chosen
    job = _job(tmp_path)
    rel, _, _, matches = project._choose_version(job)
    assert rel.version == "1.2" and all(m.located_by == "position" for m in matches)
    search = job.state["search"]
    assert search["stopped_at_full_position_match"] and search["after_cutoff"] == 1
    assert list(job.state["versions_compared"]) == ["toyproj-1.2.tar.gz"]   # nearest first, nothing farther can win
    job2 = _job(tmp_path, collected="2023-03-05")
    job2.state_path = tmp_path / "other.json"
    assert project._choose_version(job2)[0].version == "1.0"


def test_more_position_matches_beat_a_nearer_release_and_every_release_is_compared(index, tmp_path):
    shifted = "# one\n# two\n" + CORE_V2                          # every function two lines down: matched by name
    for i in range(18):                                            # more than the old cap of 15, all by name
        _add(index, "toyproj", f"2.{i}", shifted, f"2023-{1 + i % 12:02d}-{1 + i:02d}")
    _add(index, "toyproj", "0.9", CORE_V2, "2021-06-01")           # far from the collection date, but at DevEval's lines
    job = _job(tmp_path)
    rel, _, _, _ = project._choose_version(job)
    assert rel.version == "0.9"
    assert len(job.state["versions_compared"]) == 19
    cached = sorted(p.name for p in (tmp_path / "cache" / "sources").iterdir())
    assert cached == ["toyproj-0.9"]                               # losers are removed from the cache


def test_every_name_a_project_was_published_under_is_searched(index, tmp_path):
    _add(index, "oldname", "1.0", CORE_V2, "2023-12-01", tests=False)     # nearer: looked at first
    _add(index, "newname", "2.0", CORE_V2, "2023-02-01")
    job = _job(tmp_path, name="oldname", other_names=("newname",))
    rel, _, _, _ = project._choose_version(job)
    assert (rel.name, rel.version) == ("newname", "2.0")
    assert set(job.state["versions_compared"]) == {"oldname-1.0.tar.gz", "newname-2.0.tar.gz"}
    assert index_names("Security/zxcvbn-python") == ("zxcvbn-python", "zxcvbn")
    job = _job(tmp_path, name="absent", other_names=("missing",))
    assert project._choose_version(job) is None and job.state["reason"] == "not_on_pypi"


def test_no_tests_in_any_release_names_how_many_were_looked_at(index, tmp_path):
    for i in range(17):
        _add(index, "toyproj", f"3.{i}", CORE_V2, f"2022-01-{1 + i:02d}", tests=False)
    job = _job(tmp_path)
    assert project._choose_version(job) is None
    assert job.state["reason"] == "no_tests_in_sdist" and job.state["numbers"]["versions"] == 17


class StandInExecutor:
    """Records ``prepare`` calls; fails those whose pins contain a name in ``fail_while``."""

    name = "local"

    def __init__(self, fail_while: dict[str, str]):
        self.fail_while = fail_while
        self.prepared = []

    def prepare(self, env) -> None:
        self.prepared.append(env)
        for pin, message in self.fail_while.items():
            if any(p.startswith(pin) for p in env.pip_specs):
                raise RuntimeError(message)


def _info(**kw) -> dict:
    info = {"declared_install": ["cryptography"], "declared_test": ["gssapi"], "from_imports": [],
            "imports_without_extras": [], "sources": ["setup.py"], "pytest_plugin": False, "fixes": [],
            "os_requirements": [], "rounds": [], "extras": True, "runner_unpinned": False, "install_attempts": [],
            "exclude_newer": "2024-01-02"}
    info.update(kw)
    return info


def _scripted_resolver(specs, *, exclude_newer):
    """A stand-in for ``uv pip compile``: every spec pinned as given (``==1`` for bare names)."""
    return [s if any(c in s for c in "<>=") else f"{s}==1" for s in specs], []


def test_failed_install_retries_with_named_os_packages_then_without_optional_extras(tmp_path, monkeypatch):
    monkeypatch.setattr(project, "resolve", _scripted_resolver)
    monkeypatch.setattr(project, "missing_os_packages", lambda pkgs: list(pkgs))     # nothing installable here
    ex = StandInExecutor({"gssapi": "pip install failed: /bin/sh: 1: krb5-config: not found"})
    job = _job(tmp_path)
    job.executor = job_executor = ex
    job.state = {"chosen": {"sha256": "x"}}
    env, pins, _, _ = project._install(job, job.state.setdefault("requirements", _info()), ".", None, 3)
    assert "gssapi==1" not in pins and len(job_executor.prepared) == 2
    info = job.state["requirements"]
    assert info["extras"] is False and info["os_requirements"] == ["libkrb5-dev"]
    assert info["install_attempts"][0]["os_packages_missing"] == ["libkrb5-dev"]

    ex2 = StandInExecutor({"cryptography": "error: command 'gcc' failed: No such file or directory"})
    job2 = _job(tmp_path, name="other")
    job2.executor, job2.state = ex2, {"chosen": {"sha256": "x"}}
    assert project._install(job2, job2.state.setdefault("requirements", _info()), ".", None, 3) is None
    assert job2.state["reason"] == "needs_os_packages" and job2.state["numbers"]["os_packages"] == ["gcc"]


def test_installed_os_packages_are_kept_and_the_build_retried(tmp_path, monkeypatch):
    monkeypatch.setattr(project, "resolve", _scripted_resolver)
    installed: list[str] = []
    monkeypatch.setattr(project, "install_os_packages", lambda pkgs: installed.extend(pkgs) or [])
    ex = StandInExecutor({})
    calls = iter([RuntimeError("fatal error: krb5.h: No such file or directory"), None])

    def prepare(env):
        ex.prepared.append(env)
        exc = next(calls)
        if exc:
            raise exc

    ex.prepare = prepare
    job = _job(tmp_path, install_os_packages=True)
    job.executor, job.state = ex, {"chosen": {"sha256": "x"}}
    env, pins, _, _ = project._install(job, job.state.setdefault("requirements", _info()), ".", None, 3)
    assert installed == ["libkrb5-dev"] and "gssapi==1" in pins             # extras kept: the build works now
    assert env.os_requirements == ("libkrb5-dev",)


def test_an_obsolete_pinned_test_runner_is_a_fix_up(tmp_path, monkeypatch):
    monkeypatch.setattr(project, "resolve", _scripted_resolver)
    probes = []

    def probe(job, root, env, tasks):
        probes.append(list(env.pip_specs))
        if "pytest==3.2.3" in env.pip_specs:
            return ["  File \"_pytest/assertion/rewrite.py\", line 9\nKeyError: '__spec__'\n"]
        return []

    monkeypatch.setattr(project, "_probe", probe)
    monkeypatch.setattr(project.pypi, "fetch_release", lambda rel: (tmp_path / "x.tar.gz", tmp_path))
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='toyproj', "
                                       "tests_require=['pytest==3.2.3', 'py==1.4.34', 'pytest-cov==2.4.0'])\n")
    job = _job(tmp_path)
    job.executor, job.state = StandInExecutor({}), {"chosen": {"sha256": "x", "upload_time": "2023-01-01"}}
    rel = project.pypi.SdistRelease("toyproj", "1.0", "toyproj-1.0.tar.gz", "", "", 1, "2023-01-01T00:00:00Z")
    matched = [match.TaskMatch(t.namespace, "position", 1, 2, 2, True) for t in TASKS]
    env, info = project._build_environment(job, rel, tmp_path, matched)
    assert len(probes) == 2 and info["runner_unpinned"] and info["rounds"][0]["runner_unpinned"]
    assert "pytest<8" in env.pip_specs and "pytest-cov==1" in env.pip_specs
    assert not any(p.startswith(("py==", "pytest==3")) for p in env.pip_specs)
    assert info["exclude_newer"] == "2024-01-01"        # the collection date: the release predates it


def test_runner_and_build_log_readers():
    assert obsolete_runner("ImportError while loading conftest\nKeyError: '__spec__'")
    assert not obsolete_runner("E   AssertionError: assert 1 == 2")
    assert unpin_runner(["pytest==3.2.3", "py==1.4.34", "pluggy==0.4", "pytest-mock==1.6", "six==1.16"]) == \
        ["pytest<8", "pytest-mock", "six==1.16"]
    assert os_packages_from_build_log("Error: pg_config executable not found.") == ["libpq-dev"]
    assert os_packages_from_build_log("ERROR: Could not build wheels for numpy") == []
    from benchmarks.deveval.mapping.requirements import fixes_from_log

    assert fixes_from_log("E   AttributeError: module 'numpy.__config__' has no attribute 'get_info'") == \
        (["numpy<1.26"], [])


def test_a_test_that_pip_installs_at_test_time_is_needs_network(tmp_path):
    log = ("E   subprocess.CalledProcessError: Command '['/v/bin/python', '-m', 'pip', '--python', '/t/bin/python', "
           "'install', '--use-pep517', '-r', '/t/build-reqs.txt']' returned non-zero exit status 1.\n")
    results = {TASKS[0].namespace: {"usable": False, "ref": {"outcome": "fail", "rc": 1, "log_tail": log},
                                    "blank": {"outcome": "fail", "rc": 1}},
               TASKS[1].namespace: {"usable": True, "ref": {"outcome": "pass", "rc": 0}, "blank": {"outcome": "fail"}},
               TASKS[2].namespace: {"usable": False, "ref": {"outcome": "fail", "rc": 1, "log_tail": "E  assert 0"},
                                    "blank": {"outcome": "fail", "rc": 1}}}
    matches = [match.TaskMatch(t.namespace, "position", 1, 2, 2, True) for t in TASKS]
    job = _job(tmp_path)
    job.state = {"versions_compared": {}, "search": {}}
    rel = project.pypi.SdistRelease("toyproj", "1.0", "toyproj-1.0.tar.gz", "http://x/t.tar.gz", "ab", 1,
                                    "2023-01-01T00:00:00Z")
    from benchmarks.sandbox.base import EnvSpec

    entry = project._entry(job, rel, "toyproj-1.0/", EnvSpec(name=PROJECT, pythonpath=(".",)), _info(), matches,
                           results, {"n": 0})
    rows = {r["namespace"]: r for r in entry["tasks"]}
    assert rows[TASKS[0].namespace]["unmatched_reason"] == "needs_network"
    assert rows[TASKS[2].namespace]["unmatched_reason"] == "reference_fails"
    assert entry["route"] == "sdist" and entry["release"]["version"] == "1.0"
    assert needs_network(parse_project_entry(entry, "entry")) == {TASKS[0].namespace}
    assert project._failure_reason({k: v for k, v in results.items() if k == TASKS[0].namespace}) == "needs_network"


def test_a_remapped_project_keeps_its_superseded_entry_resolvable_by_version(tmp_path):
    def entry(version: str) -> dict:
        return {"project_path": PROJECT, "pypi_name": "toyproj", "version": version, "env_pip_install": [],
                "tasks": [{"namespace": TASKS[0].namespace, "located_by": "position", "signature_line": 4,
                           "body_start": 6, "body_end": 6, "oracle_pass": True, "blank_fails": True}]}

    old_states = {PROJECT: {"status": "mapped", "entry": entry("0.3")}}
    current = report.assemble_manifest([], {PROJECT: {"done": True, "status": "mapped", "entry": entry("0.2")}})
    assert current[0]["route"] == "sdist" and current[0]["release"] == {"name": "toyproj", "version": "0.2",
                                                                         "filename": None}
    kept = report.superseded_manifest([], old_states, current)
    assert [(e["version"], e["superseded_by"]) for e in kept] == [("0.3", "0.2")]
    assert report.superseded_manifest(kept, old_states, current) == kept            # idempotent
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(current))
    superseded_path(path).write_text(json.dumps(kept))
    man = load_manifest(path)
    assert len(man) == 1 and man.project(PROJECT).version == "0.2"
    assert man.for_repo_spec({"provider": "pypi", "name": "toyproj", "version": "0.3"}).version == "0.3"
    assert man.for_repo_spec({"provider": "pypi", "name": "toyproj", "version": "0.4"}) is None


def test_every_reason_has_an_action_in_the_report(tmp_path):
    assert set(project.REASONS) <= set(report.ACTIONS) | {"blank_passes"} and "blank_passes" in report.ACTIONS
    state = {"project_path": PROJECT, "done": True, "status": "not_mapped", "reason": "needs_os_packages",
             "numbers": {"os_packages": ["libkrb5-dev"], "build_error": "line one\nline | two"}}
    rows = report.rows({PROJECT: state}, {PROJECT: 4}, {})
    assert rows[0]["action"].startswith("apt-get install")
    md = report.markdown(rows, report.summary(rows))
    assert "line one line / two" in md and md.count("\n") == 5         # header, rule, one row, blank, summary


def test_entry_routes_are_checked_when_the_manifest_is_read():
    from benchmarks.deveval.tasks import TaskDataError

    base = {"project_path": PROJECT, "pypi_name": "toyproj", "version": "abc", "env_pip_install": []}
    with pytest.raises(TaskDataError, match="entry 3: field 'route' must be sdist, archive or git"):
        parse_project_entry({**base, "route": "ftp"}, "entry 3")
    with pytest.raises(TaskDataError, match="field 'git' must be an object with string fields 'url' and 'commit'"):
        parse_project_entry({**base, "route": "git", "git": {"url": "https://x"}}, "entry 3")
    git = parse_project_entry({**base, "route": "git", "git": {"url": "https://x", "commit": "abc", "subdir": "py"}}, "e")
    assert git.repo_spec() == {"provider": "git", "url": "https://x", "commit": "abc", "subdir": "py"}


def test_package_imports_are_the_unconditional_module_level_ones(tmp_path):
    from benchmarks.deveval.mapping.requirements import package_imports

    pkg = tmp_path / "src" / "toyproj"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("import sortedcollections\nfrom .sub import m\n")
    (pkg / "other.py").write_text("import apsw\n")                    # not imported by the task's modules
    (pkg / "core.py").write_text("import os\nimport sys\nif sys.version_info > (3,):\n    import babel.dates\n"
                                 "try:\n    import ujson\nexcept ImportError:\n    ujson = None\n"
                                 "def f():\n    import numpy\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "m.py").write_text("from tzlocal import get_localzone\nfrom .. import core\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("import hypothesis\n")
    assert package_imports(tmp_path, ["src/toyproj/core.py"], "src") == {"sortedcollections", "os", "sys", "babel",
                                                                         "tzlocal"}


def test_a_finished_entry_gets_its_network_rows_without_a_rerun(tmp_path):
    log = "E   subprocess.CalledProcessError: Command '['/v/bin/python', '-m', 'pip', 'install', 'x']' returned 1\n"
    state = {"done": True, "status": "mapped", "project_path": PROJECT,
             "oracle": {TASKS[0].namespace: {"usable": False, "ref": {"outcome": "fail", "log_tail": log}},
                        TASKS[1].namespace: {"usable": False, "ref": {"outcome": "fail", "log_tail": "E assert 0"}}},
             "entry": {"tasks": [{"namespace": TASKS[0].namespace, "unmatched_reason": "reference_fails"},
                                 {"namespace": TASKS[1].namespace, "unmatched_reason": "reference_fails"}]}}
    job = _job(tmp_path)
    job.state_path.write_text(json.dumps(state))
    out = project.map_project(job)
    assert out["entry"]["needs_network"] == [TASKS[0].namespace]
    assert [r["unmatched_reason"] for r in out["entry"]["tasks"]] == ["needs_network", "reference_fails"]
    assert json.loads(job.state_path.read_text())["entry"]["needs_network"] == [TASKS[0].namespace]


def test_a_removed_collections_alias_is_a_shim_fix_up(tmp_path, monkeypatch):
    from benchmarks.deveval.mapping.requirements import shims_from_log

    monkeypatch.setattr(project, "resolve", _scripted_resolver)
    log = "E   ImportError: cannot import name 'Mapping' from 'collections' (/usr/lib/python3.11/collections/__init__.py)"
    monkeypatch.setattr(project, "_probe", lambda job, root, env, tasks: [] if env.compat_shims else [log])
    monkeypatch.setattr(project.pypi, "fetch_release", lambda rel: (tmp_path / "x.tar.gz", tmp_path))
    job = _job(tmp_path)
    job.executor, job.state = StandInExecutor({}), {"chosen": {"sha256": "x"}}
    rel = project.pypi.SdistRelease("toyproj", "1.0", "toyproj-1.0.tar.gz", "", "", 1, "2023-01-01T00:00:00Z")
    matched = [match.TaskMatch(t.namespace, "position", 1, 2, 2, True) for t in TASKS]
    env, info = project._build_environment(job, rel, tmp_path, matched)
    assert env.compat_shims == ("collections_abc_aliases",) and info["rounds"][0]["added_shims"] == ["collections_abc_aliases"]
    assert len(info["rounds"]) == 2 and shims_from_log("AttributeError: module 'os' has no attribute 'x'") == []


def test_a_project_being_remapped_keeps_its_previous_reason_in_the_report():
    old = {"project_path": PROJECT, "done": True, "status": "not_mapped", "reason": "no_tests_in_sdist", "numbers": {}}
    rows = report.rows({}, {PROJECT: 4}, {}, {PROJECT: old})
    assert rows[0]["status"] == "not_mapped" and rows[0]["source"] == "previous_run" and rows[0]["action"]
    assert "| not_mapped (previous run) |" in report.markdown(rows, report.summary(rows))
    assert report.rows({}, {PROJECT: 4}, {})[0]["status"] == "not_run"


def test_a_pinned_release_that_does_not_build_gets_its_pin_relaxed(tmp_path, monkeypatch):
    from benchmarks.deveval.mapping.requirements import failed_builds, relax_pins

    monkeypatch.setattr(project, "resolve", _scripted_resolver)
    ex = StandInExecutor({"PyYAML==3.11": "ext/_yaml.c: error\n  ERROR: Failed building wheel for pyyaml\n"})
    job = _job(tmp_path)
    job.executor, job.state = ex, {"chosen": {"sha256": "x"}}
    info = job.state.setdefault("requirements", _info(declared_install=["PyYAML==3.11", "click==6.6"], declared_test=[]))
    env, pins, _, _ = project._install(job, info, ".", None, 2)
    assert "PyYAML>=3.11" in pins and "click==6.6" in pins and info["relaxed"] == ["pyyaml"]
    assert len(ex.prepared) == 3                                    # as pinned, without extras, relaxed
    assert failed_builds("ERROR: Could not build wheels for lxml, which is required") == ["lxml"]
    assert relax_pins(["lxml<4", "six==1"], ["lxml"]) == ["lxml", "six==1"]


def test_a_gpu_stack_from_optional_test_extras_is_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(project, "resolve", _scripted_resolver)
    job = _job(tmp_path)
    job.executor, job.state = StandInExecutor({}), {"chosen": {"sha256": "x"}}
    info = job.state.setdefault("requirements", _info(declared_test=["torch"]))
    env, pins, _, _ = project._install(job, info, ".", None, 3)
    assert "torch==1" not in pins and info["install_attempts"][0]["failed"] == "too_heavy"
    job2 = _job(tmp_path, name="heavy")
    job2.executor, job2.state = StandInExecutor({}), {"chosen": {"sha256": "x"}}
    info2 = job2.state.setdefault("requirements", _info(declared_install=["torch"], declared_test=[]))
    assert project._install(job2, info2, ".", None, 3) is None and job2.state["reason"] == "too_heavy"


def test_a_remap_starts_from_the_previous_release_comparisons(tmp_path):
    from benchmarks.deveval.mapping import run

    compared = {"toyproj-1.0.tar.gz": {"by_position": 3, "by_name": 0, "tests_exist": 3, "full_match": 3}}
    state = {"project_path": PROJECT, "done": True, "status": "not_mapped", "reason": "too_heavy",
             "chosen": {"version": "1.0"}, "versions_compared": compared,
             "search": {"cutoff": project.CUTOFF, "collected": project.COLLECTED}}
    (tmp_path / "Utilities__toyproj.json").write_text(json.dumps(state))
    assert run._supersede_if_due(tmp_path, PROJECT, named=False)
    assert json.loads((tmp_path / "Utilities__toyproj.json").read_text()) == {"versions_compared": compared,
                                                                             "too_large": []}
    assert json.loads((tmp_path / "superseded" / "Utilities__toyproj@1.0.json").read_text())["reason"] == "too_heavy"
    state["search"]["cutoff"] = "2024-06-30"                      # another cut-off: compared afresh
    (tmp_path / "Utilities__toyproj.json").write_text(json.dumps(state))
    assert run._supersede_if_due(tmp_path, PROJECT, named=False)
    assert not (tmp_path / "Utilities__toyproj.json").exists()


def test_the_state_superseded_last_is_the_previous_one(tmp_path):
    from benchmarks.deveval.mapping import run

    old = {"project_path": PROJECT, "done": True, "status": "not_mapped", "reason": "no_tests_in_sdist"}
    (tmp_path / "superseded").mkdir()
    (tmp_path / "superseded" / "Utilities__toyproj@not_mapped.json").write_text(json.dumps(old))  # no timestamp
    state = {"project_path": PROJECT, "done": True, "status": "not_mapped", "reason": "too_heavy",
             "chosen": {"version": "1.0"}}
    (tmp_path / "Utilities__toyproj.json").write_text(json.dumps(state))
    assert run._supersede_if_due(tmp_path, PROJECT, named=True)
    moved = json.loads((tmp_path / "superseded" / "Utilities__toyproj@1.0.json").read_text())
    assert moved["superseded_at"] and moved["reason"] == "too_heavy"
    assert report.load_states(tmp_path / "superseded")[PROJECT]["reason"] == "too_heavy"


def test_commands_the_test_files_and_task_modules_name_become_os_requirements(tmp_path):
    from benchmarks.deveval.mapping.requirements import named_commands

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_k.py").write_text("def test_k(run):\n    run('ssh-keygen -l -f %s' % 'x')\n"
                                                  "    assert 'git' in ['git']\n    print('make a file')\n")
    (tmp_path / "utils.py").write_text("import subprocess\ndef running(name):\n"
                                       "    return subprocess.call(['/usr/bin/pgrep', name]) == 0\n")
    assert sorted(named_commands(tmp_path, ["tests/test_k.py", "tests/missing.py"])) == ["git", "openssh-client"]
    assert sorted(named_commands(tmp_path, ["tests/test_k.py", "utils.py"])) == ["git", "openssh-client", "procps"]


def test_a_gpu_stack_the_tests_import_only_inside_a_test_is_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(project, "resolve", _scripted_resolver)
    job = _job(tmp_path)
    job.executor, job.state = StandInExecutor({}), {"chosen": {"sha256": "x"}}
    info = job.state.setdefault("requirements", _info(declared_test=[], imports_without_extras=["torch", "pandas"],
                                                      from_imports=["torch", "pandas"], module_level_imports=["pandas"]))
    env, pins, _, _ = project._install(job, info, ".", None, 3)
    assert pins == ["pytest<8", "cryptography==1", "pandas==1"] and info["heavy_left_out"] == ["torch"]
    assert info["install_attempts"][-1] == {"failed": "too_heavy", "extras": False, "heavy": ["torch==1"],
                                            "left_out": ["torch"]}
    job2 = _job(tmp_path, name="needed")                # a module-level import of the test files: still too heavy
    job2.executor, job2.state = StandInExecutor({}), {"chosen": {"sha256": "x"}}
    info2 = job2.state.setdefault("requirements", _info(declared_test=[], imports_without_extras=["torch"],
                                                        from_imports=["torch"], module_level_imports=["torch"]))
    assert project._install(job2, info2, ".", None, 3) is None and job2.state["reason"] == "too_heavy"


def test_module_level_test_imports_leave_out_type_checking_try_and_test_bodies(tmp_path):
    from benchmarks.deveval.mapping.requirements import module_level_test_imports, package_imports

    (tmp_path / "tests").mkdir()
    (tmp_path / "conftest.py").write_text("import attr\n")
    (tmp_path / "tests" / "test_a.py").write_text(
        "import typing as t\nimport numpy as np\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import jax\nif t.TYPE_CHECKING:\n    import tensorflow\nelse:\n    import pandas\n"
        "try:\n    import pyspark\nexcept ImportError:\n    pyspark = None\n"
        "def test_x():\n    import torch\n")
    assert module_level_test_imports(tmp_path, ["tests/test_a.py"]) == {"typing", "numpy", "pandas", "attr"}
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "core.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n")
    assert package_imports(tmp_path, ["pkg/core.py"]) == {"typing"}


@pytest.mark.skipif(__import__("shutil").which("dpkg-query") is None, reason="a Debian host (dpkg-query)")
def test_os_requirements_are_checked_as_debian_packages_not_commands():
    from benchmarks.sandbox.venvs import missing_os_packages

    # coreutils is installed on every Debian system but names no command on PATH
    assert missing_os_packages(["coreutils", "reconmem-no-such-package"]) == ["reconmem-no-such-package"]
