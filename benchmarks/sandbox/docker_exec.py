"""Docker executor: one image per project environment (generated Dockerfile, tagged by a hash of every
build input), one throw-away container per job with the network disabled and memory/CPU/pid/time
limits.

Builds need no network and no Docker Hub:
- the base image is ``executor.base_image`` (``auto``: ``python:<version>-slim`` when the registry
  answers, else a local Debian base built with debootstrap, see :mod:`benchmarks.sandbox.base_image`);
- an environment's pinned ``pip_specs`` (and its project sdist, if installed) are resolved into a
  wheelhouse on the host with the host's own pip configuration, copied into the build context, and
  installed with ``pip install --no-index``. (Only ``os_requirements`` still use ``apt-get`` during
  the build; no shipped project has any.)

The docker SDK is imported lazily; :func:`render_dockerfile`, :func:`build_context_files`,
:func:`image_tag` and :func:`container_spec` are pure functions testable without an engine.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

from .base import ERROR, EnvSpec, ExecutionJob, ExecutionOutcome, Executor, classify_pytest
from .base_image import PROJECT_LABEL, BaseImage, BaseImageError, PythonMismatch, resolve_base_image
from .local import apply_edits, clip_log, copy_tree
from .shims import shim_files

IMAGE_REPO = "reconmem-deveval-env"
WORKDIR = "/work"
RUNNER_UID = 10001
KEEP_IMAGES = ("env", "base", "none")


class DockerUnavailable(RuntimeError):
    """No Docker engine answered (or the docker SDK is missing)."""


class WheelhouseError(RuntimeError):
    """Resolving an environment's pip specs into wheels on the host failed."""


def default_base_image(env: EnvSpec) -> str:
    """``python:<version>-slim`` from the environment's Python version (the registry image)."""
    return f"python:{env.python}-slim"


# ------------------------------------------------------------------------------------ wheelhouse

def wheelhouse_key(env: EnvSpec) -> str:
    """Hash of what decides a wheelhouse's content."""
    payload = {"pip_specs": sorted(env.pip_specs), "no_deps": env.pip_no_deps,
               "sdist": env.project_sdist_sha256 if env.project_sdist else None,
               "python": ".".join(env.python.split(".")[:2])}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def build_wheelhouse(env: EnvSpec, root: Path, *, python: str | None = None) -> Path:
    """Wheels for every pinned spec (and the project sdist) in ``root/<key>/``, built once.

    Uses ``pip wheel`` of the host interpreter (so the host's pip configuration, index and
    find-links apply); sdists are built into wheels here, so the image build needs no network and
    no build backend. The host's Python minor version must equal the environment's.
    """
    python = python or sys.executable
    want = ".".join(env.python.split(".")[:2])
    have = "%d.%d" % sys.version_info[:2] if python == sys.executable else want
    if want != have:
        raise WheelhouseError(f"environment {env.name!r} asks for Python {want}, the host resolving its wheels "
                              f"runs {have}; wheels would not match the image")
    target = Path(root) / wheelhouse_key(env)
    if (target / ".complete").exists():
        return target
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=root))
    try:
        specs = list(env.pip_specs) + ([str(env.project_sdist)] if env.project_sdist else [])
        if specs:
            cmd = [python, "-m", "pip", "wheel", "-q", "--wheel-dir", str(tmp),
                   *(["--no-deps"] if env.pip_no_deps else []), *specs]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                                  env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
            if proc.returncode != 0:
                raise WheelhouseError(f"environment {env.name!r}: pip wheel of its pinned specs failed "
                                      f"(rc={proc.returncode}):\n{(proc.stdout + proc.stderr).strip()[-2000:]}")
        (tmp / ".complete").write_text("ok\n")
        try:
            tmp.rename(target)
        except OSError:           # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if tmp.exists() and not (target / ".complete").exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def wheel_files(wheelhouse: Path | None) -> dict[str, Path]:
    """``{file name: path}`` of the wheels in a wheelhouse (sorted, hidden files skipped)."""
    if wheelhouse is None:
        return {}
    return {p.name: p for p in sorted(Path(wheelhouse).iterdir()) if p.is_file() and not p.name.startswith(".")}


# ------------------------------------------------------------------------------ build context

