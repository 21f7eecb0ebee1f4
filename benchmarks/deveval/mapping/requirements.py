"""A project's test requirements, derived from its sdist, then resolved and pinned.

Sources, in order: the requirements its metadata declares (``pyproject.toml``, ``setup.cfg``,
literal keywords of ``setup.py``), the test-flavoured extras and requirement files
(``requirements*/test*.txt``, ``tox.ini`` deps), and the third-party modules the named test files
and their ``conftest.py`` import. ``uv pip compile`` pins the set for Python 3.11 as the index
stood at a cut-off date. Failed test runs feed back through :func:`fixes_from_log`.
"""

from __future__ import annotations

import ast
import configparser
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.sandbox.venvs import missing_os_packages
from reconmem.platform import pyast

PYTEST_SPEC = "pytest<8"
TEST_EXTRAS = re.compile(r"^(tests?|testing|test[-_]?requires?|tests?[-_]?deps?|ci|unit)$", re.I)
DEV_EXTRAS = re.compile(r"^(dev|devel|develop|development|all)$", re.I)
# Import names whose distribution is named differently on the index.
MODULE_DISTS = {
    "yaml": "PyYAML", "dateutil": "python-dateutil", "bs4": "beautifulsoup4", "PIL": "Pillow",
    "sklearn": "scikit-learn", "attr": "attrs", "Crypto": "pycryptodome", "jwt": "PyJWT",
    "magic": "python-magic", "dotenv": "python-dotenv", "serial": "pyserial", "cv2": "opencv-python-headless",
    "google": "protobuf", "nacl": "PyNaCl", "OpenSSL": "pyOpenSSL", "git": "GitPython", "docopt": "docopt",
    "slugify": "python-slugify", "Levenshtein": "python-Levenshtein", "multipart": "python-multipart",
    "jose": "python-jose", "lxml": "lxml", "pkg_resources": "setuptools<70", "setuptools": "setuptools<70",
    "mock": "mock", "nose": "nose", "freezegun": "freezegun", "responses": "responses", "toml": "toml",
    "markdown": "Markdown", "socks": "PySocks", "zmq": "pyzmq", "usb": "pyusb", "Xlib": "python-xlib",
    "win32api": None, "win32con": None, "winreg": None, "_winapi": None, "msvcrt": None, "pywintypes": None,
    "typing_extensions": "typing-extensions", "importlib_metadata": "importlib-metadata",
    "pytest_mock": "pytest-mock", "pytest_asyncio": "pytest-asyncio", "testfixtures": "testfixtures",
    "hamcrest": "PyHamcrest", "ruamel": "ruamel.yaml", "flask_sqlalchemy": "Flask-SQLAlchemy",
    "sqlalchemy": "SQLAlchemy", "jinja2": "Jinja2", "markupsafe": "MarkupSafe", "werkzeug": "Werkzeug",
    "tzlocal": "tzlocal", "pygments": "Pygments", "websocket": "websocket-client", "jsonschema": "jsonschema",
    "Cryptodome": "pycryptodomex", "gi": None, "requests_mock": "requests-mock", "httpretty": "httpretty",
    "moto": "moto", "boto": "boto", "botocore": "botocore", "boto3": "boto3", "pymongo": "pymongo",
    "bson": "pymongo", "dns": "dnspython", "MySQLdb": "mysqlclient", "psycopg2": "psycopg2-binary",
    "_pytest": None, "pytest": None, "guardian": "django-guardian", "rest_framework": "djangorestframework",
    "django_filters": "django-filter", "oauth2_provider": "django-oauth-toolkit", "github": "PyGithub",
    "telegram": "python-telegram-bot", "discord": "discord.py", "Bio": "biopython", "skimage": "scikit-image",
    "mpl_toolkits": None,
}
# A fixture or a pytest option that is missing in a log, and the plugin that provides it.
PLUGIN_HINTS = [
    (re.compile(r"fixture 'mocker' not found"), "pytest-mock"),
    (re.compile(r"fixture 'benchmark' not found|unrecognized arguments:.*--benchmark"), "pytest-benchmark"),
    (re.compile(r"fixture '(aiohttp_client|aiohttp_server|loop)' not found"), "pytest-aiohttp"),
    (re.compile(r"fixture 'requests_mock' not found"), "requests-mock"),
    (re.compile(r"fixture 'httpserver' not found"), "pytest-httpserver"),
    (re.compile(r"fixture 'freezer' not found"), "pytest-freezegun"),
    (re.compile(r"fixture '(event_loop|unused_tcp_port)' not found|async def functions are not natively supported"
                r"|'asyncio' not found in `markers`|PytestUnhandledCoroutineWarning"), "pytest-asyncio<0.23"),
    (re.compile(r"fixture 'snapshot' not found"), "syrupy"),
    (re.compile(r"fixture 'datadir' not found"), "pytest-datadir"),
    (re.compile(r"fixture 'caplog_\w+' not found|fixture 'capture' not found"), "pytest-catchlog"),
    (re.compile(r"fixture 'respx_mock' not found"), "respx"),
    (re.compile(r"fixture 'httpx_mock' not found"), "pytest-httpx"),
    (re.compile(r"fixture 'subtests' not found"), "pytest-subtests"),
    (re.compile(r"fixture 'fs' not found"), "pyfakefs"),
    (re.compile(r"unrecognized arguments:.*--cov"), "pytest-cov"),
    (re.compile(r"unrecognized arguments:.*--timeout|'timeout' not found in `markers`"), "pytest-timeout"),
    (re.compile(r"unrecognized arguments:.*(-n |--numprocesses|--dist)"), "pytest-xdist"),
    (re.compile(r"unrecognized arguments:.*--mypy"), "pytest-mypy"),
    (re.compile(r"unrecognized arguments:.*--doctest-rst|--doctest-plus"), "pytest-doctestplus"),
    (re.compile(r"unrecognized arguments:.*--reruns|'flaky' not found in `markers`"), "pytest-rerunfailures"),
    (re.compile(r"'django_db' not found in `markers`|fixture '(db|client|rf|settings)' not found"), "pytest-django"),
    (re.compile(r"'vcr' not found in `markers`|fixture 'vcr\w*' not found"), "pytest-recording"),
    (re.compile(r"No module named 'pkg_resources'"), "setuptools<70"),
    # NumPy 1.26 dropped numpy.__config__.get_info, which pytensor / aesara read for their BLAS flags
    (re.compile(r"module 'numpy\.__config__' has no attribute 'get_info'"), "numpy<1.26"),
]
# Commands tests call, and the Debian package that provides each (Docker images install them).
OS_COMMANDS = {"git": "git", "hg": "mercurial", "svn": "subversion", "ffmpeg": "ffmpeg", "gpg": "gnupg",
               "ssh": "openssh-client", "ssh-keygen": "openssh-client", "ssh-agent": "openssh-client",
               "sqlite3": "sqlite3", "make": "make", "gcc": "gcc", "cc": "gcc", "file": "file", "zip": "zip",
               "unzip": "unzip", "bash": "bash", "patch": "patch", "ldd": "libc-bin", "objdump": "binutils",
               "readelf": "binutils", "strip": "binutils", "ld": "binutils", "openssl": "openssl",
               "krb5-config": "libkrb5-dev", "lilypond": "lilypond", "timidity": "timidity", "pgrep": "procps",
               "pkill": "procps"}
