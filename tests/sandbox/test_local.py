"""Local executor: outcomes, limits, containment and cleanup, venv cache reuse."""

from __future__ import annotations

import os
import re
import threading
import time

import pytest

from benchmarks.sandbox import build_executor
from benchmarks.sandbox.base import ERROR, FAIL, OOM, PASS, TIMEOUT, EnvSpec, ExecutionJob, classify_pytest
from benchmarks.sandbox.local import LocalExecutor
from benchmarks.sandbox.venvs import VenvCache

ID = ["tests/test_mod.py::test_it"]


@pytest.fixture
def executor(tmp_path):
    work = tmp_path / "work"
    return LocalExecutor(timeout_s=30, memory_mb=1024, work_root=work)


def _run(executor, root, env, **kw):
    return executor.run(ExecutionJob(project_root=root, env=env, test_ids=ID, **kw))


def test_pass_fail_and_edits_never_touch_the_snapshot(tmp_path, executor, pyenv_spec, make_project):
    root = make_project(tmp_path / "p", "def test_it():\n    assert value() == 2\n")
    before = (root / "pkg" / "mod.py").read_text()
    out = _run(executor, root, pyenv_spec)
    assert out.outcome == FAIL and out.returncode == 1 and "assert 1 == 2" in out.log
    out = _run(executor, root, pyenv_spec, edits={"pkg/mod.py": "def value():\n    return 2\n"})
    assert out.outcome == PASS and out.seconds > 0
    assert (root / "pkg" / "mod.py").read_text() == before
    assert not list((tmp_path / "work").iterdir()), "work dirs must be removed"


def test_collection_error_is_error(tmp_path, executor, pyenv_spec, make_project):
    root = make_project(tmp_path / "p", "def test_it():\n    assert True\n", module="def value(:\n")
    out = _run(executor, root, pyenv_spec)
    assert out.outcome == ERROR and out.returncode in (2, 4)


def test_timeout_kills_the_run(tmp_path, pyenv_spec, make_project):
    ex = LocalExecutor(timeout_s=3, work_root=tmp_path / "work")
    root = make_project(tmp_path / "p", "import time\ndef test_it():\n    time.sleep(60)\n")
    t0 = time.monotonic()
    out = _run(ex, root, pyenv_spec)
    assert out.outcome == TIMEOUT and out.returncode is None
    assert time.monotonic() - t0 < 20


def test_memory_limit_gives_oom(tmp_path, pyenv_spec, make_project):
    ex = LocalExecutor(timeout_s=30, memory_mb=400, work_root=tmp_path / "work")
    root = make_project(tmp_path / "p", "def test_it():\n    blob = bytearray(2 * 1024 ** 3)\n    assert blob\n")
    out = _run(ex, root, pyenv_spec)
    assert out.outcome == OOM, out.log[-2000:]
    assert "MemoryError" in out.log


def test_writes_outside_the_work_dir_are_refused(tmp_path, executor, pyenv_spec, make_project):
    target = tmp_path / "outside" / "pwned.txt"
    target.parent.mkdir()
    body = f"""
        import os, shutil
        def test_it():
            errors = []
            for action in (lambda: open({str(target)!r}, "w").write("x"),
                           lambda: os.mkdir({str(target.parent / 'd')!r}),
                           lambda: os.rename({str(target.parent)!r}, {str(tmp_path / 'moved')!r}),
                           lambda: os.remove({str(__file__)!r})):
                try:
                    action()
                except PermissionError as exc:
                    errors.append(str(exc))
            open(os.path.expanduser("~/inside.txt"), "w").write("ok")   # HOME is in the work dir
            import tempfile
            with tempfile.NamedTemporaryFile("w") as f:
                f.write("ok")
            assert len(errors) == 4, errors
        """
    out = _run(executor, make_project(tmp_path / "p", body), pyenv_spec)
    assert out.outcome == PASS, out.log[-3000:]
    assert not target.exists() and not (tmp_path / "outside" / "d").exists()
    assert (tmp_path / "outside").exists()


def test_write_from_a_child_python_process_is_refused(tmp_path, executor, pyenv_spec, make_project):
    target = tmp_path / "child_wrote.txt"
    body = f"""
        import subprocess, sys
        def test_it():
            rc = subprocess.call([sys.executable, "-c", "open({str(target)!r}, 'w').write('x')"])
            assert rc != 0
        """
    out = _run(executor, make_project(tmp_path / "p", body), pyenv_spec)
    assert out.outcome == PASS, out.log[-3000:]
    assert not target.exists()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" not in f.read()
    except FileNotFoundError:
        return False


def test_long_running_children_are_killed_and_work_dir_removed(tmp_path, executor, pyenv_spec, make_project):
    # pids printed inside the sandbox are namespace pids: find the children by their command line
    body = """
        import subprocess
        def test_it():
            same_group = subprocess.Popen(["sleep", "303"])
            own_session = subprocess.Popen(["sleep", "301"], start_new_session=True)
            assert False
        """
    out = _run(executor, make_project(tmp_path / "p", body), pyenv_spec)
    assert out.outcome == FAIL
    deadline = time.monotonic() + 5
    while _sleepers("303", "301") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _sleepers("303", "301")
    assert not list((tmp_path / "work").iterdir())


def _sleepers(*durations: str) -> list[str]:
    wanted = {f"sleep\x00{d}\x00" for d in durations}
    return [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) in wanted and _alive(int(p))]


