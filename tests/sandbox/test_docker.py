"""Docker executor: Dockerfile, image tag, container spec and outcome mapping without an engine (a fake
client), then the same executor against the running engine (``make docker-engine``)."""

from __future__ import annotations

import pytest

from benchmarks.sandbox.base import EnvSpec, ExecutionJob
from benchmarks.sandbox.base_image import BaseImage, PythonMismatch
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


def test_offline_dockerfile_installs_from_the_copied_wheelhouse(tmp_path):
    wheel = tmp_path / "pytest-7.4.4-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel")
    wheels = {wheel.name: wheel}
    text = render_dockerfile(ENV, "reconmem-base:x", base_id="sha256:abc", wheels=wheels, ignore_requires_python=True)
    assert "LABEL reconmem.base_id=sha256:abc" in text and "COPY wheels/ /opt/reconmem/wheels/" in text
    assert ("RUN python -m pip install --no-index --find-links /opt/reconmem/wheels --ignore-requires-python "
            "--no-deps -r /opt/reconmem/requirements.txt") in text.splitlines()
    files = build_context_files(ENV, "reconmem-base:x", base_id="sha256:abc", wheels=wheels)
    assert files["wheels/" + wheel.name] == wheel
    tag = image_tag(ENV, "reconmem-base:x", base_id="sha256:abc", wheels=wheels)
    assert tag != image_tag(ENV, "reconmem-base:x", base_id="sha256:abd", wheels=wheels)   # base content
    wheel.write_bytes(b"another build of it")
    assert tag != image_tag(ENV, "reconmem-base:x", base_id="sha256:abc", wheels=wheels)   # wheel content


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
    assert spec["labels"] == {"reconmem.project": "run"} and spec["init"] is True


def test_python_check_refuses_minor_and_records_patch():
    base = BaseImage("reconmem-base:x", "sha256:1", "local-debootstrap", "3.11.2")
    assert base.check_python("3.11.7") == {"python_wanted": "3.11.7", "python_image": "3.11.2",
                                           "python_patch_mismatch": True}
    assert base.check_python("3.11")["python_patch_mismatch"] is False
    with pytest.raises(PythonMismatch, match="minor versions differ"):
        base.check_python("3.12.1")


def test_keep_images_is_validated():
    with pytest.raises(ValueError, match="executor.keep_images"):
        DockerExecutor(keep_images="all")


def test_unavailable_engine_raises_a_clear_error(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(DockerUnavailable, match="no Docker engine answered"):
        DockerExecutor().client


# ----------------------------------------------------------------------------- against the engine

@pytest.mark.docker
def test_engine_base_image_auto_is_the_local_debian_base(docker_client):
    from benchmarks.sandbox.base_image import local_base_tag, resolve_base_image

    client = docker_client
    base = resolve_base_image(client, "auto", "3.11.7")
    # Docker Hub is unreachable here: the local base built from Debian packages stands in
    assert base.source in ("registry", "local-debootstrap")
    if base.source == "local-debootstrap":
        assert base.tag == local_base_tag() and base.id.startswith("sha256:")
        assert base.python.startswith("3.11.") and client.images.get(base.tag).labels["reconmem.project"] == "base"
    assert base.check_python("3.11.7")["python_image"] == base.python


@pytest.mark.docker
def test_engine_runs_pass_fail_and_timeout_offline(tmp_path, docker_executor, pyenv_spec):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("import time\ndef test_ok():\n    pass\n"
                                                 "def test_bad():\n    assert 0\n"
                                                 "def test_slow():\n    time.sleep(60)\n")
    ex = docker_executor
    ok = ex.run(ExecutionJob(tmp_path, pyenv_spec, ["tests/test_a.py::test_ok"]))
    assert ok.outcome == "pass" and ok.overhead_s is not None and ok.overhead_s > 0
    assert ex.run(ExecutionJob(tmp_path, pyenv_spec, ["tests/test_a.py::test_bad"])).outcome == "fail"
    assert ex.run(ExecutionJob(tmp_path, pyenv_spec, ["tests/test_a.py::test_slow"], timeout_s=3)).outcome == "timeout"
    record = ex.describe()
    tag = ex.prepare(pyenv_spec)
    image = ex.client.images.get(tag)
    assert image.labels["reconmem.base_id"] == record["base_images"][pyenv_spec.python]["id"]
    assert record["images"][tag]["offline_build"] is True and record["images"][tag]["wheels"] >= 4


@pytest.mark.docker
def test_engine_keep_images_base_removes_the_env_images_it_built(tmp_path, docker_client):
    client = docker_client
    env = EnvSpec(name="empty", python="3.11", pip_specs=())            # no pins: a quick build
    ex = DockerExecutor(client=client, keep_images="base", timeout_s=30)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_e.py").write_text("def test_e():\n    pass\n")
    import docker.errors

    tag = ex.prepare(env)
    for old in list(ex._created):                 # an earlier run may have left it: count it as ours
        assert old == tag
    if tag not in ex._created:
        ex._created.append(tag)
    client.images.get(tag)
    ex.close()
    with pytest.raises(docker.errors.ImageNotFound):
        client.images.get(tag)
    client.images.get(ex.base_for(env).tag)          # keep_images=base keeps the base image


@pytest.mark.docker
def test_engine_answers_and_executor_connects(docker_client):
    client = docker_client
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

                if tag == "python:3.11.7-slim":
                    return type("Image", (), {"id": "sha256:base", "labels": {}})()
                raise docker.errors.ImageNotFound(tag)

            def pull(self, name):
                raise AssertionError("the base image is present; nothing is pulled")

            def build(self, **kw):
                client.built.append(kw)

        class Containers:
            def create(self, **spec):
                client.specs.append(spec)
                return client.container

            def run(self, image, command, **kw):          # the base image's Python version probe
                assert kw.get("network_disabled") and kw.get("remove")
                return b"3.11.7\n"

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
    ex = DockerExecutor(client=client, timeout_s=1, memory_mb=256, offline_build=False)
    out = ex.run(ExecutionJob(tmp_path, ENV, ["tests/test_a.py::test_a"], edits={"extra.py": "x = 1\n"}))
    assert out.outcome == outcome
    assert container.started and container.removed
    assert container.killed == (outcome == "timeout")
    assert client.specs[0]["network_disabled"] is True and client.specs[0]["user"] == "runner"
    assert client.built[0]["tag"] == image_tag(ENV, "python:3.11.7-slim", base_id="sha256:base")
    host_dir = next(iter(client.specs[0]["volumes"]))
    import os

    assert not os.path.exists(host_dir), "the host work dir is removed after the run"


@pytest.mark.docker
def test_make_docker_engine_is_silent_when_an_engine_runs(docker_client):
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "docker_engine.sh"
    env = {k: v for k, v in __import__("os").environ.items() if k != "RECONMEM_NO_DOCKER"}
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout + proc.stderr
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120,
                          env={**env, "RECONMEM_NO_DOCKER": "1"})
    assert proc.returncode == 0 and proc.stdout.startswith("docker-engine: engine skipped (RECONMEM_NO_DOCKER=1)")
