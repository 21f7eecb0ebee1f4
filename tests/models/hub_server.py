"""A local HTTP server speaking the Hugging Face Hub's file API, for the hub-route tests.

``GET|HEAD /<owner>/<repo>/resolve/<revision>/<path>`` answers like the hub: a small file
directly (``ETag``, ``X-Repo-Commit``, ``Content-Length``), a large-file-storage one with a 302 to
``/blobs/<sha256>`` (``X-Linked-Etag``, ``X-Linked-Size``), anything else 404. Loopback only;
every request is counted, and it serves only what the test put there.
"""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

COMMIT = "0" * 40


class HubServer:
    """``with HubServer() as hub: hub.add(repo, path, data); os.environ["HF_ENDPOINT"] = hub.url``."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str, str], bytes | Path] = {}
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                with server._lock:
                    server.requests.append((self.command, self.path))
                data, redirect, sha = server._lookup(self.path)
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if redirect:
                    self.send_response(302)
                    self.send_header("Location", f"/blobs/{sha}")
                    self.send_header("X-Linked-Etag", f'"{sha}"')
                    self.send_header("X-Linked-Size", str(len(data)))
                    self.send_header("X-Repo-Commit", COMMIT)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("ETag", f'"{sha}"')
                self.send_header("X-Repo-Commit", COMMIT)
                self.end_headers()
                if body:
                    self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def add(self, repo: str, path: str, data: bytes | Path, revision: str = "main") -> str:
        """Serve ``data`` as ``repo``'s ``path`` at ``revision``; returns its sha256."""
        self.files[(repo, revision, path)] = data
        return hashlib.sha256(data if isinstance(data, bytes) else Path(data).read_bytes()).hexdigest()

    def _lookup(self, url_path: str) -> tuple[bytes | None, bool, str]:
        from urllib.parse import unquote

        path = unquote(url_path.split("?", 1)[0])
        if path.startswith("/blobs/"):
            sha = path.rsplit("/", 1)[1]
            for data in self.files.values():
                raw = data if isinstance(data, bytes) else Path(data).read_bytes()
                if hashlib.sha256(raw).hexdigest() == sha:
                    return raw, False, sha
            return None, False, ""
        parts = path.lstrip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return None, False, ""
        repo, revision, file_path = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
        data = self.files.get((repo, revision, file_path))
        if data is None:
            return None, False, ""
        raw = data if isinstance(data, bytes) else Path(data).read_bytes()
        large = len(raw) > 10_000 or file_path.endswith((".gguf", ".safetensors"))
        return raw, large, hashlib.sha256(raw).hexdigest()

    def __enter__(self) -> "HubServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)