def test_timeout_with_background_child_cleans_everything(tmp_path, pyenv_spec, make_project):
    ex = LocalExecutor(timeout_s=3, work_root=tmp_path / "work")
    body = """
        import subprocess, time
        def test_it():
            subprocess.Popen(["sleep", "302"], start_new_session=True)
            time.sleep(60)
        """
    out = _run(ex, make_project(tmp_path / "p", body), pyenv_spec)
    assert out.outcome == TIMEOUT
    time.sleep(0.5)
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) == "sleep\x00302\x00"]
    assert not list((tmp_path / "work").iterdir())


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read()
    except OSError:
        return ""


def test_venv_cache_is_built_once_and_reused(tmp_path):
    env = EnvSpec(name="empty", pip_specs=())       # no packages: the cheapest real build
    cache = VenvCache(tmp_path / "venvs")
    threads = [threading.Thread(target=cache.ensure, args=(env,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.builds == 1 and cache.is_ready(env)
    again = VenvCache(tmp_path / "venvs")             # another run / process
    python = again.ensure(env)
    assert again.builds == 0 and python.exists()
    other = EnvSpec(name="empty-renamed", pip_specs=())  # the key ignores the name
    assert other.key() == env.key() and again.ensure(other) == python
    assert EnvSpec(name="x", pip_specs=("six==1.17.0",)).key() != env.key()
    # a crashed build (no completion marker) is removed and rebuilt
    (again.path_for(env) / ".reconmem-complete").unlink()
    (again.path_for(env) / "junk").write_text("x")
    again.ensure(env)
    assert again.builds == 1 and not (again.path_for(env) / "junk").exists() and again.is_ready(env)




def test_env_build_failure_is_an_error_outcome(tmp_path, make_project):
    ex = LocalExecutor(venv_dir=tmp_path / "venvs", work_root=tmp_path / "w")
    env = EnvSpec(name="broken", compat_shims=("no_such_shim",))
    root = make_project(tmp_path / "p", "def test_it():\n    pass\n")
    out = ex.run(ExecutionJob(project_root=root, env=env, test_ids=ID))
    assert out.outcome == ERROR and "no_such_shim" in out.log


@pytest.mark.parametrize("rc,log,expected", [
    (0, "", PASS), (1, "", FAIL), (2, "", ERROR), (3, "", ERROR), (4, "ERROR: not found", ERROR), (5, "", ERROR),
    (1, "E   MemoryError", OOM), (-9, "", ERROR), (-9, "std::bad_alloc", OOM), (-15, "", ERROR)])
def test_classify_pytest(rc, log, expected):
    assert classify_pytest(rc, log)[0] == expected
    assert classify_pytest(rc, log, timed_out=True)[0] == TIMEOUT


def test_build_executor_from_config_nodes(tmp_path):
    from omegaconf import OmegaConf

    ex = build_executor({"name": "local", "timeout_s": 5, "venv_dir": str(tmp_path)})
    assert isinstance(ex, LocalExecutor) and ex.timeout_s == 5 and ex.venvs.root == tmp_path
    cfg = OmegaConf.create({"_target_": "benchmarks.sandbox.local.LocalExecutor", "timeout_s": 7,
                            "venv_dir": "${cache.dir}/venvs"})          # unresolvable outside the root config
    ex = build_executor(cfg)
    assert isinstance(ex, LocalExecutor) and ex.timeout_s == 7
    with pytest.raises(ValueError, match="unknown executor name 'ssh'"):
        build_executor("ssh")
    from benchmarks.sandbox.docker_exec import DockerExecutor

    assert isinstance(build_executor("docker"), DockerExecutor)   # no engine needed to construct


def test_build_executor_names_the_class_with_target():
    from benchmarks.sandbox.docker_exec import DockerExecutor

    ex = build_executor({"_target_": "benchmarks.sandbox.docker_exec.DockerExecutor", "name": "docker",
                         "keep_images": "base", "base_image": "auto"})
    assert isinstance(ex, DockerExecutor) and ex.keep_images == "base"
    with pytest.raises(ValueError, match="disagrees with _target_"):
        build_executor({"_target_": "benchmarks.sandbox.local.LocalExecutor", "name": "docker"})
    with pytest.raises(ValueError, match="not an Executor subclass"):
        build_executor({"_target_": "pathlib.Path"})
    with pytest.raises(ValueError, match="cannot be imported"):
        build_executor({"_target_": "benchmarks.sandbox.nope.Executor"})


def test_confinement_choice_and_the_confined_command(tmp_path):
    from benchmarks.sandbox.confine import ConfinementUnavailable, choose

    with pytest.raises(ValueError, match="executor.confine must be one of"):
        choose("chroot")
    assert choose("none").wrap(["python"], work=tmp_path, tree=tmp_path, ro_binds=[], uid=None) == ["python"]
    try:
        bwrap = choose("bwrap")
    except ConfinementUnavailable as exc:
        pytest.skip(str(exc))
    cmd = bwrap.wrap(["python", "-V"], work=tmp_path, tree=tmp_path / "tree", ro_binds=[tmp_path / "venv"],
                     uid=200123)
    for flag in ("--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session"):
        assert flag in cmd
    assert cmd[cmd.index("--bind") + 1] == str(tmp_path) and "--reuid=200123" in cmd
    assert cmd[-2:] == ["python", "-V"]
