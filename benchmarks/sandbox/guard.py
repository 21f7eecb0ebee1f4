"""Files placed in a local run's sandbox directory: a launcher that applies resource limits and a
``sitecustomize`` write guard.

- ``launch.py`` runs first in the child: sets RLIMIT_AS (memory), RLIMIT_CORE=0, RLIMIT_FSIZE and
  (when the run has its own unprivileged uid) RLIMIT_NPROC, then
  ``execv`` s the real command. (Doing this in the child instead of a ``preexec_fn`` keeps the
  parent thread-safe.)
- ``sitecustomize.py`` installs a :func:`sys.addaudithook` hook in every Python process started in
  the run (the sandbox dir is on PYTHONPATH, so child Python processes get it too). The hook
  refuses, with ``PermissionError``, file opens for writing and the filesystem-mutating calls
  (remove, rename/replace, mkdir, rmdir, chmod, chown, link, symlink, truncate, utime, rmtree) on
  paths outside the allowed roots (the run's work directory and ``/dev``). Audit hooks cannot be
  removed from Python code; native code and non-Python child processes are not covered.
"""

from __future__ import annotations

LAUNCHER = '''import os, resource, sys
_mem = int(os.environ.pop("RECONMEM_SANDBOX_AS_BYTES", "0"))
if _mem > 0:
    resource.setrlimit(resource.RLIMIT_AS, (_mem, _mem))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
_fsize = int(os.environ.pop("RECONMEM_SANDBOX_FSIZE_BYTES", "0"))
if _fsize > 0:
    resource.setrlimit(resource.RLIMIT_FSIZE, (_fsize, _fsize))
_nproc = int(os.environ.pop("RECONMEM_SANDBOX_NPROC", "0"))
if _nproc > 0:
    resource.setrlimit(resource.RLIMIT_NPROC, (_nproc, _nproc))
os.execv(sys.argv[1], sys.argv[1:])
'''

SITECUSTOMIZE = '''"""ReConMem sandbox write guard (generated; see benchmarks/sandbox/guard.py)."""
import os as _os
import sys as _sys


def _install():
    roots = [r for r in _os.environ.get("RECONMEM_SANDBOX_ALLOW", "").split(_os.pathsep) if r]
    if not roots:
        return
    roots = [_os.path.realpath(r) for r in roots]
    write_flags = _os.O_WRONLY | _os.O_RDWR | _os.O_CREAT | _os.O_TRUNC | _os.O_APPEND
    realpath, fspath, isabs, join, getcwd = (_os.path.realpath, _os.fspath, _os.path.isabs,
                                             _os.path.join, _os.getcwd)
    sep = _os.sep
    busy = []

    def allowed(path):
        if isinstance(path, int) or path is None:
            return True
        try:
            p = fspath(path)
            if isinstance(p, bytes):
                p = p.decode(errors="surrogateescape")
            if not isabs(p):
                p = join(getcwd(), p)
            p = realpath(p)
        except Exception:
            return True
        for r in roots:
            if p == r or p.startswith(r + sep):
                return True
        return False

    def deny(event, path):
        raise PermissionError(13, "sandbox: %s outside the work directory is not allowed" % event, str(path))

    mutating = {"os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.chmod": (0,),
                "os.chown": (0,), "os.truncate": (0,), "os.utime": (0,), "shutil.rmtree": (0,),
                "os.rename": (0, 1), "os.link": (0, 1), "os.symlink": (1,), "os.setxattr": (0,),
                "os.removexattr": (0,), "shutil.move": (0, 1), "shutil.copytree": (1,)}

    def hook(event, args):
        if busy:
            return
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            if isinstance(mode, str):
                writing = any(c in mode for c in "wax+")
            else:
                writing = isinstance(flags, int) and bool(flags & write_flags)
            if writing:
                busy.append(1)
                try:
                    ok = allowed(path)
                finally:
                    busy.pop()
                if not ok:
                    deny("writing", path)
            return
        idx = mutating.get(event)
        if idx is None:
            return
        busy.append(1)
        try:
            bad = [args[i] for i in idx if i < len(args) and not allowed(args[i])]
        finally:
            busy.pop()
        if bad:
            deny(event, bad[0])

    _sys.addaudithook(hook)


_install()
del _install
'''
