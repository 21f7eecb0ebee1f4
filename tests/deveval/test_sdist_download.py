"""The simple-index fallback of the sdist download: a release whose file name spells another
version (capirca's release 1.118 is ``capirca-1.118-1.tar.gz``) is found by its sha256."""

from __future__ import annotations

import pytest

from reconmem.platform.downloads import DownloadError, _download_from_simple_index
from tests.deveval.index_server import IndexServer


@pytest.fixture()
def index(monkeypatch):
    with IndexServer() as srv:
        monkeypatch.setenv("PIP_INDEX_URL", f"{srv.url}/simple")
        yield srv


def test_file_found_by_sha256_when_its_name_spells_another_version(tmp_path, index):
    sha = index.add_sdist("standin", "1.118", "standin-1.118-1.tar.gz", b"release bytes", "2017-01-01T00:00:00Z")
    index.add_sdist("standin", "1.120", "standin-1.120.tar.gz", b"other bytes", "2018-01-01T00:00:00Z")
    got = _download_from_simple_index("standin", "1.118", sha, tmp_path)
    assert got.name == "standin-1.118-1.tar.gz" and got.read_bytes() == b"release bytes"


def test_without_sha256_only_the_version_in_the_name_counts(tmp_path, index):
    index.add_sdist("standin", "1.118", "standin-1.118-1.tar.gz", b"release bytes", "2017-01-01T00:00:00Z")
    index.add_sdist("standin", "1.120", "standin-1.120.tar.gz", b"other bytes", "2018-01-01T00:00:00Z")
    with pytest.raises(DownloadError, match="no sdist standin-1.118"):
        _download_from_simple_index("standin", "1.118", None, tmp_path)
    assert _download_from_simple_index("standin", "1.120", None, tmp_path / "b").read_bytes() == b"other bytes"


def test_a_sha256_no_file_has_is_an_error(tmp_path, index):
    index.add_sdist("standin", "1.118", "standin-1.118-1.tar.gz", b"release bytes", "2017-01-01T00:00:00Z")
    with pytest.raises(DownloadError, match="sha256 " + "0" * 64):
        _download_from_simple_index("standin", "1.118", "0" * 64, tmp_path)