def render_dockerfile(env: EnvSpec, base_image: str, *, base_id: str | None = None,
                      wheels: dict[str, Path] | None = None, ignore_requires_python: bool = False,
                      os_in_base: bool = False) -> str:
    """The Dockerfile of a project environment (deterministic for the same inputs).

    ``wheels`` given: pip installs only from the copied wheelhouse (``--no-index``); None: from the
    index (needs network at build time). ``base_id`` (the base image's content id) is recorded as a
    label so a rebuilt base gives a different tag. ``ignore_requires_python``: the image's Python
    differs from the environment's in the patch version only (e.g. Debian's 3.11.2 for a pin set
    validated on 3.11.7); pins whose ``Requires-Python`` names a later patch are installed anyway
    (recorded in the executor's image record). ``os_in_base``: the base already has the
    environment's ``os_requirements`` (the local Debian base is debootstrapped with them), so no
    ``apt-get`` (and no network) is needed.
    """
    lines = [f"FROM {base_image}"]
    if base_id:
        lines.append(f"LABEL reconmem.base_id={base_id}")
    lines += [f"LABEL {PROJECT_LABEL}=env",
              "ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1"]
    if env.os_requirements and not os_in_base:
        pkgs = " ".join(sorted(env.os_requirements))
        lines.append("RUN apt-get update && apt-get install -y --no-install-recommends "
                     f"{pkgs} && rm -rf /var/lib/apt/lists/*")
    lines.append("COPY requirements.txt /opt/reconmem/requirements.txt")
    offline = wheels is not None
    if offline and wheels:
        lines.append("COPY wheels/ /opt/reconmem/wheels/")
    pip = "python -m pip install" + (" --no-index --find-links /opt/reconmem/wheels" if offline else "")
    if ignore_requires_python:
        pip += " --ignore-requires-python"
    if env.pip_specs:
        no_deps = " --no-deps" if env.pip_no_deps else ""
        lines.append(f"RUN {pip}{no_deps} -r /opt/reconmem/requirements.txt")
    if env.project_sdist:
        name = Path(env.project_sdist).name
        if offline:      # the sdist was built into a wheel on the host
            dist = name.rsplit("-", 1)[0]
            lines.append(f"RUN {pip} --no-deps {dist}")
        else:
            lines.append(f"COPY sdist/{name} /opt/reconmem/{name}")
            lines.append(f"RUN python -m pip install --no-deps /opt/reconmem/{name}")
    if offline and wheels:
        lines.append("RUN rm -rf /opt/reconmem/wheels")
    if env.compat_shims:
        lines.append("COPY shims/ /opt/reconmem/shims/")
        lines.append('RUN cp /opt/reconmem/shims/* "$(python -c \'import sysconfig;'
                     'print(sysconfig.get_paths()["purelib"])\')"/')
    lines.append(f"RUN id -u runner >/dev/null 2>&1 || useradd --create-home --uid {RUNNER_UID} runner")
    lines.append(f"WORKDIR {WORKDIR}")
    return "\n".join(lines) + "\n"


def build_context_files(env: EnvSpec, base_image: str, *, base_id: str | None = None,
                        wheels: dict[str, Path] | None = None, ignore_requires_python: bool = False,
                        os_in_base: bool = False) -> dict[str, bytes | Path]:
    """Every file of the image build context (name -> bytes or a host path), including the Dockerfile."""
    files: dict[str, bytes | Path] = {}
    for name, text in shim_files(env.compat_shims).items():
        files[f"shims/{name}"] = text.encode()
    if env.project_sdist and wheels is None:
        files[f"sdist/{Path(env.project_sdist).name}"] = Path(env.project_sdist).read_bytes()
    for name, path in (wheels or {}).items():
        files[f"wheels/{name}"] = Path(path)
    files["requirements.txt"] = ("\n".join(env.pip_specs) + "\n").encode()
    files["Dockerfile"] = render_dockerfile(env, base_image, base_id=base_id, wheels=wheels,
                                            ignore_requires_python=ignore_requires_python,
                                            os_in_base=os_in_base).encode()
    return files


def _digest(data: bytes | Path) -> bytes:
    if isinstance(data, Path):
        h = hashlib.sha256()
        with open(data, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.digest()
    return hashlib.sha256(data).digest()


def image_tag(env: EnvSpec, base_image: str, *, base_id: str | None = None,
              wheels: dict[str, Path] | None = None, ignore_requires_python: bool = False,
              os_in_base: bool = False) -> str:
    """Image tag: a hash of every build-context file (so any input change gives a new image)."""
    h = hashlib.sha256()
    files = build_context_files(env, base_image, base_id=base_id, wheels=wheels,
                                ignore_requires_python=ignore_requires_python, os_in_base=os_in_base)
    for name, data in sorted(files.items()):
        h.update(name.encode() + b"\0" + _digest(data))
    return f"{IMAGE_REPO}:{h.hexdigest()[:20]}"


def _context_tar(files: dict[str, bytes | Path], fileobj) -> None:
    import io

    with tarfile.open(fileobj=fileobj, mode="w") as tf:
        for name, data in sorted(files.items()):
            if isinstance(data, Path):
                tf.add(str(data), arcname=name, recursive=False)
            else:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))


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
        # a minimal init (docker-init) is pid 1, as bubblewrap's is locally: pytest as pid 1 would
        # differ from every other run (e.g. gunicorn's test uses LISTEN_PID=1 as "another process")
        "init": True,
        "labels": {PROJECT_LABEL: "run"},
        "detach": True,
    }


