"""Docker executor: one image per project environment (generated Dockerfile, tagged by a hash of its
inputs), one throw-away container per job with the network disabled and memory/CPU/pid/time limits.

The docker SDK is imported lazily; :func:`render_dockerfile` and :func:`container_spec` are pure
functions so they can be tested without an engine.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
import tempfile
import threading
import time
from pathlib import Path

from .base import ERROR, EnvSpec, ExecutionJob, ExecutionOutcome, Executor, classify_pytest
from .local import apply_edits, clip_log, copy_tree
from .shims import shim_files

IMAGE_REPO = "reconmem-deveval-env"
WORKDIR = "/work"


class DockerUnavailable(RuntimeError):
    """No Docker engine answered (or the docker SDK is missing)."""


def default_base_image(env: EnvSpec) -> str:
    """``python:<version>-slim`` from the environment's Python version."""
    return f"python:{env.python}-slim"


def build_context_files(env: EnvSpec, base_image: str) -> dict[str, bytes]:
    """Every file of the image build context (name -> bytes), including the Dockerfile."""
    files: dict[str, bytes] = {}
    for name, text in shim_files(env.compat_shims).items():
        files[f"shims/{name}"] = text.encode()
    if env.project_sdist:
        files[f"sdist/{Path(env.project_sdist).name}"] = Path(env.project_sdist).read_bytes()
    files["requirements.txt"] = ("\n".join(env.pip_specs) + "\n").encode()
    files["Dockerfile"] = render_dockerfile(env, base_image).encode()
    return files


def render_dockerfile(env: EnvSpec, base_image: str) -> str:
    """The Dockerfile of a project environment (deterministic for the same inputs)."""
    lines = [f"FROM {base_image}",
             "ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1"]
    if env.os_requirements:
        pkgs = " ".join(sorted(env.os_requirements))
        lines.append("RUN apt-get update && apt-get install -y --no-install-recommends "
                     f"{pkgs} && rm -rf /var/lib/apt/lists/*")
    lines.append("COPY requirements.txt /opt/reconmem/requirements.txt")
    if env.pip_specs:
        no_deps = " --no-deps" if env.pip_no_deps else ""
        lines.append(f"RUN python -m pip install{no_deps} -r /opt/reconmem/requirements.txt")
    if env.project_sdist:
        name = Path(env.project_sdist).name
        lines.append(f"COPY sdist/{name} /opt/reconmem/{name}")
        lines.append(f"RUN python -m pip install --no-deps /opt/reconmem/{name}")
    if env.compat_shims:
        lines.append("COPY shims/ /opt/reconmem/shims/")
        lines.append('RUN cp /opt/reconmem/shims/* "$(python -c \'import sysconfig;'
                     'print(sysconfig.get_paths()["purelib"])\')"/')
    lines.append("RUN useradd --create-home --uid 10001 runner")
    lines.append(f"WORKDIR {WORKDIR}")
    return "\n".join(lines) + "\n"


