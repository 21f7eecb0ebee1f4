"""``benchmarks.deveval.fetch`` (``python -m scripts.fetch_deveval --from``): only a file with the
shipped sha256 is installed; anything else is refused and leaves nothing at the destination."""

from __future__ import annotations

import io
import tarfile

import pytest

from benchmarks.deveval.fetch import fetch
from reconmem.platform.downloads import DownloadError


def _tarball(path, name: str, body: bytes) -> None:
    with tarfile.open(path, "w:gz") as tf:
        info = tarfile.TarInfo(name)
        info.size = len(body)
        tf.addfile(info, io.BytesIO(body))


def test_a_file_with_another_checksum_is_refused(tmp_path, deveval_data):
    dest = tmp_path / "cache" / "data.jsonl"
    with pytest.raises(DownloadError, match="does not match"):
        fetch(dest, str(deveval_data))  # the tests' subset, not DevEval's file
    assert not dest.exists()
    archive = tmp_path / "data.tar.gz"
    _tarball(archive, "DevEval/data.jsonl", deveval_data.read_bytes())
    with pytest.raises(DownloadError, match="does not match"):
        fetch(dest, str(archive))
    _tarball(archive, "DevEval/other.jsonl", b"{}\n")
    with pytest.raises(DownloadError, match="holds no data.jsonl"):
        fetch(dest, str(archive))
    assert list(dest.parent.iterdir()) == []


def test_the_full_file_is_installed_and_kept(tmp_path, deveval_full_data):
    if deveval_full_data is None:
        pytest.skip("DevEval's full data.jsonl is not on this machine (python -m scripts.fetch_deveval)")
    dest = tmp_path / "data.jsonl"
    assert fetch(dest, str(deveval_full_data)) == dest and dest.read_bytes() == deveval_full_data.read_bytes()
    mtime = dest.stat().st_mtime_ns
    assert fetch(dest, "/no/such/file") == dest and dest.stat().st_mtime_ns == mtime  # verified: not fetched again
