"""``benchmarks.deveval.fetch`` (``python -m scripts.fetch_deveval --from``): only a file with the
shipped sha256 is installed; anything else is refused and leaves nothing at the destination."""

from __future__ import annotations

import io
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from benchmarks.deveval import fetch as fetch_module
from benchmarks.deveval.fetch import fetch
from reconmem.platform.downloads import DownloadError, sha256_file


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


class _FileHost:
    """A local stand-in for DevEval's file host (GitHub raw): serves one file, counting requests."""

    def __init__(self, body: bytes) -> None:
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                host.hits += 1
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.hits = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/data.tar.gz"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def test_a_verified_file_is_installed_from_the_host_and_kept(tmp_path, deveval_data, monkeypatch):
    """The download path end to end against a stand-in host, with the tests' subset standing in for
    DevEval's file (its checksums in place of the shipped ones): installed once, then kept."""
    archive = tmp_path / "data.tar.gz"
    _tarball(archive, "DevEval/data.jsonl", deveval_data.read_bytes())
    sums = {"data.jsonl": sha256_file(deveval_data), "data.tar.gz": sha256_file(archive)}
    monkeypatch.setattr(fetch_module, "_checksums", lambda: sums)
    host = _FileHost(archive.read_bytes())
    try:
        dest = tmp_path / "cache" / "data.jsonl"
        assert fetch(dest, url=host.url) == dest and dest.read_bytes() == deveval_data.read_bytes()
        assert host.hits == 1
        mtime = dest.stat().st_mtime_ns
        assert fetch(dest, url=host.url) == dest and dest.stat().st_mtime_ns == mtime  # verified: not fetched again
        assert host.hits == 1
        assert sorted(p.name for p in dest.parent.iterdir()) == ["data.jsonl"]  # no partial download left
        local = tmp_path / "from_archive" / "data.jsonl"
        assert fetch(local, str(archive)) == local and local.read_bytes() == deveval_data.read_bytes()
    finally:
        host.close()


def test_the_shipped_checksum_accepts_deveval_s_file_when_this_machine_has_it(tmp_path, deveval_full_data):
    """With DevEval's real file (../shared or a fetched copy) the shipped checksum accepts it; a clone
    without it checks that the shipped checksum file names both artefacts."""
    sums = fetch_module._checksums()
    assert set(sums) == {"data.jsonl", "data.tar.gz"} and all(len(v) == 64 for v in sums.values())
    if deveval_full_data is not None:
        dest = tmp_path / "data.jsonl"
        assert fetch(dest, str(deveval_full_data)) == dest and dest.read_bytes() == deveval_full_data.read_bytes()
