"""Model files from the Hugging Face Hub's file API, sha256-verified, for the local model sources.

A file is ``GET <endpoint>/<repo>/resolve/<revision>/<path>`` (redirects followed), the endpoint is
``$HF_ENDPOINT`` (default ``https://huggingface.co``), read at each call. ``RECONMEM_OFFLINE=1``
turns the hub off: :func:`offline` is true and :func:`fetch` raises :class:`HubUnavailable`
without sending anything. Before a download the file is probed with a short ``HEAD``
(``RECONMEM_HUB_TIMEOUT`` seconds, default 5), so an unreachable hub costs one quick failure; the
answer is remembered per endpoint for the process. Nothing is used before its sha256 (and size,
when given) matched: a mismatch is refused (:class:`HubIntegrityError`) and nothing is left behind.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from reconmem.platform.downloads import sha256_file

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://huggingface.co"
OFFLINE_ENV = "RECONMEM_OFFLINE"
_UNREACHABLE: dict[str, str] = {}  # endpoint -> why (this process)
_LOCK = threading.Lock()


class HubUnavailable(RuntimeError):
    """The hub is off (``RECONMEM_OFFLINE=1``), unreachable, or does not have the file."""


class HubIntegrityError(HubUnavailable):
    """A downloaded file does not have the expected size / sha256 (refused)."""


def offline() -> bool:
    """``RECONMEM_OFFLINE=1`` (or true / yes): use the offline sources only, never the hub."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def endpoint() -> str:
    """``$HF_ENDPOINT`` or the public hub."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def file_url(repo: str, path: str, revision: str = "main") -> str:
    """The hub's resolve URL of one file of a model repository."""
    quoted = urllib.parse.quote(path)
    return f"{endpoint()}/{repo}/resolve/{urllib.parse.quote(revision, safe='')}/{quoted}"


def _timeout() -> float:
    try:
        return float(os.environ.get("RECONMEM_HUB_TIMEOUT") or 5.0)
    except ValueError:
        return 5.0


def _headers() -> dict[str, str]:
    token = os.environ.get("HF_TOKEN")
    return {"User-Agent": "reconmem-harness", **({"Authorization": f"Bearer {token}"} if token else {})}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A probe stops at the hub's redirect (to the file's storage): an answer is enough."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _open(request: urllib.request.Request, timeout: float, *, follow: bool = True):
    """urlopen (redirects followed unless ``follow`` is false), without a proxy for a loopback
    endpoint (a local mirror or test server)."""
    host = urllib.parse.urlsplit(request.full_url).hostname or ""
    handlers: list[urllib.request.BaseHandler] = [] if follow else [_NoRedirect()]
    if host in ("localhost", "::1") or host.startswith("127."):
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers).open(request, timeout=timeout)


def probe(url: str) -> None:
    """``HEAD url`` with a short timeout; raises :class:`HubUnavailable` (remembered per endpoint
    when the hub does not answer at all)."""
    if offline():
        raise HubUnavailable(f"{OFFLINE_ENV}=1: the hub is not used")
    base = endpoint()
    with _LOCK:
        why = _UNREACHABLE.get(base)
    if why:
        raise HubUnavailable(f"{base} unreachable earlier in this process ({why})")
    request = urllib.request.Request(url, method="HEAD", headers=_headers())
    try:
        with _open(request, _timeout(), follow=False):
            return
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            return
        raise HubUnavailable(f"{url}: HTTP {exc.code}") from None
    except (OSError, ValueError) as exc:
        with _LOCK:
            _UNREACHABLE[base] = str(exc)
        raise HubUnavailable(f"{base} unreachable: {exc}") from None


def fetch(repo: str, path: str, dest: str | Path, *, sha256: str, size: int | None = None,
          revision: str = "main") -> Path:
    """Download one hub file to ``dest`` (atomic), verified against ``sha256`` / ``size``.

    A ``dest`` that already has the expected sha256 is returned without a request."""
    if not sha256:
        raise ValueError(f"hub file {repo}/{path}: a sha256 is required (nothing unverified is used)")
    dest = Path(dest)
    if dest.is_file() and (size is None or dest.stat().st_size == int(size)) and sha256_file(dest) == sha256.lower():
        return dest
    url = file_url(repo, path, revision)
    probe(url)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
    digest = hashlib.sha256()
    try:
        request = urllib.request.Request(url, headers=_headers())
        with _open(request, 60) as response, open(tmp, "wb") as out:
            for block in iter(lambda: response.read(8 << 20), b""):
                digest.update(block)
                out.write(block)
        got = digest.hexdigest()
        if size is not None and tmp.stat().st_size != int(size):
            raise HubIntegrityError(f"{url}: {tmp.stat().st_size} bytes, expected {size}: refused")
        if got != sha256.lower():
            raise HubIntegrityError(f"{url}: sha256 {got}, expected {sha256}: refused")
        os.replace(tmp, dest)
    except (OSError, ValueError) as exc:
        raise HubUnavailable(f"{url}: download failed: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    log.info("downloaded %s from %s (sha256 verified)", dest.name, url)
    return dest
