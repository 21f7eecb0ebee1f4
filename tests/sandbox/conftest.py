"""Fixtures for executor tests: a tiny project tree and the small pytest-only environment."""

from __future__ import annotations

import textwrap

import pytest

from benchmarks.sandbox.base import EnvSpec


@pytest.fixture(scope="session")
def pyenv_spec() -> EnvSpec:
    """The pinned pytest-only environment (the same content as boltons', so the venv is shared)."""
    from benchmarks.deveval.tasks import env_spec_for, load_manifest

    boltons = env_spec_for(load_manifest().project("Utilities/boltons"))
    return EnvSpec(name="fixture", python=boltons.python, pip_specs=boltons.pip_specs)


def _make_project(root, test_body: str, module: str = "def value():\n    return 1\n"):
    """A project with ``pkg/mod.py`` and ``tests/test_mod.py`` holding ``test_body``."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text(module)
    (root / "tests").mkdir()
    (root / "tests" / "test_mod.py").write_text("from pkg.mod import value\n\n" + textwrap.dedent(test_body))
    return root


@pytest.fixture
def make_project():
    """Factory: ``make_project(root, test_body, module=...)`` -> root."""
    return _make_project


def docker_client_or_skip():
    """A docker SDK client of a running engine, or skip (a skip of a docker test fails in CI)."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
        return client
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no Docker engine answered ({type(exc).__name__}: {exc}); run `make docker-engine`")


@pytest.fixture(scope="session")
def docker_client():
    """The docker SDK client of the running engine (skips without one; in CI that skip fails)."""
    return docker_client_or_skip()


@pytest.fixture(scope="session")
def docker_executor(docker_client):
    """A Docker executor on the running engine (base image auto: the local Debian base here)."""
    from benchmarks.sandbox.docker_exec import DockerExecutor

    return DockerExecutor(client=docker_client, timeout_s=8, memory_mb=512, pids_limit=256)
