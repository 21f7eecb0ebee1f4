"""The package index's JSON API (``/pypi/<name>/json``): a project's sdists, and verified downloads.

The base URL is ``$RECONMEM_PYPI_JSON`` (default ``https://pypi.org/pypi``), so tests point it at a
local stand-in server. Downloads land where :func:`reconmem.platform.downloads.fetch_pypi_source`
looks (``<cache>/sdists/<name>-<version>/`` and ``<cache>/sources/<name>-<version>/``), so the
harness later reuses them.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from reconmem.platform.downloads import DownloadError, cache_root, download_url, unpack_archive

DEFAULT_JSON_API = "https://pypi.org/pypi"
JSON_API_ENV = "RECONMEM_PYPI_JSON"


class NotOnIndex(LookupError):
    """The index has no project of that name."""


@dataclass(frozen=True)
class SdistRelease:
    """One sdist file of one version, as the index lists it."""

    name: str            # the index's canonical spelling
    version: str
    filename: str
    url: str
    sha256: str
    size: int
    upload_time: str     # ISO 8601, UTC

    def to_dict(self) -> dict:
        return asdict(self)


def json_api() -> str:
    return os.environ.get(JSON_API_ENV, DEFAULT_JSON_API).rstrip("/")


def sdist_releases(name: str, *, timeout: float = 60) -> list[SdistRelease]:
    """Every ``.tar.gz`` / ``.zip`` sdist of ``name``, oldest upload first (yanked files left out)."""
    url = f"{json_api()}/{name}/json"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            data = json.load(resp)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise NotOnIndex(f"{name} is not on the index ({url}: 404)") from None
        raise DownloadError(f"cannot read {url}: {exc}") from exc
    except (OSError, ValueError) as exc:
        raise DownloadError(f"cannot read {url}: {exc}") from exc
    canonical = (data.get("info") or {}).get("name") or name
    out = []
    for version, files in (data.get("releases") or {}).items():
        for f in files or []:
            fname = f.get("filename", "")
            if f.get("packagetype") != "sdist" or f.get("yanked") or not fname.endswith((".tar.gz", ".zip")):
                continue
            out.append(SdistRelease(canonical, version, fname, urllib.parse.urljoin(url, f["url"]), (f.get("digests") or {}).get("sha256", ""),
                                    int(f.get("size") or 0), str(f.get("upload_time_iso_8601") or f.get("upload_time"))))
    out.sort(key=lambda r: r.upload_time)
    return out


def sdist_releases_for(names: tuple[str, ...] | list[str], *, timeout: float = 60) -> list[SdistRelease]:
    """The sdists of every name a project was published under, merged, oldest upload first.
    Raises :class:`NotOnIndex` only when the index has none of the names."""
    out, missing = [], []
    for name in names:
        try:
            out += sdist_releases(name, timeout=timeout)
        except NotOnIndex as exc:
            missing.append(str(exc))
    if len(missing) == len(names):
        raise NotOnIndex("; ".join(missing))
    out.sort(key=lambda r: r.upload_time)
    return out


def _dirs(rel: SdistRelease, cache: Path | None) -> tuple[Path, Path]:
    base = Path(cache or cache_root())
    return base / "sdists" / f"{rel.name}-{rel.version}", base / "sources" / f"{rel.name}-{rel.version}"


def drop_release(rel: SdistRelease, *, cache: Path | None = None) -> None:
    """Remove a downloaded and unpacked sdist from the cache (a release that lost the comparison)."""
    for d in _dirs(rel, cache):
        shutil.rmtree(d, ignore_errors=True)


def fetch_release(rel: SdistRelease, *, cache: Path | None = None) -> tuple[Path, Path]:
    """Download (once, sha256-checked) and unpack (once) an sdist: ``(archive, unpacked directory)``."""
    sdists, sources = _dirs(rel, cache)
    archive = download_url(rel.url, sdists / rel.filename, sha256=rel.sha256 or None, progress=False)
    return archive, unpack_archive(archive, sources)
