"""Build-time rules: skipped trees and files, parse errors, language filters, bad input."""

from __future__ import annotations

import pytest

from reconmem.platform.code import RepositoryIndex


@pytest.fixture()
def messy_repo(tmp_path):
    def write(rel, data):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())

    write("src/app.py", "def main():\n    return 1\n")
    write("src/broken.py", "def ok():\n    pass\n\ndef broken(:\n    x = \n\nclass After:\n    def m(self):\n        pass\n")
    write("src/latin1.py", b"NAME = '\xe9t\xe9'\n\ndef f():\n    pass\n")
    write("web/app.js", "export function go() {}\n")
    write("web/app.min.js", "function a(){}\n")
    write("web/bundle.js", "var x=1;" * 1000)  # one very long line: minified
    write("node_modules/lib/index.js", "function lib() {}\n")
    write(".git/hooks/x.py", "def hook():\n    pass\n")
    write("venv/lib/site.py", "def s():\n    pass\n")
    write("myenv/pyvenv.cfg", "home = /usr\n")
    write("myenv/lib/mod.py", "def venv_mod():\n    pass\n")
    write("third_party/dep.py", "def dep():\n    pass\n")
    write("data/blob.py", b"\x00\x01\x02binary")
    write("big/huge.py", "X = 1\n" * 5000)
    write("docs/readme.md", "# not code\n")
    return tmp_path


def test_skips_vendored_generated_and_oversized(messy_repo):
    idx = RepositoryIndex.build(messy_repo, max_file_bytes=20_000)
    assert sorted(idx.files()) == ["src/app.py", "src/broken.py", "src/latin1.py", "web/app.js"]
    assert set(idx.skipped) == {"web/bundle.js", "data/blob.py", "big/huge.py"}
    assert "max_file_bytes" in idx.skipped["big/huge.py"]
    assert sorted(p for p, e in idx.entities.items() if e.kind == "directory") == ["src", "web"]


def test_parse_errors_do_not_stop_indexing(messy_repo):
    idx = RepositoryIndex.build(messy_repo)
    assert "src/broken.py" in idx.errors
    assert idx.get("src/broken.py/ok").kind == "function"
    assert idx.get("src/broken.py/After/m").kind == "function"  # recovered after the error
    assert idx.get("src/latin1.py/f").kind == "function"  # non-UTF-8 bytes are fine
    assert "NAME" in idx.get("src/latin1.py/NAME").signature


def test_language_filter_and_bad_input(messy_repo, tmp_path):
    assert sorted(RepositoryIndex.build(messy_repo, languages=["js"]).files()) == ["web/app.js"]
    with pytest.raises(ValueError, match="unsupported language 'cobol'"):
        RepositoryIndex.build(messy_repo, languages=["cobol"])
    with pytest.raises(FileNotFoundError, match="not a directory"):
        RepositoryIndex.build(tmp_path / "nope")
    idx = RepositoryIndex.build(messy_repo)
    with pytest.raises(KeyError, match="unknown entity path"):
        idx.source("src/app.py/nope")
    with pytest.raises(KeyError, match="unknown entity path"):
        idx.compress("src/app.py/nope")


def test_content_hash_tracks_file_contents(messy_repo):
    a = RepositoryIndex.build(messy_repo).content_hash
    assert RepositoryIndex.build(messy_repo).content_hash == a
    (messy_repo / "src" / "app.py").write_text("def main():\n    return 2\n")
    assert RepositoryIndex.build(messy_repo).content_hash != a
