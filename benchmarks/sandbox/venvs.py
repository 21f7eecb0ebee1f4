"""Cached virtual environments, one per project environment (keyed by :meth:`EnvSpec.key`).

Built once under an exclusive file lock (safe across threads and processes), marked complete
only after every step succeeded, and reused by later runs. An incomplete directory (a crashed
build) is removed and rebuilt.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from .base import EnvSpec
from .shims import install_shims, shim_files

log = logging.getLogger(__name__)

COMPLETE_MARKER = ".reconmem-complete"


class EnvBuildError(RuntimeError):
    """Building a project environment failed; the message names the env and the failing step."""


def missing_os_packages(packages) -> list[str]:
    """The Debian packages of ``packages`` that are not installed here (``dpkg-query``); on a host
    without dpkg, those whose name is no command on ``PATH``."""
    if shutil.which("dpkg-query") is None:
        return [p for p in packages if shutil.which(p) is None]
    missing = []
    for pkg in packages:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
        if "install ok installed" not in proc.stdout:
            missing.append(pkg)
    return missing


def default_base_python() -> str:
    """The interpreter new venvs are based on (the harness's base interpreter)."""
    return getattr(sys, "_base_executable", None) or sys.executable


class VenvCache:
    """Directory of virtual environments ``<root>/<env key>/``."""

    def __init__(self, root: str | Path, *, base_python: str | None = None, pip_timeout_s: float = 3600):
        self.root = Path(root).expanduser()
        self.base_python = base_python or default_base_python()
        self.pip_timeout_s = pip_timeout_s
        self._thread_locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self.builds = 0      # environments built by this object (for tests / reports)

    def path_for(self, env: EnvSpec) -> Path:
        return self.root / env.key()

    def python_for(self, env: EnvSpec) -> Path:
        return self.path_for(env) / "bin" / "python"

    def is_ready(self, env: EnvSpec) -> bool:
        return (self.path_for(env) / COMPLETE_MARKER).exists()

    def ensure(self, env: EnvSpec) -> Path:
        """Return the venv's python, building the venv first if needed."""
        if self.is_ready(env):
            return self.python_for(env)
        key = env.key()
        with self._guard:
            tlock = self._thread_locks.setdefault(key, threading.Lock())
        with tlock:
            self.root.mkdir(parents=True, exist_ok=True)
            with open(self.root / f"{key}.lock", "w") as lockf:
                fcntl.flock(lockf, fcntl.LOCK_EX)
                try:
                    if not self.is_ready(env):
                        self._build(env)
                finally:
                    fcntl.flock(lockf, fcntl.LOCK_UN)
        return self.python_for(env)

    def _run(self, env: EnvSpec, step: str, cmd: list[str]) -> None:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=self.pip_timeout_s,
                              env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip()[-2000:]
            raise EnvBuildError(f"environment {env.name!r} ({env.key()}): {step} failed "
                                f"(rc={proc.returncode}): {' '.join(cmd[:6])} ...\n{tail}")

    def _build(self, env: EnvSpec) -> None:
        target = self.path_for(env)
        if target.exists():
            shutil.rmtree(target)
        t0 = time.monotonic()
        log.info("building venv for %s at %s", env.name, target)
        shim_files(env.compat_shims)          # unknown shim names fail before any work
        self._check_python(env)
        needs_pip = bool(env.pip_specs or env.project_sdist)
        self._run(env, "venv creation", [self.base_python, "-m", "venv", *([] if needs_pip else ["--without-pip"]),
                                         str(target)])
        py = str(target / "bin" / "python")
        if env.pip_specs:
            cmd = [py, "-m", "pip", "install", "-q"]
            if env.pip_no_deps:
                cmd.append("--no-deps")
            self._run(env, "pip install of the pinned test requirements", cmd + list(env.pip_specs))
        if env.project_sdist:
            self._run(env, "pip install of the project sdist",
                      [py, "-m", "pip", "install", "-q", "--no-deps", str(env.project_sdist)])
        if env.compat_shims:
            install_shims(env.compat_shims, self._site_packages(py))
        missing = missing_os_packages(env.os_requirements)
        if missing:
            log.warning("environment %s: Debian packages %s of its os_requirements are not installed (the local "
                        "executor does not install them; use executor=docker)", env.name, missing)
        (target / "reconmem-env.json").write_text(json.dumps(
            {"name": env.name, "key": env.key(), "pip_specs": list(env.pip_specs),
             "compat_shims": list(env.compat_shims), "seconds": round(time.monotonic() - t0, 1)},
            indent=1))
        (target / COMPLETE_MARKER).write_text("ok\n")
        self.builds += 1

    def _check_python(self, env: EnvSpec) -> None:
        want = ".".join(env.python.split(".")[:2])
        proc = subprocess.run([self.base_python, "-c", "import sys;print('%d.%d'%sys.version_info[:2])"],
                              capture_output=True, text=True)
        have = proc.stdout.strip()
        if want and have and want != have:
            log.warning("environment %s asks for Python %s; building with %s (%s)", env.name, want, have,
                        self.base_python)

    @staticmethod
    def _site_packages(py: str) -> Path:
        out = subprocess.run([py, "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
        return Path(out)