def image_tag(env: EnvSpec, base_image: str) -> str:
    """Image tag: a hash of every build-context file (so any input change gives a new image)."""
    h = hashlib.sha256()
    for name, data in sorted(build_context_files(env, base_image).items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return f"{IMAGE_REPO}:{h.hexdigest()[:20]}"


def container_spec(env: EnvSpec, image: str, test_ids: list[str], *, memory_mb: int, cpus: float,
                   pids_limit: int = 512, host_tree: str) -> dict:
    """Keyword arguments for ``client.containers.create`` of one job."""
    pythonpath = ":".join(f"{WORKDIR}/tree" if p in (".", "") else f"{WORKDIR}/tree/{p.strip('/')}"
                          for p in env.pythonpath)
    return {
        "image": image,
        "command": ["python", "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *test_ids],
        "working_dir": f"{WORKDIR}/tree",
        "environment": {"PYTHONPATH": pythonpath, "PYTHONDONTWRITEBYTECODE": "1",
                        "HOME": f"{WORKDIR}/home", "TMPDIR": f"{WORKDIR}/tmp", "LANG": "C.UTF-8"},
        "network_disabled": True,
        "mem_limit": f"{memory_mb}m",
        "memswap_limit": f"{memory_mb}m",
        "nano_cpus": int(cpus * 1e9),
        "pids_limit": pids_limit,
        "read_only": True,                      # only the mounted work dir and /tmp are writable
        "tmpfs": {"/tmp": "rw,size=512m"},
        "volumes": {host_tree: {"bind": WORKDIR, "mode": "rw"}},
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        "detach": True,
    }


def _open_permissions(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            mode = p.stat().st_mode
            p.chmod(mode | (0o777 if p.is_dir() else 0o666))


class DockerExecutor(Executor):
    """Run jobs in containers; images are built once per environment and reused."""

    name = "docker"

    def __init__(self, *, timeout_s: float = 60.0, memory_mb: int = 5120, cpus: float = 1.0,
                 base_image: str | None = None, pids_limit: int = 512, client=None, **_ignored):
        super().__init__(timeout_s=timeout_s, memory_mb=memory_mb)
        self.cpus = cpus
        self.base_image = base_image
        self.pids_limit = pids_limit
        self._client = client
        self._lock = threading.Lock()
        self._built: set[str] = set()

    @property
    def client(self):
        if self._client is None:
            try:
                import docker  # lazy: heavy and optional
            except ImportError as exc:
                raise DockerUnavailable("the docker SDK is not installed (pip install docker)") from exc
            try:
                self._client = docker.from_env()
                self._client.ping()
            except Exception as exc:  # noqa: BLE001 - any engine error means "unavailable"
                self._client = None
                raise DockerUnavailable(f"no Docker engine answered: {exc}") from exc
        return self._client

    def _base(self, env: EnvSpec) -> str:
        return self.base_image or default_base_image(env)

    def prepare(self, env: EnvSpec) -> str:
        """Build (or find) the environment's image; returns its tag."""
        base = self._base(env)
        tag = image_tag(env, base)
        with self._lock:
            if tag in self._built:
                return tag
            import docker.errors

            try:
                self.client.images.get(tag)
            except docker.errors.ImageNotFound:
                buf = io.BytesIO()
                with tarfile.open(fileobj=buf, mode="w") as tf:
                    for name, data in build_context_files(env, base).items():
                        info = tarfile.TarInfo(name)
                        info.size = len(data)
                        tf.addfile(info, io.BytesIO(data))
                buf.seek(0)
                self.client.images.build(fileobj=buf, custom_context=True, tag=tag, rm=True,
                                         labels={"reconmem.env": env.name})
            self._built.add(tag)
        return tag

    def run(self, job: ExecutionJob) -> ExecutionOutcome:
        t0 = time.monotonic()
        try:
            image = self.prepare(job.env)
        except DockerUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001
            return ExecutionOutcome(ERROR, f"image build failed: {exc}", time.monotonic() - t0,
                                    detail="env_build")
        work = Path(tempfile.mkdtemp(prefix="reconmem-docker-"))
        container = None
        try:
            copy_tree(Path(job.project_root), work / "tree")
            apply_edits(work / "tree", job.edits)
            for d in ("home", "tmp"):
                (work / d).mkdir()
            _open_permissions(work)          # the container runs as an unprivileged user
            spec = container_spec(job.env, image, job.test_ids, memory_mb=self.memory_mb, cpus=self.cpus,
                                  pids_limit=self.pids_limit, host_tree=str(work))
            spec["user"] = "runner"
            container = self.client.containers.create(**spec)
            container.start()
            timed_out = False
            rc = None
            try:
                rc = container.wait(timeout=job.timeout_s or self.timeout_s).get("StatusCode")
            except Exception:  # requests' ReadTimeout / ConnectionError on expiry
                timed_out = True
                try:
                    container.kill()
                except Exception:  # noqa: BLE001
                    pass
            container.reload()
            oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
            log = clip_log(container.logs(stdout=True, stderr=True).decode(errors="replace"))
            outcome, detail = classify_pytest(rc, log, timed_out=timed_out, oom_killed=oom)
            return ExecutionOutcome(outcome, log, time.monotonic() - t0, returncode=rc, detail=detail)
        finally:
            if container is not None:
                try:
                    container.remove(force=True)
                except Exception:  # noqa: BLE001
                    pass
            shutil.rmtree(work, ignore_errors=True)
