"""OS-level confinement of local test runs (the local executor's hard boundary when no engine runs).

Chosen at run time (``executor.confine: auto``), in this order:

- ``bwrap`` (Debian's ``bubblewrap``): new pid, network, IPC and UTS namespaces; a fresh root that
  holds only read-only binds of the system (``/usr``, ``/etc``, the ``/bin``-style links), the
  environment's venv and its base interpreter, a private ``/tmp``, and the run's work dir
  read-write. The harness's processes are invisible (cannot be signalled or ptraced), the network
  is loopback only, host files outside those binds do not exist. When the harness runs as root,
  the command additionally drops to a per-run unprivileged uid with no capabilities
  (``setpriv``), so ``RLIMIT_NPROC`` bounds fork bombs and nothing root-only is reachable.
- ``unshare`` (util-linux, root only): pid/network/IPC/UTS/mount namespaces with a private
  ``/proc`` plus the same unprivileged uid; host files readable by any user stay readable.
- ``none``: plain subprocess (the previous behaviour) with a one-line warning saying what is not
  confined. ``executor.confine: bwrap|unshare`` insists on one and fails clearly if unavailable.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

CONFINEMENTS = ("auto", "bwrap", "unshare", "none")
UID_BASE, UID_SPAN = 200_000, 60_000       # per-run unprivileged uids (no passwd entry needed)
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


class ConfinementUnavailable(RuntimeError):
    """The requested confinement cannot run on this machine; the message says why."""


def _probe(cmd: list[str]) -> str | None:
    """None if ``cmd`` runs (rc 0), else a short reason."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or [f"rc={proc.returncode}"])[-1]


@functools.lru_cache(maxsize=None)
def availability(kind: str) -> str | None:
    """None if confinement ``kind`` works here, else why not (probed once per process)."""
    if kind == "bwrap":
        if shutil.which("bwrap") is None:
            return "bubblewrap (bwrap) is not installed (make sandbox-deps)"
        return _probe(["bwrap", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid",
                       "--unshare-net", "--die-with-parent", "true"])
    if kind == "unshare":
        if os.geteuid() != 0:
            return "unshare confinement needs root (it drops to an unprivileged uid)"
        if shutil.which("unshare") is None or shutil.which("setpriv") is None:
            return "unshare/setpriv (util-linux) not found"
        return _probe(["unshare", "--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts", "--mount-proc",
                       "true"])
    return None


