"""Fixtures of the HTTP tests: a FaultServer on loopback, proxies removed from the environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fault_server import FaultServer, scripted_reply  # noqa: E402

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")


@pytest.fixture()
def no_proxy(monkeypatch):
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture()
def fault_server(no_proxy):
    server = FaultServer(scripted_reply, retry_after=0.05, timeout_seconds=2.0).start()
    yield server
    server.stop()
