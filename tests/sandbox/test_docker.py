"""Docker executor: Dockerfile, image tag and container spec without an engine; engine tests skip."""

from __future__ import annotations

import pytest

from benchmarks.sandbox.base import EnvSpec, ExecutionJob
from benchmarks.sandbox.docker_exec import (DockerExecutor, DockerUnavailable, build_context_files,
                                            container_spec, image_tag, render_dockerfile)

ENV = EnvSpec(name="Internet/boto", python="3.11.7", pip_specs=("pytest==7.4.4", "mock==5.2.0"),
              pythonpath=("src",), compat_shims=("collections_abc_aliases",), os_requirements=("git",))


def test_dockerfile_installs_exact_pins_shims_and_os_packages():
    text = render_dockerfile(ENV, "python:3.11.7-slim")
    lines = text.splitlines()
    assert lines[0] == "FROM python:3.11.7-slim"
    assert "PYTHONDONTWRITEBYTECODE=1" in text
    assert any("apt-get install" in ln and " git " in ln + " " for ln in lines)
    assert "RUN python -m pip install --no-deps -r /opt/reconmem/requirements.txt" in lines
    assert "COPY shims/ /opt/reconmem/shims/" in lines
    assert "useradd" in text and text.endswith("WORKDIR /work\n")
    files = build_context_files(ENV, "python:3.11.7-slim")
    assert files["requirements.txt"] == b"pytest==7.4.4\nmock==5.2.0\n"
    assert set(files) == {"Dockerfile", "requirements.txt", "shims/_collections_abc_compat.py",
                          "shims/zz_collections_abc_compat.pth"}
    plain = render_dockerfile(EnvSpec(name="x", pip_specs=("pytest==7.4.4",)), "python:3.11-slim")
    assert "apt-get" not in plain and "shims" not in plain


def test_image_tag_is_a_hash_of_the_inputs():
    tag = image_tag(ENV, "python:3.11.7-slim")
    assert tag.startswith("reconmem-deveval-env:") and tag == image_tag(ENV, "python:3.11.7-slim")
    renamed = EnvSpec(**{**ENV.__dict__, "name": "other"})
    assert image_tag(renamed, "python:3.11.7-slim") == tag          # the name is not an input
    assert image_tag(ENV, "python:3.12-slim") != tag
    changed = EnvSpec(**{**ENV.__dict__, "pip_specs": ("pytest==7.4.3",)})
    assert image_tag(changed, "python:3.11.7-slim") != tag


def test_container_spec_limits_and_isolation():
    spec = container_spec(ENV, "img:1", ["tests/a.py::t"], memory_mb=5120, cpus=1.5, host_tree="/tmp/w")
    assert spec["network_disabled"] is True
    assert spec["mem_limit"] == "5120m" and spec["memswap_limit"] == "5120m"
    assert spec["nano_cpus"] == 1_500_000_000 and spec["pids_limit"] == 512
    assert spec["read_only"] is True and spec["cap_drop"] == ["ALL"]
    assert spec["volumes"] == {"/tmp/w": {"bind": "/work", "mode": "rw"}}
    assert spec["command"] == ["python", "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "tests/a.py::t"]
    assert spec["environment"]["PYTHONPATH"] == "/work/tree/src"
    assert spec["environment"]["PYTHONDONTWRITEBYTECODE"] == "1"
    assert spec["working_dir"] == "/work/tree"


def _engine():
    try:
        import docker

        client = docker.from_env()
        client.ping()
        return client
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no Docker engine answered ({type(exc).__name__}: {exc}); docker executor engine tests skipped")


def test_unavailable_engine_raises_a_clear_error(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(DockerUnavailable, match="no Docker engine answered"):
        DockerExecutor().client


@pytest.mark.docker
@pytest.mark.slow
def test_engine_runs_pass_and_timeout(tmp_path):
    _engine()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("import time\ndef test_ok():\n    pass\n"
                                                 "def test_slow():\n    time.sleep(60)\n")
    env = EnvSpec(name="t", python="3.11", pip_specs=("pytest==7.4.4", "iniconfig==2.3.1", "packaging==26.4",
                                                      "pluggy==1.7.0"))
    ex = DockerExecutor(timeout_s=5, memory_mb=512)
    assert ex.run(ExecutionJob(tmp_path, env, ["tests/test_a.py::test_ok"])).outcome == "pass"
    assert ex.run(ExecutionJob(tmp_path, env, ["tests/test_a.py::test_slow"])).outcome == "timeout"


@pytest.mark.docker
def test_engine_answers_and_executor_connects():
    client = _engine()
    ex = DockerExecutor(client=None)
    assert ex.client.ping() and client.version().get("ApiVersion")


class _FakeContainer:
    def __init__(self, log: bytes, rc=None, oom=False, hang=False):
        self._log, self._rc, self._oom, self._hang = log, rc, oom, hang
        self.removed = self.killed = self.started = False
        self.attrs = {}

    def start(self):
        self.started = True

    def wait(self, timeout=None):
        if self._hang:
            raise TimeoutError("read timed out")
        return {"StatusCode": self._rc}

    def kill(self):
        self.killed = True

    def reload(self):
        self.attrs = {"State": {"OOMKilled": self._oom}}

    def logs(self, **_):
        return self._log

    def remove(self, force=False):
        self.removed = force


class _FakeClient:
    """Stands in for docker.DockerClient (no engine): records images and container specs."""

    def __init__(self, container):
        self.container, self.specs, self.built = container, [], []
        client = self

        class Images:
            def get(self, tag):
                import docker.errors

                raise docker.errors.ImageNotFound(tag)

            def build(self, **kw):
                client.built.append(kw)

        class Containers:
            def create(self, **spec):
                client.specs.append(spec)
                return client.container

        self.images, self.containers = Images(), Containers()


@pytest.mark.parametrize("container,outcome", [
    (_FakeContainer(b"1 passed", rc=0), "pass"),
    (_FakeContainer(b"1 failed", rc=1), "fail"),
    (_FakeContainer(b"ERROR: not found", rc=4), "error"),
    (_FakeContainer(b"", rc=137, oom=True), "oom"),
    (_FakeContainer(b"", hang=True), "timeout"),
])
def test_run_with_a_fake_client_maps_outcomes_and_always_removes(tmp_path, container, outcome):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    client = _FakeClient(container)
    ex = DockerExecutor(client=client, timeout_s=1, memory_mb=256)
    out = ex.run(ExecutionJob(tmp_path, ENV, ["tests/test_a.py::test_a"], edits={"extra.py": "x = 1\n"}))
    assert out.outcome == outcome
    assert container.started and container.removed
    assert container.killed == (outcome == "timeout")
    assert client.specs[0]["network_disabled"] is True and client.specs[0]["user"] == "runner"
    assert client.built[0]["tag"] == image_tag(ENV, "python:3.11.7-slim")
    host_dir = next(iter(client.specs[0]["volumes"]))
    import os

    assert not os.path.exists(host_dir), "the host work dir is removed after the run"
