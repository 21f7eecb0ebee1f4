"""Verified downloads into the cache: PyPI sdists (through pip) and plain URLs.

Everything fetched is checked against a sha256 before use and unpacked into a cache directory
that is never modified afterwards (callers copy before they write).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path


class DownloadError(RuntimeError):
    """A download, checksum or unpack step failed; the message names what and where."""


def cache_root() -> Path:
    """The harness cache directory (``$RECONMEM_CACHE`` or ``~/.cache/reconmem``)."""
    return Path(os.environ.get("RECONMEM_CACHE", Path.home() / ".cache" / "reconmem")).expanduser()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def verify_sha256(path: str | Path, expected: str | None) -> None:
    """Raise :class:`DownloadError` when ``path`` does not hash to ``expected`` (skipped if None)."""
    if not expected:
        return
    got = sha256_file(path)
    if got.lower() != expected.lower():
        raise DownloadError(f"sha256 mismatch for {path}: expected {expected}, got {got}")


def download_url(url: str, dest: str | Path, *, sha256: str | None = None, progress: bool = True) -> Path:
    """Download ``url`` to ``dest`` once (atomic rename), with a progress bar, and verify it."""
    dest = Path(dest)
    if dest.exists():
        verify_sha256(dest, sha256)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".part")
    os.close(fd)
    tmp = Path(name)
    try:
        with urllib.request.urlopen(url, timeout=60) as resp, open(tmp, "wb") as out:
            total = int(resp.headers.get("Content-Length") or 0)
            bar = None
            if progress:
                from tqdm import tqdm

                bar = tqdm(total=total or None, unit="B", unit_scale=True, desc=dest.name)
            for block in iter(lambda: resp.read(1 << 20), b""):
                out.write(block)
                if bar:
                    bar.update(len(block))
            if bar:
                bar.close()
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise DownloadError(f"cannot download {url}: {exc}") from exc
    try:
        verify_sha256(tmp, sha256)
    except DownloadError:
        tmp.unlink(missing_ok=True)
        raise
    tmp.chmod(0o644)
    os.replace(tmp, dest)
    return dest


def pip_download_sdist(name: str, version: str, *, sha256: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """Fetch the sdist of ``name==version`` from PyPI via pip (never a wheel) and verify it."""
    target = Path(cache_dir or cache_root() / "sdists") / f"{name}-{version}"
    existing = [p for p in target.glob("*") if p.suffix in (".gz", ".zip", ".bz2") or p.name.endswith(".tar.gz")]
    if existing:
        verify_sha256(existing[0], sha256)
        return existing[0]
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name,
               "--no-build-isolation", "-d", tmp, f"{name}=={version}", "-q"]
        # --no-build-isolation keeps pip from building anything: `download` of an sdist only fetches.
        proc = subprocess.run(cmd, capture_output=True, text=True)
        files = list(Path(tmp).iterdir())
        if proc.returncode != 0 and not files:
            # pip prepares an sdist's metadata before it keeps the file; some sdists report a wrong
            # version there (e.g. 0.0.0 from a VCS-based version scheme) and pip rejects them. Fall
            # back to the index's own file listing (PEP 691 JSON) and a verified direct download.
            try:
                files = [_download_from_simple_index(name, version, sha256, Path(tmp))]
            except DownloadError as exc:
                raise DownloadError(f"pip download {name}=={version} failed: {proc.stderr.strip()[-800:]}; "
                                    f"index fallback: {exc}") from None
        if not files:
            raise DownloadError(f"pip download {name}=={version} produced no file")
        verify_sha256(files[0], sha256)
        final = target / files[0].name
        os.replace(files[0], final)
    return final


def _download_from_simple_index(name: str, version: str, sha256: str | None, dest_dir: Path) -> Path:
    """Find ``name==version``'s sdist in the simple index (``$PIP_INDEX_URL`` or PyPI) and download it."""
    import json
    import re

    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    norm = re.sub(r"[-_.]+", "-", name).lower()
    req = urllib.request.Request(f"{index}/{norm}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            listing = json.load(resp)
    except (OSError, ValueError) as exc:
        raise DownloadError(f"cannot read the index page {index}/{norm}/: {exc}") from exc
    stems = {f"{n}-{version}" for n in {name, norm, norm.replace("-", "_"), name.replace("-", "_")}}
    for f in listing.get("files", []):
        fname = f.get("filename", "")
        stem = fname[:-7] if fname.endswith(".tar.gz") else fname[:-4] if fname.endswith(".zip") else None
        if stem is None:
            continue
        file_sha = f.get("hashes", {}).get("sha256", "").lower()
        # with a sha256 the file is the one with those bytes, whatever its name says (capirca's
        # release 1.118 is the file capirca-1.118-1.tar.gz, which pip reads as 1.118.post1)
        if sha256 and file_sha != sha256.lower():
            continue
        if not sha256 and stem.lower() not in {s.lower() for s in stems}:
            continue
        url = urllib.parse.urljoin(f"{index}/{norm}/", f["url"])
        return download_url(url, dest_dir / fname, sha256=sha256, progress=False)
    raise DownloadError(f"no sdist {name}-{version} (sha256 {sha256}) in {index}/{norm}/")


def unpack_archive(archive: str | Path, dest: str | Path) -> Path:
    """Unpack a .tar.gz / .zip once into ``dest`` (atomic: unpack to a temp dir, then rename)."""
    archive, dest = Path(archive), Path(dest)
    if dest.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=dest.name + ".tmp"))
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for member in zf.namelist():
                    _check_member(member, archive)
                zf.extractall(tmp)
        else:
            with tarfile.open(archive) as tf:
                for member in tf.getmembers():
                    _check_member(member.name, archive)
                tf.extractall(tmp, filter="data")
        os.replace(tmp, dest)
    except Exception:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _check_member(name: str, archive: Path) -> None:
    if name.startswith("/") or ".." in Path(name).parts:
        raise DownloadError(f"refusing unsafe path {name!r} in {archive}")


def fetch_pypi_source(name: str, version: str, *, sha256: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """Download (once) and unpack (once) an sdist; returns the unpacked directory (read-only by convention)."""
    base = Path(cache_dir or cache_root())
    archive = pip_download_sdist(name, version, sha256=sha256, cache_dir=base / "sdists")
    return unpack_archive(archive, base / "sources" / f"{name}-{version}")
