"""A local stand-in for the package index's JSON API (``/pypi/<name>/json``) and its file host.

Tests register sdists (bytes) under a project name; the server answers the JSON API with PyPI's
fields (relative file URLs, as some mirrors give), the simple index's PEP 691 JSON page
(``/simple/<name>/``) and the files, counting every request.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class IndexServer:
    def __init__(self) -> None:
        self.projects: dict[str, list[dict]] = {}
        self.files: dict[str, bytes] = {}
        self.hits: list[str] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def add_sdist(self, name: str, version: str, filename: str, data: bytes, upload_time: str) -> str:
        """Register one sdist; returns its sha256."""
        sha = hashlib.sha256(data).hexdigest()
        self.files[filename] = data
        self.projects.setdefault(name, []).append(
            {"version": version, "filename": filename, "packagetype": "sdist", "size": len(data),
             "digests": {"sha256": sha}, "upload_time_iso_8601": upload_time,
             "url": f"../../packages/{filename}", "yanked": False})
        return sha

    def __enter__(self) -> "IndexServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                server.hits.append(self.path)
                parts = self.path.strip("/").split("/")
                if len(parts) == 3 and parts[0] == "pypi" and parts[2] == "json" and parts[1] in server.projects:
                    releases: dict[str, list] = {}
                    for f in server.projects[parts[1]]:
                        releases.setdefault(f["version"], []).append(f)
                    body = json.dumps({"info": {"name": parts[1]}, "releases": releases}).encode()
                    return self._send(200, body, "application/json")
                if len(parts) == 2 and parts[0] == "simple" and parts[1] in server.projects:
                    files = [{"filename": f["filename"], "url": f"../../packages/{f['filename']}",
                              "hashes": {"sha256": f["digests"]["sha256"]}} for f in server.projects[parts[1]]]
                    body = json.dumps({"meta": {"api-version": "1.0"}, "name": parts[1], "files": files}).encode()
                    return self._send(200, body, "application/vnd.pypi.simple.v1+json")
                if len(parts) == 2 and parts[0] == "packages" and parts[1] in server.files:
                    return self._send(200, server.files[parts[1]], "application/octet-stream")
                self._send(404, b"not found", "text/plain")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
