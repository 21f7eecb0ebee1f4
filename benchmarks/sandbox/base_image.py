"""Base images for the Docker executor without Docker Hub.

``executor.base_image: auto`` (the default) first tries the registry image
``python:<env python>-slim`` (already present, or pulled); when the registry cannot be reached it
builds a local base from Debian's packages:

    debootstrap --variant=minbase --include=python3,python3-venv bookworm ROOTFS <mirror>
    chroot ROOTFS python3 -m venv /opt/venv        # python/pip without PEP 668 errors
    tar -C ROOTFS -c . | docker import --change 'ENV PATH=/opt/venv/bin:...' - reconmem-base:<recipe>

The tag hashes the recipe (suite, variant, packages, venv path, recipe version); the image id the
engine assigns is content-addressed and goes into every environment image's build context, so a
rebuilt base gives new environment tags. :class:`BaseImage` is what a run manifest records
(tag, id, source, Python version, build seconds). The image's Python is checked against the
environment's: a different minor version is refused (:class:`PythonMismatch`), a different patch
version is recorded (``python_patch_mismatch``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)

BASE_REPO = "reconmem-base"
PROJECT_LABEL = "reconmem.project"          # every image this project builds carries it
RECIPE_VERSION = 1
DEBIAN_SUITE = "bookworm"
DEBIAN_PACKAGES = ("python3", "python3-venv")
VENV = "/opt/venv"
IMAGE_PATH = f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_MIRROR = "http://deb.debian.org/debian"


class BaseImageError(RuntimeError):
    """No base image could be found or built; the message says what was tried."""


class PythonMismatch(BaseImageError):
    """The base image's Python minor version differs from the environment's."""


@dataclass
class BaseImage:
    """A resolved base image, as recorded in a run manifest."""

    tag: str
    id: str
    source: str                     # "configured" | "registry" | "local-debootstrap"
    python: str                     # the image's full Python version, e.g. "3.11.2"
    build_seconds: float | None = None
    recipe: dict | None = None

    def check_python(self, wanted: str) -> dict:
        """Compare with an environment's Python; raise on a minor mismatch, return the record."""
        have, want = self.python.split("."), str(wanted).split(".")
        if have[:2] != want[:2]:
            raise PythonMismatch(f"base image {self.tag} has Python {self.python}, the environment asks for "
                                 f"{wanted} (minor versions differ; refusing to run its tests)")
        patch_mismatch = len(want) > 2 and have[:3] != want[:3]
        return {"python_wanted": str(wanted), "python_image": self.python, "python_patch_mismatch": patch_mismatch}

    def to_dict(self) -> dict:
        return asdict(self)

    def provides(self, packages) -> bool:
        """The image was built with these Debian packages (local base only)."""
        return bool(self.recipe) and set(packages) <= set(self.recipe.get("packages", ()))


def registry_image_for(python: str) -> str:
    """``python:<version>-slim`` (the Docker Hub image for an environment's Python)."""
    return f"python:{python}-slim"


def recipe(suite: str = DEBIAN_SUITE, packages=DEBIAN_PACKAGES) -> dict:
    """Everything that decides the local base image's content (its tag hashes this)."""
    return {"recipe_version": RECIPE_VERSION, "tool": "debootstrap", "variant": "minbase", "suite": suite,
            "packages": sorted(packages), "venv": VENV, "path": IMAGE_PATH}


def local_base_tag(rec: dict | None = None) -> str:
    """``reconmem-base:<suite>-<hash of the recipe>``."""
    rec = rec or recipe()
    digest = hashlib.sha256(json.dumps(rec, sort_keys=True).encode()).hexdigest()[:16]
    return f"{BASE_REPO}:{rec['suite']}-{digest}"


def host_debian_mirror() -> str:
    """The host's Debian mirror from its apt sources (``deb.debian.org`` when none is found)."""
    candidates = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in candidates:
        try:
            text = path.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            parts = line.split()
            if parts[:1] == ["deb"] and len(parts) >= 3:
                url = next((p for p in parts[1:] if p.startswith("http")), "")
                if url.rstrip("/").endswith("/debian"):
                    return url
            if parts[:1] == ["URIs:"]:
                for url in parts[1:]:
                    if url.rstrip("/").endswith("/debian"):
                        return url
    return DEFAULT_MIRROR


def image_python(client, image: str) -> str:
    """The full Python version inside ``image`` (run once, network off, container removed)."""
    out = client.containers.run(image, ["python", "-c", "import platform;print(platform.python_version())"],
                                remove=True, network_disabled=True, stdout=True, stderr=True)
    return out.decode().strip().splitlines()[-1]


