"""Docker validation logic with a fake docker client, then against the running engine."""

from __future__ import annotations

import io
import tarfile
from dataclasses import replace

import pytest

from benchmarks.cab.docker_check import answer_edits, docker_validate
from cab_testkit import FIXTURE_REPO

ANSWER = """Use this Dockerfile:
MODIFY_DOCKERFILE:
FROM python:3.11-slim
COPY . /app
END_DOCKERFILE
and add
CREATE_FILE[config/app.env]:
TINYKV_TIMEOUT=30
END_FILE
CREATE_FILE[../../etc/evil]:
nope
END_FILE
"""


class FakeImages:
    def __init__(self, fail: bool):
        self.fail = fail
        self.members: dict[str, bytes] = {}
        self.removed: list[str] = []

    def build(self, *, fileobj, custom_context, dockerfile, tag, **kw):
        with tarfile.open(fileobj=io.BytesIO(fileobj.read())) as tf:
            for m in tf.getmembers():
                f = tf.extractfile(m)
                self.members[m.name] = f.read() if f else b""
        if self.fail:
            err = RuntimeError("build failed")
            err.build_log = [{"stream": "Step 1/2\n"}, {"error": "pip: not found"}]
            raise err
        return object(), [{"stream": "Successfully built\n"}]

    def remove(self, tag, force=False):
        self.removed.append(tag)


class FakeClient:
    def __init__(self, fail=False):
        self.images = FakeImages(fail)


def test_answer_edits_confined():
    dockerfile, files = answer_edits(ANSWER)
    assert dockerfile.startswith("FROM python:3.11-slim") and files == {"config/app.env": "TINYKV_TIMEOUT=30\n"}


def test_docker_validate_success_and_failure(fixture_issue):
    issue = replace(fixture_issue, dockerfile="FROM alpine\n")
    ok_client = FakeClient()
    res = docker_validate(ok_client, issue, FIXTURE_REPO, ANSWER)
    assert res["success"] and res["dockerfile_modified"] and res["created_files"] == ["config/app.env"]
    m = ok_client.images.members
    assert m["Dockerfile.cab"].startswith(b"FROM python:3.11-slim") and "tinykv/config.py" in m
    assert not any(".." in name for name in m) and ok_client.images.removed
    bad = docker_validate(FakeClient(fail=True), issue, FIXTURE_REPO, "no edits")
    assert not bad["success"] and "pip: not found" in bad["logs"] and not bad["dockerfile_modified"]


# ----------------------------------------------------------------------------- against the engine

def _engine_client():
    try:
        from benchmarks.cab.docker_check import docker_client_from_executor

        return docker_client_from_executor({"name": "docker"})
    except Exception as exc:  # noqa: BLE001 - DockerUnavailableForIssue and friends
        pytest.skip(f"no Docker engine answered ({exc}); run `make docker-engine`")


@pytest.mark.docker
def test_docker_validate_against_the_engine_from_the_local_base(fixture_issue):
    """A fixture Dockerfile FROM the project's base image (the local Debian one without Docker Hub)."""
    from benchmarks.sandbox.base_image import resolve_base_image

    client = _engine_client()
    base = resolve_base_image(client, "auto", "3.11")
    dockerfile = (f"FROM {base.tag}\nCOPY . /app\nWORKDIR /app\n"
                  "RUN python -c \"import tinykv.config, pathlib; assert pathlib.Path('config/app.env').read_text()\"\n")
    issue = replace(fixture_issue, dockerfile=dockerfile)
    answer = "CREATE_FILE[config/app.env]:\nTINYKV_TIMEOUT=30\nEND_FILE\n"
    before = {t for i in client.images.list() for t in i.tags}
    dangling_before = {i.id for i in client.images.list(filters={"dangling": True})}
    ok = docker_validate(client, issue, FIXTURE_REPO, answer, timeout_s=600)
    assert ok["success"], ok["logs"][-2000:] + str(ok["error"])
    assert ok["created_files"] == ["config/app.env"] and not ok["dockerfile_modified"]
    # without the created file the RUN step fails: the build outcome is a real check
    bad = docker_validate(client, issue, FIXTURE_REPO, "no edits", timeout_s=600)
    assert not bad["success"] and bad["error"]
    broken = docker_validate(client, issue, FIXTURE_REPO, "MODIFY_DOCKERFILE:\nFROM " + base.tag +
                             "\nRUN exit 3\nEND_DOCKERFILE\n", timeout_s=600)
    assert not broken["success"] and broken["dockerfile_modified"]
    after = {t for i in client.images.list() for t in i.tags}
    assert not {t for t in after - before if t.startswith("reconmem-cab-")}, "validation images are removed"
    dangling_after = {i.id for i in client.images.list(filters={"dangling": True})}
    assert not dangling_after - dangling_before, "a failed build's step images are removed too"
    client.images.get(base.tag)                      # and the base image it was built from stays