# What a failed build of a pinned requirement says is missing, and the Debian packages that provide it.
BUILD_OS_HINTS = [
    (re.compile(r"krb5-config|gssapi/gssapi\.h|krb5\.h"), ("libkrb5-dev",)),
    (re.compile(r"xml2-config|libxml/\w+\.h|libxslt/\w+\.h"), ("libxml2-dev", "libxslt1-dev")),
    (re.compile(r"pg_config executable not found|libpq-fe\.h"), ("libpq-dev",)),
    (re.compile(r"mysql_config|mysql\.h"), ("default-libmysqlclient-dev", "pkg-config")),
    (re.compile(r"ffi\.h"), ("libffi-dev",)),
    (re.compile(r"openssl/\w+\.h"), ("libssl-dev",)),
    (re.compile(r"sasl/sasl\.h"), ("libsasl2-dev",)),
    (re.compile(r"ldap\.h|lber\.h"), ("libldap2-dev",)),
    (re.compile(r"portaudio\.h"), ("portaudio19-dev",)),
    (re.compile(r"yaml\.h"), ("libyaml-dev",)),
    (re.compile(r"(?:command|error: command) '?(?:gcc|cc|x86_64-linux-gnu-gcc)'? (?:failed|not found)|"
                r"gcc: (?:command )?not found|unable to execute 'gcc'"), ("gcc",)),
    (re.compile(r"pkg-config: (?:command )?not found|Did not find pkg-config"), ("pkg-config",)),
]
# A pinned test runner too old for the running Python (pytest < 3.10 / py < 1.5 on Python 3.10+).
OBSOLETE_RUNNER = re.compile(r"KeyError: '__spec__'|_pytest/assertion/rewrite\.py.*\n.*(?:AttributeError|TypeError)|"
                             r"AttributeError: module 'collections' has no attribute '\w+'[^\n]*\n?[^\n]*_pytest|"
                             r"from _pytest\.\S+ import .*\n.*ImportError")
