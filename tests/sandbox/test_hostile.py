"""Hostile completions under both executors: each is contained, classified, and leaves nothing behind.

The completion is the body of ``pkg.mod.value()``; the project's test calls it and asserts it
returned 1. A hostile action that *succeeds* makes ``value()`` return 1 (the test passes, i.e. the
sandbox leaked); a contained one raises, hangs or is killed. Local runs use the OS confinement
chosen at run time (bubblewrap here); the Docker runs need an engine (``make docker-engine``).
"""

from __future__ import annotations

import os
import textwrap
import time
import uuid

import pytest

from benchmarks.sandbox.base import FAIL, OOM, TIMEOUT, ExecutionJob
from benchmarks.sandbox.confine import choose
from benchmarks.sandbox.local import LocalExecutor

ID = ["tests/test_mod.py::test_it"]
SECRET = "sk-reconmem-hostile-test-0123456789"
TEST = "def test_it():\n    assert value() == 1\n"

# name -> (body of value(), outcomes accepted)
HOSTILE = {
    "socket": ("""
        import socket
        for host in ("pypi.org", "1.1.1.1", "deb.debian.org"):
            try:
                socket.create_connection((host, 443), timeout=3).close()
                return 1                                   # reached the network
            except OSError:
                pass
        raise RuntimeError("no network")
        """, {FAIL}),
    "fork_bomb": ("""
        import os
        while True:
            os.fork()
        """, {FAIL, TIMEOUT, OOM}),          # pids limit, then whichever limit it hits first
    "write_outside": ("""
        import subprocess
        # a shell, not Python: the audit-hook guard does not see it, only the OS boundary does
        subprocess.run(["sh", "-c", "mkdir -p {outside} && echo pwned > {outside}/pwned.txt"])
        subprocess.run(["sh", "-c", "echo pwned > /etc/reconmem-pwned"])
        raise RuntimeError("done writing")              # whether it leaked is checked on the host
        """, {FAIL}),
    "read_env_secrets": ("""
        import os
        if any("{secret}" in v for v in os.environ.values()):
            return 1
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    if b"{secret}" in open("/proc/%s/environ" % pid, "rb").read():
                        return 1
                except OSError:
                    pass
        raise RuntimeError("no secret found")
        """, {FAIL}),
    "sleep_forever": ("""
        import time
        while True:
            time.sleep(3600)
        """, {TIMEOUT}),
    "memory_hog": ("""
        blocks = []
        while True:
            blocks.append(b"x" * (64 * 1024 * 1024))     # touched pages: real memory, not address space
        """, {OOM}),
    "kill_the_parent": ("""
        import os, signal
        os.kill(os.getppid(), signal.SIGKILL)
        import time
        time.sleep(2)
        raise RuntimeError("parent survived")
        """, {FAIL}),
}


def _project(root, body: str):
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text("def value():\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
                                         + "\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_mod.py").write_text("from pkg.mod import value\n\n\n" + TEST)
    return root


def _run_processes(work_root) -> list[str]:
    """Processes of runs under ``work_root`` (their HOME lies in the run's work dir)."""
    needle = f"HOME={work_root}/".encode()
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if needle in f.read():
                        out.append(pid)
            except OSError:
                pass
    return out


def _run_hostile(executor, env, name, tmp_path, monkeypatch):
    body, accepted = HOSTILE[name]
    outside = tmp_path / "outside"
    body = body.replace("{outside}", str(outside)).replace("{secret}", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)          # the harness's own environment holds a key
    root = _project(tmp_path / "p", body)
    t0 = time.monotonic()
    out = executor.run(ExecutionJob(project_root=root, env=env, test_ids=ID, timeout_s=8,
                                    label=f"hostile-{name}-{uuid.uuid4().hex}"))
    assert time.monotonic() - t0 < 120
    print(f"HOSTILE {executor.name} {name}: {out.outcome} ({out.detail})")
    assert out.outcome in accepted, f"{name}: {out.outcome} ({out.detail})\n{out.log[-2500:]}"
    assert not (outside / "pwned.txt").exists() and not os.path.exists("/etc/reconmem-pwned")
    assert (root / "pkg" / "mod.py").exists() and not (root / "pwned.txt").exists()
    return out


@pytest.fixture
def local_executor(tmp_path):
    if choose("auto").kind == "none":
        pytest.skip("no OS confinement available here (install bubblewrap: make sandbox-deps)")
    return LocalExecutor(timeout_s=8, memory_mb=512, work_root=tmp_path / "work", pids_limit=256)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_local(name, local_executor, pyenv_spec, tmp_path, monkeypatch):
    out = _run_hostile(local_executor, pyenv_spec, name, tmp_path, monkeypatch)
    work = (tmp_path / "work").resolve()
    deadline = time.monotonic() + 10
    while _run_processes(work) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _run_processes(work), "processes of the run survived it"
    assert not list((tmp_path / "work").iterdir()), "work dir left behind"
    if name == "kill_the_parent":
        assert "parent survived" in out.log or "PermissionError" in out.log or "ProcessLookupError" in out.log


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_docker(name, docker_client, pyenv_spec, tmp_path, monkeypatch):
    from benchmarks.sandbox.docker_exec import DockerExecutor

    executor = DockerExecutor(client=docker_client, timeout_s=8, memory_mb=512, pids_limit=256,
                              work_root=tmp_path / "work")
    _run_hostile(executor, pyenv_spec, name, tmp_path, monkeypatch)
    left = [c.name for c in docker_client.containers.list(all=True, filters={"label": "reconmem.job"})
            if c.labels.get("reconmem.job", "").startswith(f"hostile-{name}-")]
    assert not left, f"containers left: {left}"
    assert not list((tmp_path / "work").iterdir()), "host work dir left behind"