@dataclass(frozen=True)
class Confinement:
    """How local runs are wrapped; :meth:`wrap` turns a command into the confined one."""

    kind: str                   # bwrap | unshare | none
    reason: str = ""            # why this one was chosen (the fallback message)

    @property
    def drops_uid(self) -> bool:
        return self.kind != "none" and os.geteuid() == 0

    def wrap(self, cmd: list[str], *, work: Path, tree: Path, ro_binds: list[Path], uid: int | None,
             home: Path | None = None) -> list[str]:
        """The confined command line for ``cmd`` run in ``tree`` (inside ``work``).

        With bwrap and a per-run ``uid``, ``/etc/passwd`` and ``/etc/group`` are overlaid with
        copies that also name the uid (user ``runner``, home ``home``), so ``getpass.getuser()``
        and ``Path.home()`` work as they do for the Docker executor's ``runner`` user.
        """
        drop = []
        if uid is not None:
            drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
                    "--bounding-set=-all", "--inh-caps=-all", "--"]
        if self.kind == "none":
            return cmd
        if self.kind == "unshare":
            return ["unshare", "--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts", "--mount-proc",
                    "--", *drop, *cmd]
        args = ["bwrap", "--ro-bind", "/usr", "/usr"]
        for link in _SYSTEM_LINKS:
            p = Path(link)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), link]
            elif p.is_dir():
                args += ["--ro-bind", link, link]
        args += ["--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
                 "--perms", "1777", "--tmpfs", "/dev/shm", "--perms", "1777", "--tmpfs", "/tmp"]
        if uid is not None:
            for name, line in identity_files(Path(work), uid, home or Path(work)).items():
                args += ["--ro-bind", str(line), f"/etc/{name}"]
        mounted = [Path(p) for p in ("/usr", "/etc", "/proc", "/dev")]
        seen, made = set(), {Path("/")}

        def parents(path: Path) -> list[str]:
            # bwrap would create missing parents 0700 (e.g. /root): make them searchable for the uid
            out = []
            for anc in reversed(path.parents):
                if anc == Path("/tmp"):
                    continue
                if anc in made or any(anc == m or m in anc.parents for m in mounted):
                    continue
                made.add(anc)
                out += ["--perms", "0755", "--dir", str(anc)]
            return out

        for path in ro_binds:
            path = Path(path).resolve()
            if path in seen or not path.exists() or str(path).startswith("/usr/"):
                continue
            seen.add(path)
            args += [*parents(path), "--ro-bind", str(path), str(path)]
        work = Path(work)
        args += [*parents(work), "--bind", str(work), str(work), "--chdir", str(tree),
                 "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                 "--die-with-parent", "--new-session"]
        if uid is None:                     # not root: bwrap's own user namespace, no capabilities
            args += ["--unshare-user", "--cap-drop", "ALL"]
        return [*args, "--", *drop, *cmd]


@functools.lru_cache(maxsize=None)
def choose(setting: str = "auto") -> Confinement:
    """The confinement for ``executor.confine`` (``auto`` picks the strongest available, logging why)."""
    if setting not in CONFINEMENTS:
        raise ValueError(f"executor.confine must be one of {list(CONFINEMENTS)}, got {setting!r}")
    if setting == "none":
        return Confinement("none", "executor.confine=none")
    if setting != "auto":
        why = availability(setting)
        if why:
            raise ConfinementUnavailable(f"executor.confine={setting} is not available here: {why}")
        return Confinement(setting, f"executor.confine={setting}")
    reasons = []
    for kind in ("bwrap", "unshare"):
        why = availability(kind)
        if why is None:
            chosen = Confinement(kind, "; ".join(reasons + [f"using {kind}"]))
            if reasons:
                log.warning("local sandbox: %s", chosen.reason)
            return chosen
        reasons.append(f"{kind} unavailable ({why})")
    chosen = Confinement("none", "; ".join(reasons))
    log.warning("local sandbox: no OS confinement (%s): a completion can signal the harness, reach the "
                "network and read host files; install bubblewrap (make sandbox-deps) or use executor=docker",
                chosen.reason)
    return chosen


def identity_files(work: Path, uid: int, home: Path) -> dict[str, Path]:
    """Copies of the host's ``/etc/passwd`` and ``/etc/group`` plus an entry for ``uid`` (in ``work``)."""
    out = {}
    box = work / ".sandbox"
    box.mkdir(exist_ok=True)
    for name, entry in (("passwd", f"runner:x:{uid}:{uid}:sandbox run:{home}:/bin/sh\n"),
                        ("group", f"runner:x:{uid}:\n")):
        try:
            host = Path("/etc", name).read_text()
        except OSError:
            host = ""
        lines = [ln for ln in host.splitlines(keepends=True) if not ln.startswith("runner:")]
        path = box / name
        path.write_text("".join(lines) + ("" if not lines or lines[-1].endswith("\n") else "\n") + entry)
        out[name] = path
    return out


def run_uid(token: str) -> int:
    """A per-run unprivileged uid derived from the run's token."""
    return UID_BASE + int(token[:8], 16) % UID_SPAN


def chown_tree(root: Path, uid: int) -> None:
    """Give ``root`` and everything below it to ``uid`` (links themselves, never their targets)."""
    os.lchown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            try:
                os.lchown(os.path.join(dirpath, name), uid, uid)
            except OSError:
                pass


def python_prefixes(python: Path) -> list[Path]:
    """Directories a venv's interpreter needs: the venv itself and its base installation."""
    venv = Path(python).parent.parent
    out = [venv]
    cfg = venv / "pyvenv.cfg"
    if cfg.exists():
        for line in cfg.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                out.append(Path(value.strip()).parent)
    try:
        out.append(Path(os.path.realpath(python)).parent.parent)
    except OSError:
        pass
    return out
