"""A real browser for tests: Debian's headless Chromium driven over the W3C WebDriver protocol
(chromedriver, plain HTTP+JSON), and ``inspect view`` as a local server.

Chromium runs with a fresh ``--user-data-dir`` and without background networking, component
updates, sync or first-run work (the machine's network is closed; without these it stalls).
Every process here is started by the caller's ``with`` block and ended by it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                  "--window-size=1400,1000"]
_LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def browser_binaries() -> tuple[str, str] | None:
    """(chromium, chromedriver) when both are installed."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (chromium, driver) if chromium and driver else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http(method: str, url: str, body: Any = None, timeout: float = 120.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with _LOOPBACK.open(request, timeout=timeout) as response:
        return json.loads(response.read() or b"null")


def wait_http(url: str, seconds: float, proc: subprocess.Popen | None = None) -> None:
    """Poll ``url`` until it answers 2xx (or ``proc`` exits, or ``seconds`` pass)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} before {url} answered")
        try:
            with _LOOPBACK.open(url, timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {seconds:.0f} s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@contextlib.contextmanager
def inspect_view(log_dir: Path, log_file: Path) -> Iterator[str]:
    """``inspect view --log-dir log_dir`` on a free loopback port; yields its base URL."""
    port = free_port()
    inspect = Path(sys.executable).with_name("inspect")
    cmd = [str(inspect), "view", "--log-dir", str(log_dir), "--host", "127.0.0.1", "--port", str(port)]
    with open(log_file, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "NO_COLOR": "1"})
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/api/logs", 180, proc)
        yield base
    finally:
        _stop(proc)


class Browser:
    """One headless Chromium session behind chromedriver."""

    def __init__(self, base: str, session: str) -> None:
        self.base, self.session = base, session

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        return _http(method, f"{self.base}/session/{self.session}{path}", body)["value"]

    def open(self, url: str) -> None:
        self._call("POST", "/url", {"url": url})

    def script(self, source: str) -> Any:
        return self._call("POST", "/execute/sync", {"script": source, "args": []})

    def text(self) -> str:
        return str(self.script("return document.body ? document.body.innerText : ''"))

    def wait_text(self, needles: list[str], seconds: float) -> str:
        """Poll the page text until it contains every needle; returns it (raises on time-out)."""
        deadline = time.monotonic() + seconds
        text = ""
        while time.monotonic() < deadline:
            text = self.text()
            if all(n in text for n in needles):
                return text
            time.sleep(1.0)
        missing = [n for n in needles if n not in text]
        raise AssertionError(f"page text lacks {missing!r} after {seconds:.0f} s; it shows:\n{text[:3000]}")

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self._call("GET", "/screenshot")))
        return path


@contextlib.contextmanager
def chromium(log_file: Path) -> Iterator[Browser]:
    """chromedriver on a free port and one headless Chromium session (fresh profile)."""
    found = browser_binaries()
    if found is None:
        raise RuntimeError("chromium and chromedriver are not installed (make browser)")
    binary, driver = found
    port = free_port()
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    with open(log_file, "w") as out:
        proc = subprocess.Popen([driver, f"--port={port}"], stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    session = None
    try:
        wait_http(base + "/status", 60, proc)
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": binary, "args": [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]}}}}
        session = _http("POST", base + "/session", caps)["value"]["sessionId"]
        yield Browser(base, session)
    finally:
        if session is not None:
            with contextlib.suppress(Exception):
                _http("DELETE", f"{base}/session/{session}", timeout=30)
        _stop(proc)
        shutil.rmtree(profile, ignore_errors=True)
