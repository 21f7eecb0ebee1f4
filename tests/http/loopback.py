"""The loopback HTTP servers of the HTTP and exchange tests (TEST CODE): a threaded ``http.server`` on
127.0.0.1 run in a daemon thread, with start / stop, a context manager and its URL, and the one reply
writer of their request handlers (:func:`send_bytes`)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackServer:
    """A :class:`ThreadingHTTPServer` on ``host:port`` (port 0: a free one) serving ``handler``."""

    base_path = ""  # what :attr:`url` appends to the address (``/v1`` for the OpenAI stand-ins)

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, host: str = "127.0.0.1", port: int = 0,
                 quiet_errors: bool = False) -> None:
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        if quiet_errors:  # servers that break sockets on purpose
            self._httpd.handle_error = lambda request, client_address: None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` plus :attr:`base_path`."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{self.base_path}"

    def start(self) -> Any:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True, name=type(self).__name__)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def send_bytes(handler: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str,
               headers: dict[str, str] | None = None) -> None:
    """Answer ``handler``'s request: status, Content-Type, Content-Length, ``headers``, then ``data``."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()