_RUNNER_DISTS = re.compile(r"^(pytest|py|pluggy|pytest-[\w-]+)$")
HEAVY_DISTS = re.compile(r"^(torch|tensorflow(-cpu)?|jax|jaxlib|nvidia-[\w-]+|cupy[\w-]*|triton|mxnet|"
                         r"onnxruntime-gpu|tensorrt|paddlepaddle|pyspark)$", re.I)  # pyspark: a JVM stack
# Backports of modules Python 3.11 has in its standard library (installed, they shadow it or fail).
STDLIB_BACKPORTS = {"typing", "enum34", "dataclasses", "futures", "argparse", "asyncio", "contextvars",
                    "pathlib", "ordereddict", "importlib", "statistics", "selectors34", "trollius"}
_MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
_MISSING_COMMAND = re.compile(r"No such file or directory: '([\w.-]+)'|([\w.-]+): (?:command )?not found")


@dataclass
class DeclaredRequirements:
    """What a project's sdist declares, before resolution."""

    install: list[str] = field(default_factory=list)
    test: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)          # files the specs came from
    pytest_plugin: bool = False                               # registers a pytest11 entry point


def _clean(specs) -> list[str]:
    """The entries that are plain requirement specifiers (no paths, URLs, options or templating)."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for s in specs or []:
        s = str(s).split("#", 1)[0].strip()
        try:
            req = Requirement(s)
        except InvalidRequirement:
            continue
        if not req.url:
            out.append(s)
    return out


def _name(spec: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    return re.sub(r"[-_.]+", "-", m.group(1)).lower() if m else spec.lower()


def _requirement_file(path: Path, root: Path, seen: set[Path]) -> list[str]:
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    out = []
    for line in path.read_text(errors="replace").splitlines():
        line = line.strip()
        m = re.match(r"-r\s*(\S+)|--requirement[ =](\S+)", line)
        if m:
            out += _requirement_file((path.parent / (m.group(1) or m.group(2))).resolve(), root, seen)
        elif line and not line.startswith("-"):
            out.append(line)
    return _clean(out)


def _setup_py_keywords(path: Path) -> dict:
    """Literal ``install_requires`` / ``tests_require`` / ``extras_require`` of a ``setup(...)`` call."""
    try:
        tree = pyast.parse(path.read_text(errors="replace"))
    except SyntaxError:
        return {}
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                names[node.targets[0].id] = pyast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            for kw in node.keywords:
                if kw.arg in ("install_requires", "tests_require", "extras_require", "entry_points"):
                    try:
                        out[kw.arg] = pyast.literal_eval(kw.value)
                    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                        if isinstance(kw.value, ast.Name) and kw.value.id in names:
                            out[kw.arg] = names[kw.value.id]
    return out


def _extras(extras: dict) -> list[str]:
    if not isinstance(extras, dict):
        return []
    chosen = [k for k in extras if TEST_EXTRAS.match(str(k).split(":")[0])] or \
             [k for k in extras if DEV_EXTRAS.match(str(k).split(":")[0])][:1]
    out = []
    for k in chosen:
        v = extras[k]
        out += v.splitlines() if isinstance(v, str) else list(v)
    return _clean(out)


def declared_requirements(root: Path) -> DeclaredRequirements:
    """Read the requirements a project tree declares (never runs its code)."""
    dec = DeclaredRequirements()
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(errors="replace"))
        except tomllib.TOMLDecodeError:
            data = {}
        project = data.get("project") or {}
        if project.get("dependencies") or project.get("optional-dependencies"):
            dec.install += _clean(project.get("dependencies"))
            dec.test += _extras(project.get("optional-dependencies") or {})
            dec.sources.append("pyproject.toml [project]")
        dec.pytest_plugin |= "pytest11" in (project.get("entry-points") or {})
        poetry = (data.get("tool") or {}).get("poetry") or {}
        if poetry:
            dec.install += [k for k in (poetry.get("dependencies") or {}) if k.lower() != "python"]
            groups = [poetry.get("dev-dependencies") or {}] + \
                     [g.get("dependencies") or {} for g in (poetry.get("group") or {}).values()]
            dec.test += [k for g in groups for k in g]
            dec.sources.append("pyproject.toml [tool.poetry]")
        pdm = ((data.get("tool") or {}).get("pdm") or {}).get("dev-dependencies") or {}
        dec.test += _extras(pdm)
    cfg = root / "setup.cfg"
    if cfg.is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(cfg.read_text(errors="replace"))
        except configparser.Error:
            parser = None
        if parser is not None and parser.has_section("options"):
            dec.install += _clean(parser.get("options", "install_requires", fallback="").splitlines())
            dec.test += _clean(parser.get("options", "tests_require", fallback="").splitlines())
            if parser.has_section("options.extras_require"):
                dec.test += _extras(dict(parser.items("options.extras_require")))
            dec.sources.append("setup.cfg")
        if parser is not None and parser.has_section("options.entry_points"):
            dec.pytest_plugin |= parser.has_option("options.entry_points", "pytest11")
    setup_py = root / "setup.py"
    if setup_py.is_file():
        kws = _setup_py_keywords(setup_py)
        if kws:
            dec.install += _clean(kws.get("install_requires"))
            dec.test += _clean(kws.get("tests_require")) + _extras(kws.get("extras_require") or {})
            dec.sources.append("setup.py")
        eps = kws.get("entry_points")
        dec.pytest_plugin |= isinstance(eps, dict) and "pytest11" in eps
    seen: set[Path] = set()
    main = [root / "requirements.txt", root / "requirements" / "base.txt", root / "requirements" / "main.txt"]
    for p in main:
        if p.is_file():
            dec.install += _requirement_file(p.resolve(), root, seen)
            dec.sources.append(p.relative_to(root).as_posix())
    tests = [p for pat in ("*requirements*.txt", "requirements/*.txt", "requirements*/*test*.txt", "test*/requirements*.txt")
             for p in sorted(root.glob(pat)) if re.search(r"test|dev|ci", p.as_posix().split("/")[-1] + str(p.parent.name), re.I)]
    for p in tests:
        found = _requirement_file(p.resolve(), root, seen)
        if found:
            dec.test += found
            dec.sources.append(p.relative_to(root).as_posix())
    dec.test += _tox_deps(root / "tox.ini", root, seen, dec.sources)
    dec.install, dec.test = _dedupe(dec.install), _dedupe(dec.test)
    return dec


def _tox_deps(tox: Path, root: Path, seen: set[Path], sources: list[str]) -> list[str]:
    if not tox.is_file():
        return []
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(tox.read_text(errors="replace"))
    except configparser.Error:
        return []
    if not parser.has_option("testenv", "deps"):
        return []
    out = []
    for line in parser.get("testenv", "deps").splitlines():
        line = re.sub(r"^[\w,{}-]+:\s*", "", line.strip())          # factor-conditional lines
        if line.startswith("-r"):
            out += _requirement_file((root / line[2:].strip().replace("{toxinidir}/", "")).resolve(), root, seen)
        elif line and "{" not in line:
            out.append(line)
    if out:
        sources.append("tox.ini")
    return _clean(out)


def _dedupe(specs: list[str]) -> list[str]:
    seen, out = set(), []
    for s in specs:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def local_modules(root: Path, pythonpath: str) -> set[str]:
    """Top-level module names importable from the tree itself."""
    names = set()
    for base in {root, root / pythonpath}:
        if base.is_dir():
            for p in base.iterdir():
                if p.suffix == ".py" or (p.is_dir() and (any(p.glob("*.py")) or (p / "__init__.py").exists())):
                    names.add(p.stem if p.suffix == ".py" else p.name)
    return names


def imported_modules(root: Path, test_files: list[str]) -> set[str]:
    """Top-level modules the test files and every ``conftest.py`` above them import."""
    files: set[Path] = set()
    for rel in test_files:
        p = root / rel
        files.add(p)
        for parent in p.parents:
            if parent == root.parent:
                break
            files.add(parent / "conftest.py")
    mods: set[str] = set()
    for f in files:
        if not f.is_file():
            continue
        try:
            tree = pyast.parse(f.read_text(errors="replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                mods.add(node.module.split(".")[0])
        for d in {f.parent, *[p for p in f.parent.iterdir() if p.is_dir()]}:     # sibling helper modules
            mods -= {p.stem for p in d.glob("*.py")} | {p.name for p in d.iterdir() if p.is_dir()}
    return mods


def _type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` / ``if typing.TYPE_CHECKING:`` (imports for type checkers only)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _unconditional_imports(path: Path) -> list[tuple[str, int]]:
    """``(module, level)`` of the module-level imports of a file outside ``try`` (``if`` bodies included,
    but not those of ``if TYPE_CHECKING:``); for ``from . import x`` the names are listed as ``.x``."""
    try:
        tree = pyast.parse(path.read_text(errors="replace"))
    except (SyntaxError, ValueError, OSError):
        return []
    out, body = [], list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, ast.If):                      # e.g. version checks; `try` bodies stay optional
            body += ([] if _type_checking(node.test) else node.body) + node.orelse
        elif isinstance(node, ast.Import):
            out += [(a.name, 0) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                out.append((node.module, node.level))
            out += [(f"{node.module + '.' if node.module else ''}{a.name}", node.level) for a in node.names]
    return out


def module_level_test_imports(root: Path, test_files: list[str]) -> set[str]:
    """Top-level modules the test files and the ``conftest.py`` files above them import unconditionally
    at module level (what collecting them needs; an import inside a test or a ``try`` is optional)."""
    files: set[Path] = set()
    for rel in test_files:
        p = root / rel
        files.add(p)
        files |= {parent / "conftest.py" for parent in p.parents if parent.is_relative_to(root)}
    return {name.split(".")[0] for f in files if f.is_file() for name, level in _unconditional_imports(f)
            if not level}


def optional_heavy(specs: list[str], needed_modules: set[str]) -> list[str]:
    """The GPU / deep-learning distributions among ``specs`` (those of the test files' imports) that no
    module in ``needed_modules`` names (imported only inside a test or a ``try``), by distribution name."""
    needed = {_name(MODULE_DISTS.get(m) or m) for m in needed_modules}
    return sorted({_name(s) for s in specs if HEAVY_DISTS.match(_name(s)) and _name(s) not in needed})


def without_dists(specs: list[str], names: list[str]) -> list[str]:
    """``specs`` without those of the distributions ``names``."""
    drop = {_name(n) for n in names}
    return [s for s in specs if _name(s) not in drop]


def package_imports(root: Path, task_files: list[str], pythonpath: str = ".") -> set[str]:
    """Top-level modules that importing the task files needs: their unconditional module-level imports
    (outside ``try``), followed through the project's own modules and package ``__init__`` files,
    for trees whose metadata computes its requirements at build time."""
    base = (root / pythonpath).resolve()

    def module_file(dotted: str) -> Path | None:
        p = base.joinpath(*dotted.split("."))
        for cand in (p.with_suffix(".py"), p / "__init__.py"):
            if cand.is_file():
                return cand
        return None

    def module_of(path: Path) -> list[str]:
        parts = list(path.relative_to(base).with_suffix("").parts)
        return parts[:-1] if parts and parts[-1] == "__init__" else parts

    queue = [(root / rel).resolve() for rel in task_files]
    seen: set[Path] = set()
    mods: set[str] = set()
    while queue:
        f = queue.pop()
        if f in seen or not f.is_file():
            continue
        seen.add(f)
        try:
            here = module_of(f)
        except ValueError:
            here = []
        for i in range(1, len(here)):                    # the __init__ of every enclosing package
            init = module_file(".".join(here[:i]))
            if init is not None:
                queue.append(init)
        package = here if f.name == "__init__.py" else here[:-1]
        for name, level in _unconditional_imports(f):
            if level:
                anchor = package[:len(package) - (level - 1)] if level > 1 else package
                target = module_file(".".join(anchor + [n for n in name.split(".") if n]))
                if target is not None:
                    queue.append(target)
                continue
            target = module_file(name) or module_file(name.rsplit(".", 1)[0]) if "." in name else module_file(name)
            if target is not None:
                queue.append(target)
            else:
                mods.add(name.split(".")[0])
    return mods


def third_party(mods: set[str], local: set[str], declared: list[str]) -> list[str]:
    """Distribution specs for the imported modules that are neither stdlib, local nor declared."""
    have = {_name(s) for s in declared}
    out = []
    for m in sorted(mods - local - set(sys.stdlib_module_names) - {"__future__", "conftest"}):
        dist = MODULE_DISTS.get(m, None if m.startswith("_") else m)
        if dist and _clean([dist]) and _name(dist) not in have:
            out.append(dist)
            have.add(_name(dist))
    return out


def fixes_from_log(log: str) -> tuple[list[str], list[str]]:
    """``(pip specs, Debian packages)`` that a failed test log says are missing."""
    specs = [spec for pattern, spec in PLUGIN_HINTS if pattern.search(log)]
    for mod in _MISSING_MODULE.findall(log):
        top = mod.split(".")[0]
        if top in sys.stdlib_module_names:
            continue
        dist = MODULE_DISTS.get(top, top)
        if dist:
            specs.append(dist)
    packages = []
    for a, b in _MISSING_COMMAND.findall(log):
        cmd = a or b
        if cmd in OS_COMMANDS:
            packages.append(OS_COMMANDS[cmd])
    return _dedupe(specs), _dedupe(packages)


# Commands distinctive enough that a test file naming one (``run('ssh-keygen -l ...')``) needs its package.
NAMED_COMMANDS = ("ssh", "ssh-keygen", "ssh-agent", "git", "hg", "svn", "ffmpeg", "gpg", "sqlite3", "gcc", "objdump",
                  "readelf", "ldd", "openssl", "lilypond", "timidity", "pgrep", "pkill")


def named_commands(root: Path, files: list[str]) -> list[str]:
    """Debian packages of the commands ``files`` (the test files and the task modules) name in a string
    (the whole string or its first word), so Docker images get them even when the host already has
    them and no run fails (mackup's ``is_process_running`` runs ``pgrep``, whose absence it reports
    as False)."""
    found = []
    for rel in files:
        try:
            tree = pyast.parse((root / rel).read_text(errors="replace"))
        except (SyntaxError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
                word = node.value.split()[0]
                word = word.rsplit("/", 1)[-1] if word.startswith("/") else word     # /usr/bin/pgrep
                if word in NAMED_COMMANDS:
                    found.append(OS_COMMANDS[word])
    return _dedupe(found)


def os_packages_from_build_log(log: str) -> list[str]:
    """Debian packages a failed ``pip install`` log says a build needs (headers, config scripts, compilers)."""
    return _dedupe([pkg for pattern, pkgs in BUILD_OS_HINTS if pattern.search(log) for pkg in pkgs])


# Python-compatibility shims (benchmarks/sandbox/shims.py) and the log lines that call for them.
SHIM_HINTS = [
    (re.compile(r"cannot import name '(?:Mapping|MutableMapping|Sequence|MutableSequence|Iterable|Callable|"
                r"Set|MutableSet|Hashable|Sized|Container|Iterator|Generator|OrderedDict)' from 'collections'|"
                r"module 'collections' has no attribute '(?:Mapping|MutableMapping|Sequence|Iterable|Callable|"
                r"MutableSet|Hashable)'"), "collections_abc_aliases"),
]


_FAILED_BUILD = re.compile(r"Failed building wheel for ([\w.-]+)|Could not build wheels for ([\w.-]+)|"
                           r"Failed to build ([\w.-]+)")


def failed_builds(log: str) -> list[str]:
    """Normalised names of the distributions a ``pip install`` log says failed to build."""
    return _dedupe([_name(a or b or c) for a, b, c in _FAILED_BUILD.findall(log)])


def relax_pins(specs: list[str], names: list[str]) -> list[str]:
    """``specs`` with the version constraints of the distributions ``names`` turned into lower bounds
    (``PyYAML==3.11`` -> ``PyYAML>=3.11``; an upper bound is dropped): the fix-up for a pinned
    release that does not build on the running Python."""
    out = []
    for s in specs:
        if _name(s) not in names:
            out.append(s)
            continue
        base = re.split(r"[<>=!~;\[ ]", s.strip(), maxsplit=1)[0]
        low = re.search(r"(?:==|>=|~=)\s*([\w.]+)", s)
        out.append(f"{base}>={low.group(1)}" if low else base)
    return _dedupe(out)


def shims_from_log(log: str) -> list[str]:
    """The compatibility shims a failed test log calls for (e.g. ``collections.Mapping`` on Python 3.10+)."""
    return _dedupe([shim for pattern, shim in SHIM_HINTS if pattern.search(log)])


def obsolete_runner(log: str) -> bool:
    """The test log shows a pinned test runner that cannot run on this Python (e.g. pytest 3.2's
    ``KeyError: '__spec__'`` on Python 3.11)."""
    return bool(OBSOLETE_RUNNER.search(log))


def unpin_runner(specs: list[str]) -> list[str]:
    """``specs`` with the test runner's own pins (pytest, py, pluggy, pytest plugins) replaced by their
    bare names, and pytest by :data:`PYTEST_SPEC`: the fix-up for an obsolete pinned runner."""
    out = []
    for s in specs:
        name = _name(s)
        if not _RUNNER_DISTS.match(name):
            out.append(s)
        elif name == "pytest":
            out.append(PYTEST_SPEC)
        elif name not in ("py", "pluggy"):
            out.append(re.split(r"[<>=!~;\[ ]", s.strip(), maxsplit=1)[0])
    return _dedupe(out)


def install_os_packages(packages: list[str], *, timeout: float = 1200) -> list[str]:
    """``apt-get install`` the missing ones of ``packages`` (root only); returns those still missing."""
    import os

    missing = missing_os_packages(packages)
    if not missing or os.geteuid() != 0:
        return missing
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], capture_output=True,
                   text=True, timeout=timeout, env=env)
    return missing_os_packages(missing)


class ResolveError(RuntimeError):
    """The requirements do not resolve; the message holds the resolver's last lines."""


def resolve(specs: list[str], *, exclude_newer: str, python: str = "3.11", uv: str | None = None,
            timeout: float = 900, max_drops: int = 6) -> tuple[list[str], list[str]]:
    """Pin ``specs`` with ``uv pip compile`` as the index stood at ``exclude_newer``.

    Returns ``(pins, dropped)``: requirements the index does not have, or that no version
    satisfies, are dropped one at a time (at most ``max_drops``) and named in ``dropped``.
    """
    uv = uv or str(Path(sys.executable).with_name("uv"))
    specs, dropped = _dedupe(specs), []
    for _ in range(max_drops + 1):
        proc = subprocess.run([uv, "pip", "compile", "-", "--python-version", python, "--exclude-newer", exclude_newer,
                               "--no-header", "--no-annotate", "--quiet", "--no-config"],
                              input="\n".join(specs) + "\n", capture_output=True, text=True, timeout=timeout)
        if proc.returncode == 0:
            pins = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip() and not ln.startswith(("#", " "))]
            backports = [p for p in pins if _name(p) in STDLIB_BACKPORTS]
            return [p for p in pins if p not in backports], dropped + [_name(p) for p in backports]
        culprit = _culprit(proc.stderr, specs)
        if culprit is None:
            raise ResolveError(proc.stderr.strip()[-1500:])
        specs = [s for s in specs if _name(s) != culprit]
        dropped.append(culprit)
    raise ResolveError(f"gave up after dropping {dropped}: {proc.stderr.strip()[-1000:]}")


def _culprit(stderr: str, specs: list[str]) -> str | None:
    """The requested requirement a resolver error blames, if it is one of ``specs``."""
    names = {_name(s): s for s in specs}
    for pat in (r"Because ([\w.-]+) was not found in the package registry",
                r"Because there are no versions of ([\w.-]+)",
                r"Because only [\w.<>=!, -]+ of ([\w.-]+) (?:is|are) available",
                r"Because ([\w.-]+)[<>=!~ \d.*,]* depends on Python",
                r"No solution found when resolving dependencies:\s*\n\s*╰─▶ Because ([\w.-]+)",
                r"Failed to build `([\w.-]+)",
                r"[Bb]ecause ([\w.-]+)[<>=!~ \d.*,]* has no wheels with a matching platform tag"):
        for m in re.finditer(pat, stderr):
            n = _name(m.group(1))
            if n in names and n != "pytest":
                return n
    return None


def heavy(pins: list[str]) -> list[str]:
    """Pinned distributions that make an environment too heavy for this harness (GPU / DL stacks)."""
    return [p for p in pins if HEAVY_DISTS.match(_name(p))]
