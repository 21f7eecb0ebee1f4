"""Named Python-compatibility shims that a project environment may request (manifest ``compat_shims``).

A shim is a set of files dropped into the environment's site-packages. The project tree is never
edited. Shims are keyed by what they do, never by project.
"""

from __future__ import annotations

from pathlib import Path

_COLLECTIONS_ABC_MODULE = '''"""Harness shim: restore collections.<ABC> aliases removed in Python 3.10."""
import collections
import collections.abc

for _name in ("Awaitable", "Coroutine", "AsyncIterable", "AsyncIterator", "AsyncGenerator",
              "Hashable", "Iterable", "Iterator", "Generator", "Reversible", "Sized", "Container",
              "Callable", "Collection", "Set", "MutableSet", "Mapping", "MutableMapping",
              "MappingView", "KeysView", "ItemsView", "ValuesView", "Sequence", "MutableSequence",
              "ByteString"):
    if not hasattr(collections, _name) and hasattr(collections.abc, _name):
        setattr(collections, _name, getattr(collections.abc, _name))
'''

SHIMS: dict[str, dict[str, str]] = {
    # name -> {file name in site-packages: content}
    "collections_abc_aliases": {
        "_collections_abc_compat.py": _COLLECTIONS_ABC_MODULE,
        "zz_collections_abc_compat.pth": "import _collections_abc_compat\n",
    },
}


def shim_files(names) -> dict[str, str]:
    """All files of the named shims; unknown names raise ``ValueError`` naming the known ones."""
    files: dict[str, str] = {}
    for name in names:
        if name not in SHIMS:
            raise ValueError(f"unknown compat shim {name!r} (field compat_shims); known: {sorted(SHIMS)}")
        files.update(SHIMS[name])
    return files


def install_shims(names, site_packages: Path) -> None:
    """Write the named shims into ``site_packages``."""
    for fname, text in shim_files(names).items():
        (site_packages / fname).write_text(text)
