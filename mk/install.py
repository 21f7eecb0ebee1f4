"""``make setup``'s installer: the package with its dev extras into the venv, with uv when it can, else pip.

    .venv/bin/python mk/install.py [--installer auto|uv|pip]

Run by the venv's own interpreter (standard library only). ``auto`` (the default): uv resolves and
installs (``uv pip install --compile-bytecode "pip>=24,<26" -e '.[dev]'``), and pip does the same when uv cannot be had
or fails. uv comes from ``$UV`` or the venv (the dev extras pin it), else PATH, else pip installs the
pinned uv (pyproject's dev extra) into the venv first.

uv does not read pip's configuration, so pip's effective settings (``pip config list``: the config
files and the ``PIP_*`` variables) are passed to uv as options: indexes, find-links, constraints,
certificates, timeouts. A pip setting that may change what gets installed and has no translation
here makes the run use pip. ``--index-strategy unsafe-best-match`` is pip's rule (the best version
over every index and find-links location), so both installers choose the same distributions
(``pip freeze`` is the same).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

ROOT = Path(__file__).resolve().parents[1]
PIP_SPEC = "pip>=24,<26"
TARGET = ".[dev]"

# pip option -> uv option taking its value(s)
_VALUE_OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "trusted-host": "--allow-insecure-host",
    "only-binary": "--only-binary",
    "no-binary": "--no-binary",
    "keyring-provider": "--keyring-provider",
}
# pip switch -> uv flag
_SWITCHES = {"no-index": ["--no-index"], "pre": ["--prerelease", "allow"],
             "no-build-isolation": ["--no-build-isolation"]}
# pip option -> environment variable uv reads (set only when not set already)
_ENV_OPTIONS = {"cert": "SSL_CERT_FILE", "client-cert": "SSL_CLIENT_CERT", "timeout": "UV_HTTP_TIMEOUT",
                "default-timeout": "UV_HTTP_TIMEOUT", "proxy": "HTTPS_PROXY"}
# pip options that do not change which distributions are installed
_NEUTRAL = {"disable-pip-version-check", "no-cache-dir", "cache-dir", "progress-bar", "quiet", "verbose",
            "retries", "no-color", "no-input", "log", "root-user-action", "no-warn-script-location",
            "no-python-version-warning", "exists-action", "require-virtualenv", "python"}
_TRUE = {"1", "true", "yes", "on"}


@dataclass
class UvSettings:
    """uv's options and environment equivalent to pip's settings; ``untranslated`` keeps uv out."""

    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    untranslated: list[str] = field(default_factory=list)


def parse_pip_config(text: str) -> dict[str, str]:
    """Effective pip settings from ``pip config list`` output: option -> value.

    pip's precedence: the ``install`` section over ``global``, ``PIP_*`` variables (``:env:``) over both.
    """
    ranked: dict[str, tuple[int, str]] = {}
    rank = {"global": 0, "install": 1, ":env:": 2}
    for line in text.splitlines():
        m = re.match(r"^(:env:|[A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)=(.*)$", line.strip())
        if not m or m.group(1) not in rank:
            continue
        section, key, raw = m.groups()
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw.strip("'\"")
        key = key.replace("_", "-")
        if key not in ranked or rank[section] >= ranked[key][0]:
            ranked[key] = (rank[section], str(value))
    return {k: v for k, (_, v) in ranked.items()}


def uv_settings(pip_config: Mapping[str, str], environ: Mapping[str, str]) -> UvSettings:
    """Translate pip's settings into ``uv pip install`` options and environment variables."""
    out = UvSettings(args=["--index-strategy", "unsafe-best-match"])
    for key, value in sorted(pip_config.items()):
        if key in _VALUE_OPTIONS:
            for item in value.split():
                out.args += [_VALUE_OPTIONS[key], item]
        elif key in _SWITCHES:
            if value.strip().lower() in _TRUE:
                out.args += _SWITCHES[key]
        elif key in _ENV_OPTIONS:
            var = _ENV_OPTIONS[key]
            if var not in environ and var not in out.env:
                out.env[var] = value.strip()
        elif key not in _NEUTRAL:
            out.untranslated.append(key)
    return out


def pinned_uv(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The uv requirement of the dev extra (``uv==X``), so the bootstrap is the version the venv keeps."""
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for req in extras.get("dev", []):
        if re.match(r"^uv\s*(==|$)", req):
            return req
    return "uv"


def find_uv(python: Path, environ: Mapping[str, str]) -> str | None:
    """``$UV``, the venv's uv, or uv on PATH (None: none found)."""
    if environ.get("UV"):
        return environ["UV"]
    local = python.parent / "uv"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which("uv")


def _run(cmd: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(list(cmd), cwd=ROOT, env=None if env is None else {**os.environ, **env}).returncode


def pip_config(python: Path) -> dict[str, str]:
    """pip's effective settings as the venv's pip sees them (its files and the ``PIP_*`` variables)."""
    done = subprocess.run([str(python), "-m", "pip", "config", "list"], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"pip config list failed: {done.stderr.strip().splitlines()[-1:]}")
    return parse_pip_config(done.stdout)


def install_with_uv(python: Path) -> bool:
    """Install with uv; False when uv cannot be had, cannot mirror pip's settings, or fails."""
    try:
        settings = uv_settings(pip_config(python), os.environ)
    except RuntimeError as exc:
        print(f"setup: {exc}; using pip", flush=True)
        return False
    if settings.untranslated:
        print(f"setup: pip settings without a uv equivalent here ({', '.join(settings.untranslated)}); using pip",
              flush=True)
        return False
    uv = find_uv(python, os.environ)
    if uv is None:
        if _run([str(python), "-m", "pip", "install", "-q", pinned_uv()]) != 0:
            print("setup: could not install uv; using pip", flush=True)
            return False
        uv = str(python.parent / "uv")
    # --compile-bytecode: the .pyc files pip writes at install (without them every process compiles
    # what it imports, again each time when PYTHONDONTWRITEBYTECODE is set)
    cmd = [uv, "pip", "install", "-q", "--compile-bytecode", "--python", str(python), *settings.args, PIP_SPEC,
           "-e", TARGET]
    if _run(cmd, settings.env) != 0:
        print("setup: uv failed; using pip", flush=True)
        return False
    print("setup: installed with uv", flush=True)
    return True


def install_with_pip(python: Path) -> bool:
    """The pip path (the venv's pip reads its own configuration)."""
    return (_run([str(python), "-m", "pip", "install", "-q", "--upgrade", PIP_SPEC]) == 0
            and _run([str(python), "-m", "pip", "install", "-q", "-e", TARGET]) == 0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mk/install.py", description=__doc__.splitlines()[0])
    ap.add_argument("--installer", choices=("auto", "uv", "pip"), default="auto",
                    help="auto: uv, pip when uv is unavailable or fails (default); uv / pip: that one only")
    args = ap.parse_args(argv)
    python = Path(sys.executable)
    if args.installer in ("auto", "uv") and install_with_uv(python):
        return 0
    if args.installer == "uv":
        return 1
    return 0 if install_with_pip(python) else 1


if __name__ == "__main__":
    sys.exit(main())
