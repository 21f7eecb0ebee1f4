"""Local executor: a fresh temp copy of the tree, a cached venv per project environment, pytest in a
subprocess with a wall-clock timeout and resource limits.

What is enforced (and what is not):
- Work dir: every run gets ``<work_root>/reconmem-run-XXXX/`` holding the tree copy, ``HOME``,
  ``TMPDIR`` and the log; it is removed in ``finally``. The cached snapshot is never touched.
- Time: wall-clock ``timeout_s``; on expiry the whole process group is SIGKILLed.
- Stray processes: the child gets its own session; afterwards the process group is killed, and any
  process still carrying the run's ``RECONMEM_SANDBOX_ID`` in its environment (e.g. a daemon that
  called ``setsid``) is found through ``/proc`` and killed.
- Memory: ``RLIMIT_AS`` = ``memory_mb`` (allocations beyond it fail -> MemoryError -> ``oom``);
  core dumps off; ``RLIMIT_FSIZE`` caps any single written file (``max_file_mb``).
- Writes outside the work dir: refused inside every Python process of the run by an audit-hook
  guard (``guard_writes``, see :mod:`benchmarks.sandbox.guard`); ``/dev`` stays writable.
- OS confinement (``confine``, see :mod:`benchmarks.sandbox.confine`): with bubblewrap the run sees
  only read-only system dirs, its venv and its work dir, gets its own pid/network namespaces (the
  harness cannot be signalled or ptraced, no network but loopback) and, when the harness is root,
  runs as a per-run unprivileged uid with ``RLIMIT_NPROC`` = ``pids_limit``. Without bubblewrap:
  ``unshare`` namespaces, else no confinement (a one-line warning says so).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
import time
import uuid
from pathlib import Path

from .base import ERROR, EnvSpec, ExecutionJob, ExecutionOutcome, Executor, classify_pytest
from .confine import chown_tree, choose, python_prefixes, run_uid
from .guard import LAUNCHER, SITECUSTOMIZE
from .venvs import EnvBuildError, VenvCache

MAX_LOG_CHARS = 40_000


def _default_venv_dir() -> Path:
    from reconmem.platform.downloads import cache_root

    return cache_root() / "venvs"


def clip_log(text: str, limit: int = MAX_LOG_CHARS) -> str:
    """Keep the head and the tail of a long log."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n... [{len(text) - limit} characters cut] ...\n" + text[-half:]


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a snapshot into a run dir, making the copy writable by the owner."""
    shutil.copytree(src, dst, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(dst):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
                if not stat.S_ISLNK(st.st_mode) and not st.st_mode & stat.S_IWUSR:
                    os.chmod(p, st.st_mode | stat.S_IWUSR)
            except OSError:
                pass
    st = os.stat(dst)
    os.chmod(dst, st.st_mode | stat.S_IWUSR)


def apply_edits(tree: Path, edits: dict[str, str]) -> None:
    """Write ``edits`` (relpath -> text) into ``tree``; paths must stay inside it."""
    root = tree.resolve()
    for rel, text in edits.items():
        target = (tree / rel).resolve()
        if root not in target.parents:
            raise ValueError(f"edit path {rel!r} escapes the tree")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)            # never write through a link into the snapshot
        target.write_text(text)


def kill_tagged_processes(token: str, *, rounds: int = 5) -> int:
    """SIGKILL every process whose environment holds ``RECONMEM_SANDBOX_ID=<token>``; returns count."""
    needle = f"RECONMEM_SANDBOX_ID={token}".encode()
    killed = 0
    me = os.getpid()
    for _ in range(rounds):
        found = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle not in f.read():
                        continue
                os.kill(int(entry), signal.SIGKILL)
                found += 1
            except (OSError, ProcessLookupError):
                continue
        killed += found
        if not found:
            break
        time.sleep(0.05)
    return killed


def _others_can_enter(path: Path) -> bool:
    """Every directory from / down to ``path`` is searchable by other users."""
    p = Path(path).resolve()
    for d in [p, *p.parents]:
        try:
            if not os.stat(d).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


class LocalExecutor(Executor):
    """Run jobs in subprocesses on this machine (see the module docstring for the guarantees)."""

    name = "local"

    def __init__(self, *, timeout_s: float = 60.0, memory_mb: int = 5120, venv_dir: str | Path | None = None,
                 work_root: str | Path | None = None, guard_writes: bool = True, max_file_mb: int = 1024,
                 base_python: str | None = None, keep_work: bool = False, single_thread_blas: bool = True,
                 confine: str = "auto", pids_limit: int = 512, extra_ro_binds: list[str] | tuple = (),
                 **_ignored):
        super().__init__(timeout_s=timeout_s, memory_mb=memory_mb)
        self.confinement = choose(confine or "auto")
        self.pids_limit = int(pids_limit)
        self.extra_ro_binds = [Path(p) for p in extra_ro_binds or ()]
        self.venvs = VenvCache(venv_dir or _default_venv_dir(), base_python=base_python)
        self.work_root = Path(work_root) if work_root else None
        self.guard_writes = guard_writes
        self.max_file_mb = max_file_mb
        self.keep_work = keep_work
        self.single_thread_blas = single_thread_blas

    def prepare(self, env: EnvSpec) -> None:
        self.venvs.ensure(env)

    def describe(self) -> dict:
        """What a run manifest records about this executor."""
        return {"name": self.name, "timeout_s": self.timeout_s, "memory_mb": self.memory_mb,
                "confine": self.confinement.kind, "confine_reason": self.confinement.reason,
                "unprivileged_uid": self.confinement.drops_uid, "pids_limit": self.pids_limit,
                "guard_writes": self.guard_writes, "max_file_mb": self.max_file_mb,
                "network": "loopback only" if self.confinement.kind != "none" else "host network"}

    def run(self, job: ExecutionJob) -> ExecutionOutcome:
        t0 = time.monotonic()
        try:
            python = self.venvs.ensure(job.env)
        except (EnvBuildError, OSError, ValueError) as exc:
            return ExecutionOutcome(ERROR, f"environment build failed: {exc}", time.monotonic() - t0,
                                    detail="env_build")
        if self.work_root:
            self.work_root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="reconmem-run-", dir=self.work_root)).resolve()
        token = uuid.uuid4().hex
        try:
            tree, home, tmp, box = work / "tree", work / "home", work / "tmp", work / ".sandbox"
            copy_tree(Path(job.project_root), tree)
            apply_edits(tree, job.edits)
            for d in (home, tmp, box):
                d.mkdir()
            (box / "launch.py").write_text(LAUNCHER)
            if self.guard_writes:
                (box / "sitecustomize.py").write_text(SITECUSTOMIZE)
            env = self._environment(job, python, tree, home, tmp, box, work, token)
            cmd = [str(python), str(box / "launch.py"), str(python), *self.pytest_args(job.test_ids)]
            uid = self._run_uid(token, python)
            if uid is not None:
                chown_tree(work, uid)
                env["RECONMEM_SANDBOX_NPROC"] = str(self.pids_limit)
            cmd = self.confinement.wrap(cmd, work=work, tree=tree, uid=uid, home=home,
                                        ro_binds=python_prefixes(python) + self.extra_ro_binds)
            result, waited = self._run_process(cmd, tree, env, work / "pytest.log", token,
                                               job.timeout_s or self.timeout_s, t0)
        finally:
            kill_tagged_processes(token)
            if not self.keep_work:
                shutil.rmtree(work, ignore_errors=True)
        # sandbox overhead: everything but the wait for the test process (venv lookup, tree copy,
        # chown, clean-up), the same definition as the docker executor's container overhead
        result.seconds = time.monotonic() - t0
        result.overhead_s = round(result.seconds - waited, 3)
        return result

    def _run_uid(self, token: str, python: Path) -> int | None:
        """The unprivileged uid of a run, or None (not root / no confinement / venv unreachable)."""
        if not self.confinement.drops_uid:
            return None
        if self.confinement.kind == "unshare" and not all(_others_can_enter(p) for p in python_prefixes(python)):
            # no private root under unshare: another uid could not reach the venv, so the run keeps
            # root inside its namespaces (no signals/ptrace of the harness, no network, but host
            # files stay readable and writable) - bubblewrap has no such gap
            if not getattr(self, "_warned_root", False):
                self._warned_root = True
                import logging

                logging.getLogger(__name__).warning(
                    "local sandbox (unshare): the venv %s is not reachable by other users, so runs keep root "
                    "inside their namespaces; install bubblewrap (make sandbox-deps) for a private root",
                    Path(python).parent.parent)
            return None
        return run_uid(token)

    def _environment(self, job, python, tree, home, tmp, box, work, token) -> dict[str, str]:
        pythonpath = [str((tree / p).resolve()) for p in job.env.pythonpath] + [str(box)]
        env = {
            "PATH": f"{Path(python).parent}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home), "TMPDIR": str(tmp), "TEMP": str(tmp), "TMP": str(tmp),
            "PYTHONPATH": os.pathsep.join(pythonpath),
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "VIRTUAL_ENV": str(Path(python).parent.parent),
            "RECONMEM_SANDBOX_ID": token,
            "RECONMEM_SANDBOX_AS_BYTES": str(self.memory_mb * 1024 * 1024),
            "RECONMEM_SANDBOX_FSIZE_BYTES": str(self.max_file_mb * 1024 * 1024),
        }
        if self.guard_writes:
            env["RECONMEM_SANDBOX_ALLOW"] = os.pathsep.join([str(work), "/dev"])
        if self.single_thread_blas:
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                env[var] = "1"
        return env

    def _run_process(self, cmd, cwd, env, log_path: Path, token: str, timeout: float, t0: float):
        import subprocess

        timed_out = False
        t_start = time.monotonic()
        with open(log_path, "wb") as logf:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=logf,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
        waited = time.monotonic() - t_start
        seconds = time.monotonic() - t0
        log = clip_log(log_path.read_text(errors="replace"))
        outcome, detail = classify_pytest(None if timed_out else proc.returncode, log, timed_out=timed_out)
        return ExecutionOutcome(outcome, log, seconds, returncode=None if timed_out else proc.returncode,
                                detail=detail), waited