def _image_id(client, tag: str) -> str | None:
    import docker.errors

    try:
        return client.images.get(tag).id
    except docker.errors.ImageNotFound:
        return None


def resolve_base_image(client, setting: str | None, python: str, *, lock_dir: Path | None = None,
                       mirror: str | None = None, suite: str = DEBIAN_SUITE,
                       os_packages: tuple[str, ...] = ()) -> BaseImage:
    """The base image for ``setting`` (``auto``/None, or an image name) and an environment's ``python``.

    ``auto``: the registry image if present or pullable, else the local Debian base (built once
    per set of ``os_packages``: an environment's ``os_requirements`` are debootstrapped into it, so
    they need no network at image build time either). Any other value is used as is (it must exist
    or be pullable).
    """
    import docker.errors

    if setting and setting != "auto":
        if _image_id(client, setting) is None:
            try:
                client.images.pull(setting)
            except docker.errors.APIError as exc:
                raise BaseImageError(f"executor.base_image {setting!r} is not present and cannot be pulled: "
                                     f"{exc.explanation or exc}") from None
        return BaseImage(setting, _image_id(client, setting), "configured", image_python(client, setting))
    reg = registry_image_for(python)
    if _image_id(client, reg) is None:
        try:
            client.images.pull(reg)
        except docker.errors.APIError as exc:
            log.info("registry image %s unavailable (%s); using the local Debian base", reg,
                     str(exc.explanation or exc)[:200])
    if _image_id(client, reg) is not None:
        return BaseImage(reg, _image_id(client, reg), "registry", image_python(client, reg))
    return ensure_local_base(client, lock_dir=lock_dir, mirror=mirror, suite=suite, os_packages=os_packages)


def ensure_local_base(client, *, lock_dir: Path | None = None, mirror: str | None = None,
                      suite: str = DEBIAN_SUITE, os_packages: tuple[str, ...] = ()) -> BaseImage:
    """Build (once, under a file lock) or find the local Debian base image (plus ``os_packages``)."""
    rec = recipe(suite, tuple(sorted(set(DEBIAN_PACKAGES) | set(os_packages))))
    tag = local_base_tag(rec)
    lock_dir = Path(lock_dir or tempfile.gettempdir())
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / "reconmem-base-image.lock", "w") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)
        image_id = _image_id(client, tag)
        seconds = None
        if image_id is None:
            seconds = build_local_base(client, tag, rec, mirror=mirror or host_debian_mirror())
            image_id = _image_id(client, tag)
        labels = client.images.get(tag).labels or {}
    build = seconds if seconds is not None else _float(labels.get("reconmem.build_seconds"))
    return BaseImage(tag, image_id, "local-debootstrap", image_python(client, tag), build_seconds=build, recipe=rec)


def _float(x) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def build_local_base(client, tag: str, rec: dict, *, mirror: str) -> float:
    """debootstrap + venv + ``docker import``; returns the build seconds. Needs root and debootstrap."""
    if shutil.which("debootstrap") is None:
        raise BaseImageError("cannot build the local base image: debootstrap is not installed "
                             "(run `make docker-engine`, which installs it, or apt-get install debootstrap)")
    if os.geteuid() != 0:
        raise BaseImageError("cannot build the local base image: debootstrap needs root")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="reconmem-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(rec['packages'])}", rec["suite"],
              str(rootfs), mirror], "debootstrap")
        _run(["chroot", str(rootfs), "/usr/bin/python3", "-m", "venv", rec["venv"]], "venv creation")
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (rootfs / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        archive = Path(tmp) / "rootfs.tar"
        _run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(archive), "."], "tar")
        seconds = time.monotonic() - t0
        changes = [f"ENV PATH={rec['path']}", "ENV LANG=C.UTF-8", f"ENV VIRTUAL_ENV={rec['venv']}",
                   f"LABEL {PROJECT_LABEL}=base", f"LABEL reconmem.recipe={tag.partition(':')[2]}",
                   f"LABEL reconmem.build_seconds={seconds:.1f}", 'CMD ["python"]']
        repo, _, version = tag.partition(":")
        client.api.import_image_from_file(str(archive), repository=repo, tag=version, changes=changes)
    seconds = time.monotonic() - t0
    log.info("built local base image %s in %.0f s", tag, seconds)
    return seconds


def _run(cmd: list[str], step: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip()[-1500:]
        raise BaseImageError(f"local base image: {step} failed (rc={proc.returncode}): {' '.join(cmd[:4])} ...\n{tail}")
