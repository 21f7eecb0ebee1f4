"""``make setup``'s installer (mk/install.py): pip's settings passed to uv, pip as the fallback."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mk_install", ROOT / "mk" / "install.py")
install = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = install  # its dataclass looks its module up
_spec.loader.exec_module(install)

PIP_CONFIG_LIST = """\
:env:.cert='/srv/ca.pem'
:env:.default-timeout='120'
:env:.find-links='/srv/wheels'
global.constraint='/srv/constraints.txt'
global.extra-index-url='file:///srv/a/simple file:///srv/b/simple'
global.find-links='/ignored/by/env'
global.index-url='https://mirror.example/simple'
install.index-url='https://install.example/simple'
global.disable-pip-version-check='1'
not a setting line
"""


def test_pip_precedence_env_over_install_over_global():
    cfg = install.parse_pip_config(PIP_CONFIG_LIST)
    assert cfg["find-links"] == "/srv/wheels"
    assert cfg["index-url"] == "https://install.example/simple"
    assert cfg["extra-index-url"] == "file:///srv/a/simple file:///srv/b/simple"
    assert cfg["cert"] == "/srv/ca.pem" and cfg["default-timeout"] == "120"


def test_pip_settings_become_uv_options():
    s = install.uv_settings(install.parse_pip_config(PIP_CONFIG_LIST), environ={})
    pairs = list(zip(s.args[::2], s.args[1::2]))
    assert ("--index-strategy", "unsafe-best-match") in pairs  # pip's rule: the best version over every source
    assert ("--find-links", "/srv/wheels") in pairs and ("--find-links", "/ignored/by/env") not in pairs
    assert ("--extra-index-url", "file:///srv/a/simple") in pairs and ("--extra-index-url", "file:///srv/b/simple") in pairs
    assert ("--constraint", "/srv/constraints.txt") in pairs
    assert ("--index-url", "https://install.example/simple") in pairs
    assert s.env == {"SSL_CERT_FILE": "/srv/ca.pem", "UV_HTTP_TIMEOUT": "120"} and s.untranslated == []
    # a certificate the environment already names wins
    assert "SSL_CERT_FILE" not in install.uv_settings({"cert": "/x.pem"}, environ={"SSL_CERT_FILE": "/y.pem"}).env


def test_switches_and_untranslated_settings():
    s = install.uv_settings({"no-index": "true", "pre": "0", "require-hashes": "1"}, environ={})
    assert "--no-index" in s.args and "--prerelease" not in s.args
    assert s.untranslated == ["require-hashes"]


def test_reads_pip_config_as_pip_does(tmp_path, monkeypatch):
    """The real ``pip config list`` output of a config file is parsed into its settings."""
    conf = tmp_path / "pip.conf"
    # [install] and the file PIP_CONFIG_FILE names: over any other configuration file of the machine
    conf.write_text("[install]\nfind-links = /srv/wheels\nextra-index-url =\n    file:///srv/a/simple\n"
                    "    file:///srv/b/simple\nconstraint = /srv/c.txt\n", encoding="utf-8")
    for var in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    cfg = install.pip_config(Path(sys.executable))
    assert cfg["find-links"] == "/srv/wheels" and cfg["constraint"] == "/srv/c.txt"
    assert cfg["extra-index-url"].split() == ["file:///srv/a/simple", "file:///srv/b/simple"]


def test_the_bootstrap_uv_is_the_dev_extras_pin():
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]["dev"]
    pin = install.pinned_uv()
    assert re.fullmatch(r"uv==[0-9.]+", pin) and pin in dev


@pytest.fixture
def commands(monkeypatch, tmp_path):
    """Record the installer's commands instead of running them; ``fail`` names the programs that fail."""
    ran: list[list[str]] = []
    state = {"fail": set()}

    def fake_run(cmd, env=None):
        ran.append(list(cmd))
        return 1 if Path(cmd[0]).name in state["fail"] else 0

    monkeypatch.setattr(install, "_run", fake_run)
    monkeypatch.setattr(install, "pip_config", lambda python: {"find-links": "/srv/wheels"})
    monkeypatch.setattr(install, "find_uv", lambda python, environ: str(tmp_path / "uv"))
    return ran, state


def test_uv_installs_the_package_and_pip_with_pips_sources(commands):
    ran, _ = commands
    assert install.main(["--installer", "auto"]) == 0
    assert len(ran) == 1
    cmd = ran[0]
    assert cmd[1:3] == ["pip", "install"] and "--find-links" in cmd and cmd[-3:] == [install.PIP_SPEC, "-e", ".[dev]"]
    assert "--compile-bytecode" in cmd  # the .pyc files pip would write


def test_pip_is_the_fallback_when_uv_fails(commands):
    ran, state = commands
    state["fail"].add("uv")
    assert install.main(["--installer", "auto"]) == 0
    assert Path(ran[0][0]).name == "uv"
    assert [c[1:] for c in ran[1:]] == [["-m", "pip", "install", "-q", "--upgrade", install.PIP_SPEC],
                                        ["-m", "pip", "install", "-q", "-e", ".[dev]"]]
    ran.clear()
    assert install.main(["--installer", "uv"]) == 1 and len(ran) == 1  # uv only: no pip


def test_untranslatable_pip_settings_use_pip(commands, monkeypatch):
    ran, _ = commands
    monkeypatch.setattr(install, "pip_config", lambda python: {"require-hashes": "1"})
    assert install.main([]) == 0
    assert all(c[1:4] == ["-m", "pip", "install"] for c in ran) and len(ran) == 2


def test_without_uv_pip_installs_the_pinned_one_first(commands, monkeypatch):
    ran, _ = commands
    monkeypatch.setattr(install, "find_uv", lambda python, environ: None)
    assert install.main([]) == 0
    assert ran[0][1:] == ["-m", "pip", "install", "-q", install.pinned_uv()]
    assert ran[1][0] == str(Path(sys.executable).parent / "uv") and ran[1][1:3] == ["pip", "install"]