def _open_permissions(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            mode = p.stat().st_mode
            p.chmod(mode | (0o777 if p.is_dir() else 0o666))


class DockerExecutor(Executor):
    """Run jobs in containers; images are built once per environment and reused.

    ``base_image``: ``auto``/None (registry image, else the local Debian base) or an image name.
    ``offline_build``: install pip specs from a host-built wheelhouse (default) instead of the index.
    ``keep_images``: ``env`` keep base and environment images (default), ``base`` remove the
    environment images this executor built when it is closed, ``none`` remove those and the base.
    """

    name = "docker"

    def __init__(self, *, timeout_s: float = 60.0, memory_mb: int = 5120, cpus: float = 1.0,
                 base_image: str | None = "auto", pids_limit: int = 512, keep_images: str = "env",
                 offline_build: bool = True, wheelhouse_dir: str | Path | None = None,
                 work_root: str | Path | None = None, client=None, **_ignored):
        super().__init__(timeout_s=timeout_s, memory_mb=memory_mb)
        if keep_images not in KEEP_IMAGES:
            raise ValueError(f"executor.keep_images must be one of {list(KEEP_IMAGES)}, got {keep_images!r}")
        self.cpus = cpus
        self.base_image = base_image or "auto"
        self.pids_limit = pids_limit
        self.keep_images = keep_images
        self.offline_build = offline_build
        self._wheelhouse_dir = Path(wheelhouse_dir) if wheelhouse_dir else None
        self.work_root = Path(work_root) if work_root else None      # host dirs of runs (None: system temp)
        self._client = client
        self._lock = threading.Lock()
        self._built: dict[str, str] = {}                # env key -> image tag
        self._bases: dict[str, BaseImage] = {}          # python version -> base image
        self.images: dict[str, dict] = {}               # image tag -> record (env, build seconds, python check)
        self._created: list[str] = []                   # images this executor built (for keep_images)
        self._closed = False

    # -- engine ------------------------------------------------------------------------------------
    @property
    def client(self):
        if self._client is None:
            try:
                import docker  # lazy: heavy and optional
            except ImportError as exc:
                raise DockerUnavailable("the docker SDK is not installed (pip install docker)") from exc
            try:
                self._client = docker.from_env(timeout=300)
                self._client.ping()
            except Exception as exc:  # noqa: BLE001 - any engine error means "unavailable"
                self._client = None
                raise DockerUnavailable(f"no Docker engine answered: {exc} (run `make docker-engine`)") from exc
        return self._client

    @property
    def wheelhouse_dir(self) -> Path:
        if self._wheelhouse_dir is None:
            from reconmem.platform.downloads import cache_root

            self._wheelhouse_dir = cache_root() / "wheelhouse"
        self._wheelhouse_dir.mkdir(parents=True, exist_ok=True)
        return self._wheelhouse_dir

    # -- images ------------------------------------------------------------------------------------
    def base_for(self, env: EnvSpec) -> BaseImage:
        """The resolved base image for an environment's Python and OS packages (cached)."""
        key = env.python if not env.os_requirements else f"{env.python}+{','.join(sorted(env.os_requirements))}"
        if key not in self._bases:
            from reconmem.platform.downloads import cache_root

            self._bases[key] = resolve_base_image(self.client, self.base_image, env.python, lock_dir=cache_root(),
                                                  os_packages=tuple(env.os_requirements))
        return self._bases[key]

    def prepare(self, env: EnvSpec) -> str:
        """Build (or find) the environment's image; returns its tag.

        Raises :class:`PythonMismatch` when the base image's Python minor version differs.
        """
        key = env.key()
        with self._lock:
            if key in self._built:
                return self._built[key]
            import docker.errors

            base = self.base_for(env)
            python_check = base.check_python(env.python)
            wheels = wheel_files(build_wheelhouse(env, self.wheelhouse_dir)) if self.offline_build else None
            ctx = {"base_id": base.id, "wheels": wheels,
                   "ignore_requires_python": bool(python_check["python_patch_mismatch"]),
                   "os_in_base": bool(env.os_requirements) and base.provides(env.os_requirements)}
            tag = image_tag(env, base.tag, **ctx)
            seconds, built = 0.0, False
            try:
                self.client.images.get(tag)
            except docker.errors.ImageNotFound:
                t0 = time.monotonic()
                with tempfile.TemporaryFile() as buf:
                    _context_tar(build_context_files(env, base.tag, **ctx), buf)
                    buf.seek(0)
                    self.client.images.build(fileobj=buf, custom_context=True, tag=tag, rm=True, forcerm=True,
                                             network_mode="none" if self.offline_build and
                                             (not env.os_requirements or ctx["os_in_base"]) else None,
                                             labels={"reconmem.env": env.name})
                seconds, built = time.monotonic() - t0, True
                self._created.append(tag)
                if self.keep_images != "env":
                    atexit.register(self.close)
            self.images[tag] = {"env": env.name, "env_key": key, "built_now": built,
                                "build_seconds": round(seconds, 1), "offline_build": self.offline_build,
                                "wheels": len(wheels or {}),
                                "ignore_requires_python": ctx["ignore_requires_python"], **python_check}
            self._built[key] = tag
        return tag

    def describe(self) -> dict:
        """What a run manifest records about this executor (base image, environment images, limits)."""
        return {"name": self.name, "timeout_s": self.timeout_s, "memory_mb": self.memory_mb, "cpus": self.cpus,
                "pids_limit": self.pids_limit, "network": "disabled", "keep_images": self.keep_images,
                "base_image_setting": self.base_image, "offline_build": self.offline_build,
                "base_images": {py: b.to_dict() for py, b in self._bases.items()},
                "images": dict(self.images)}

    def close(self) -> None:
        """Apply ``keep_images``: remove the environment (and, for ``none``, base) images built here."""
        if self._closed or self.keep_images == "env" or self._client is None:
            return
        self._closed = True
        tags = list(self._created)
        if self.keep_images == "none":
            tags += [b.tag for b in self._bases.values() if b.source == "local-debootstrap"]
        for tag in tags:
            try:
                self._client.images.remove(tag, force=True)
            except Exception:  # noqa: BLE001 - already gone / in use elsewhere
                pass

    # -- runs --------------------------------------------------------------------------------------
    def run(self, job: ExecutionJob) -> ExecutionOutcome:
        t0 = time.monotonic()
        try:
            image = self.prepare(job.env)
        except (DockerUnavailable, PythonMismatch):
            raise
        except (BaseImageError, WheelhouseError, Exception) as exc:  # noqa: BLE001
            return ExecutionOutcome(ERROR, f"image build failed: {exc}", time.monotonic() - t0,
                                    detail="env_build")
        t_job = time.monotonic()
        if self.work_root:
            self.work_root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="reconmem-docker-", dir=self.work_root))
        container = None
        waited = 0.0
        result = None
        try:
            copy_tree(Path(job.project_root), work / "tree")
            apply_edits(work / "tree", job.edits)
            for d in ("home", "tmp"):
                (work / d).mkdir()
            _open_permissions(work)          # the container runs as an unprivileged user
            spec = container_spec(job.env, image, job.test_ids, memory_mb=self.memory_mb, cpus=self.cpus,
                                  pids_limit=self.pids_limit, host_tree=str(work))
            spec["user"] = "runner"
            if job.label:
                spec["labels"] = {**spec["labels"], "reconmem.job": job.label[:250]}
            container = self.client.containers.create(**spec)
            container.start()
            t_wait = time.monotonic()
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
            waited = time.monotonic() - t_wait
            container.reload()
            oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
            log_text = clip_log(container.logs(stdout=True, stderr=True).decode(errors="replace"))
            outcome, detail = classify_pytest(rc, log_text, timed_out=timed_out, oom_killed=oom)
            result = ExecutionOutcome(outcome, log_text, time.monotonic() - t0, returncode=rc, detail=detail)
        finally:
            if container is not None:
                try:
                    container.remove(force=True)
                except Exception:  # noqa: BLE001
                    pass
            shutil.rmtree(work, ignore_errors=True)
        # container overhead: everything but the wait for the test process (tree copy, create,
        # start, logs, removal), so it compares with the local executor's own set-up time.
        result.overhead_s = round(time.monotonic() - t_job - waited, 3)
        result.seconds = time.monotonic() - t0
        return result
