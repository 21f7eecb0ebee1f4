"""The executor interface: run a project's tests on an edited copy of a pristine tree.

An :class:`EnvSpec` describes a project's test environment (pinned pip specs, shims, layout);
an :class:`ExecutionJob` is one run (pristine tree + file edits + pytest node ids + limits);
an :class:`ExecutionOutcome` is what came back. Executors never modify ``job.project_root``.
"""

from __future__ import annotations

import hashlib
import json
import re
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path

PASS, FAIL, ERROR, TIMEOUT, OOM = "pass", "fail", "error", "timeout", "oom"
OUTCOMES = (PASS, FAIL, ERROR, TIMEOUT, OOM)

# pytest exit codes (pytest.ExitCode): 0 ok, 1 tests failed, 2 interrupted (e.g. a collection
# error with -x), 3 internal error, 4 usage error (e.g. a node id that is "not found" because the
# module failed to collect), 5 no tests collected.
PYTEST_RC_OUTCOME = {0: PASS, 1: FAIL, 2: ERROR, 3: ERROR, 4: ERROR, 5: ERROR}

_MEMORY_MARKERS = re.compile(r"\bMemoryError\b|Cannot allocate memory|std::bad_alloc|out of memory", re.I)


@dataclass(frozen=True)
class EnvSpec:
    """A project's test environment; everything that decides its content goes into :meth:`key`.

    ``pip_specs``: exact pip requirement strings installed into the environment.
    ``pip_no_deps``: install them with ``--no-deps`` (true when they are a complete freeze).
    ``pythonpath``: paths relative to the tree root, put first on PYTHONPATH.
    ``compat_shims``: names from :data:`benchmarks.sandbox.shims.SHIMS`.
    ``os_requirements``: Debian packages (installed in Docker images; checked locally).
    ``project_sdist``: an sdist archive to pip-install (``--no-deps``) into the env, or None.
    """

    name: str
    python: str = "3.11"
    pip_specs: tuple[str, ...] = ()
    pip_no_deps: bool = True
    pythonpath: tuple[str, ...] = (".",)
    compat_shims: tuple[str, ...] = ()
    os_requirements: tuple[str, ...] = ()
    project_sdist: str | None = None
    project_sdist_sha256: str | None = None

    def key(self) -> str:
        """Hash of everything that decides the environment's content (not its name)."""
        payload = {
            "python": ".".join(self.python.split(".")[:2]),
            "pip_specs": sorted(self.pip_specs),
            "pip_no_deps": self.pip_no_deps,
            "compat_shims": sorted(self.compat_shims),
            "os_requirements": sorted(self.os_requirements),
            "project_sdist_sha256": self.project_sdist_sha256 if self.project_sdist else None,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


@dataclass
class ExecutionJob:
    """One test run: copy ``project_root``, apply ``edits`` (relpath -> full new text), run ``test_ids``."""

    project_root: Path
    env: EnvSpec
    test_ids: list[str]
    edits: dict[str, str] = field(default_factory=dict)
    timeout_s: float | None = None      # None: the executor's default
    label: str = ""


@dataclass
class ExecutionOutcome:
    """Result of a job. ``outcome`` is one of :data:`OUTCOMES`; ``returncode`` is pytest's (or None)."""

    outcome: str
    log: str
    seconds: float
    returncode: int | None = None
    detail: str = ""
    overhead_s: float | None = None     # executor set-up/tear-down around the test process

    @property
    def passed(self) -> bool:
        return self.outcome == PASS

    def to_dict(self) -> dict:
        return asdict(self)


def classify_pytest(returncode: int | None, log: str, *, timed_out: bool = False,
                    oom_killed: bool = False) -> tuple[str, str]:
    """Map a finished pytest process to ``(outcome, detail)``.

    A timeout wins; then an out-of-memory signal (container OOM kill, or a MemoryError /
    allocation failure in the log of a failed run); then pytest's exit code. Exit codes 2-5
    (collection/import errors, node ids not found because their module failed to import, internal
    errors) are ``error`` — still a failure for Pass@1.
    """
    if timed_out:
        return TIMEOUT, "wall-clock timeout"
    if oom_killed:
        return OOM, "killed for exceeding the memory limit"
    if returncode == 0:
        return PASS, "rc=0"
    if returncode is not None and returncode < 0:
        # Killed by a signal: memory only when the log shows an allocation failure (a bare SIGKILL
        # is as likely a completion killing its own process group as the kernel's OOM killer).
        if _MEMORY_MARKERS.search(log):
            return OOM, f"killed by signal {-returncode} after a memory allocation failure"
        return ERROR, f"killed by signal {-returncode}"
    if _MEMORY_MARKERS.search(log):
        return OOM, f"rc={returncode} with a memory allocation failure in the log"
    return PYTEST_RC_OUTCOME.get(returncode, ERROR), f"rc={returncode}"


class Executor(ABC):
    """Runs :class:`ExecutionJob` s. Implementations must be safe to call from several threads."""

    name = "executor"

    def __init__(self, *, timeout_s: float = 60.0, memory_mb: int = 5120):
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)

    @abstractmethod
    def run(self, job: ExecutionJob) -> ExecutionOutcome:
        """Run the job on a private copy of the tree and return its outcome (never raises for test failures)."""

    def prepare(self, env: EnvSpec) -> None:
        """Build (or reuse) the environment for ``env`` ahead of time; optional."""

    def pytest_args(self, test_ids: list[str]) -> list[str]:
        """The pytest command line after ``python``."""
        return ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *test_ids]
