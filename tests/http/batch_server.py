"""A local stand-in for OpenAI's Batch API (files and batches) for tests, on loopback. TEST CODE: its
replies are scripted (``fault_server.scripted_reply`` by default), not a model's.

    server = BatchServer(api_key="sk-test").start()     # http://127.0.0.1:<port>/v1
    server.hold = True            # batches stay in_progress until released
    server.hold_polls = 3         # ... or for the next 3 retrieves
    server.fail_ids = {"r2"}      # these custom_ids get a per-request 500 in the output file
    server.error_ids = {"r3"}     # these get an error line in the error file
    server.expire_after = 1       # the next batches answer 1 request, then expire (the rest: batch_expired)
    server.reject = "bad input"   # the next batches fail validation (status failed, nothing answered)
    server.lose_create = True     # the next batch is created but its HTTP answer is lost (connection closed)
    server.page_size = 2          # GET /v1/batches pages (limit, after, has_more)
    ...
    server.received   # Counter: custom_id -> times it arrived in a created batch
    server.paid       # Counter: custom_id -> times it was answered with a 200 (what the provider bills)

Endpoints, as OpenAI's: ``POST /v1/files`` (multipart: ``purpose``, ``file``), ``GET /v1/files/{id}``,
``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches``
(list, newest first), ``POST /v1/batches/{id}/cancel``. A batch is ``validating`` when created and
is processed at its first retrieve (unless ``hold``): every line answered at once, then
``completed``, ``expired`` or ``failed``. Every request needs ``Authorization: Bearer <api_key>``
when ``api_key`` is set (401 otherwise).
"""

from __future__ import annotations

import collections
import itertools
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import Any

from fault_server import approx_tokens, completion_body, scripted_reply
from loopback import LoopbackServer, send_bytes

Reply = Callable[[dict[str, Any]], str]
LIVE = ("validating", "in_progress", "finalizing")


class BatchServer(LoopbackServer):
    """Threaded stand-in for OpenAI's ``/v1/files`` and ``/v1/batches`` on 127.0.0.1 (:attr:`url`: the base URL)."""

    base_path = "/v1"

    def __init__(self, reply: Reply | None = None, *, api_key: str | None = None, model: str = "gpt-5-mini",
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.reply = reply or scripted_reply
        self.api_key = api_key
        self.model = model
        self.hold = False
        self.hold_polls = 0
        self.fail_ids: set[str] = set()
        self.error_ids: set[str] = set()
        self.expire_after: int | None = None
        self.reject: str | None = None
        self.lose_create = False
        self.page_size = 100  # batches per page of GET /v1/batches (at most the request's limit)
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.received: collections.Counter[str] = collections.Counter()
        self.paid: collections.Counter[str] = collections.Counter()
        self.unauthorized = 0
        self.bodies: dict[str, dict[str, Any]] = {}  # custom_id -> the last body received for it
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        super().__init__(_make_handler(self), host=host, port=port)

    def duplicate_paid(self) -> dict[str, int]:
        """custom_ids answered (billed) more than once."""
        return {k: n for k, n in self.paid.items() if n > 1}

    # ---- objects
    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids):04d}"

    def add_file(self, content: bytes, purpose: str, filename: str = "file.jsonl") -> dict[str, Any]:
        """Store a file; its OpenAI file object."""
        with self._lock:
            file_id = self._new_id("file")
            obj = {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                   "filename": filename, "purpose": purpose, "status": "processed"}
            self.files[file_id] = obj
            self.contents[file_id] = content
        return obj

    def create_batch(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        file_id = str(body.get("input_file_id") or "")
        if file_id not in self.files:
            return 400, {"error": {"message": f"No such file: {file_id}", "type": "invalid_request_error"}}
        if body.get("completion_window") != "24h" or not body.get("endpoint"):
            return 400, {"error": {"message": "completion_window must be 24h and endpoint given",
                                   "type": "invalid_request_error"}}
        lines = [json.loads(line) for line in self.contents[file_id].decode().splitlines() if line.strip()]
        now = int(time.time())
        with self._lock:
            batch_id = self._new_id("batch")
            batch = {"id": batch_id, "object": "batch", "endpoint": body["endpoint"], "errors": None,
                     "input_file_id": file_id, "completion_window": "24h", "status": "validating",
                     "output_file_id": None, "error_file_id": None, "created_at": now, "in_progress_at": None,
                     "expires_at": now + 86400, "finalizing_at": None, "completed_at": None, "failed_at": None,
                     "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                     "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                     "metadata": body.get("metadata") or None}
            self.batches[batch_id] = batch
            for line in lines:
                self.received[str(line.get("custom_id"))] += 1
                self.bodies[str(line.get("custom_id"))] = line.get("body") or {}
        return 200, batch

    def retrieve(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        batch = self.batches.get(batch_id)
        if batch is None:
            return 404, {"error": {"message": f"No batch found with id '{batch_id}'.", "type": "invalid_request_error"}}
        if batch["status"] == "validating":
            batch["status"], batch["in_progress_at"] = "in_progress", int(time.time())
            if self.reject:
                batch.update(status="failed", failed_at=int(time.time()), in_progress_at=None,
                             errors={"object": "list", "data": [{"code": "invalid_request", "message": self.reject,
                                                                 "param": None, "line": 1}]})
                return 200, batch
        if batch["status"] == "in_progress" and self.hold_polls > 0:
            self.hold_polls -= 1
        elif batch["status"] == "in_progress" and not self.hold:
            self._process(batch)
        return 200, batch

    def _process(self, batch: dict[str, Any]) -> None:
        lines = [json.loads(line) for line in self.contents[batch["input_file_id"]].decode().splitlines() if line.strip()]
        out, err = [], []
        for n, line in enumerate(lines):
            cid = str(line["custom_id"])
            req_id = f"batch_req_{batch['id']}_{n}"
            if self.expire_after is not None and n >= self.expire_after:
                err.append({"id": req_id, "custom_id": cid, "response": None, "error": {
                    "code": "batch_expired",
                    "message": "This request could not be executed before the completion window expired."}})
            elif cid in self.error_ids:
                err.append({"id": req_id, "custom_id": cid, "response": None,
                            "error": {"code": "server_error", "message": "injected request error"}})
            elif cid in self.fail_ids:
                out.append({"id": req_id, "custom_id": cid, "error": None, "response": {
                    "status_code": 500, "request_id": req_id,
                    "body": {"error": {"message": "injected 500", "type": "server_error"}}}})
            else:
                body = line.get("body") or {}
                text = str(self.reply(body))
                prompt = "".join(str(m.get("content") or "") for m in body.get("messages") or [])
                completion = completion_body(str(body.get("model") or self.model), text,
                                             prompt_tokens=approx_tokens(prompt), completion_tokens=approx_tokens(text))
                out.append({"id": req_id, "custom_id": cid, "error": None,
                            "response": {"status_code": 200, "request_id": req_id, "body": completion}})
                self.paid[cid] += 1
        now = int(time.time())
        counts = {"total": len(lines), "completed": sum(1 for o in out if o["response"]["status_code"] == 200)}
        counts["failed"] = len(lines) - counts["completed"]
        if out:
            batch["output_file_id"] = self.add_file(_jsonl(out), "batch_output", "batch_output.jsonl")["id"]
        if err:
            batch["error_file_id"] = self.add_file(_jsonl(err), "batch_output", "batch_errors.jsonl")["id"]
        expired = self.expire_after is not None and len(lines) > self.expire_after
        batch.update(request_counts=counts, finalizing_at=now,
                     **({"status": "expired", "expired_at": now} if expired else {"status": "completed", "completed_at": now}))


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _parse_multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """Form fields of a multipart body: name -> (filename, bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return fields


def _make_handler(server: BatchServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _authorized(self) -> bool:
            if server.api_key is None or self.headers.get("Authorization") == f"Bearer {server.api_key}":
                return True
            server.unauthorized += 1
            self._send(401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                       "code": "invalid_api_key"}})
            return False

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            if not self._authorized():
                return
            parts = self.path.split("?")[0].strip("/").split("/")
            if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
                if parts[2] not in server.contents:
                    self._send(404, {"error": {"message": f"No such File object: {parts[2]}"}})
                    return
                self._send_bytes(200, server.contents[parts[2]], "application/octet-stream")
            elif parts[:2] == ["v1", "files"] and len(parts) == 3:
                obj = server.files.get(parts[2])
                self._send(200, obj) if obj else self._send(404, {"error": {"message": f"No such File object: {parts[2]}"}})
            elif parts[:2] == ["v1", "batches"] and len(parts) == 3:
                self._send(*server.retrieve(parts[2]))
            elif parts == ["v1", "batches"]:
                query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
                limit = min(int((query.get("limit") or ["20"])[0]), server.page_size)
                data = sorted(server.batches.values(), key=lambda b: b["id"], reverse=True)
                if query.get("after"):
                    data = [b for b in data if b["id"] < query["after"][0]]
                page = data[:limit]
                self._send(200, {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                                 "last_id": page[-1]["id"] if page else None, "has_more": len(data) > limit})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self._authorized():
                return
            parts = self.path.split("?")[0].strip("/").split("/")
            if parts == ["v1", "files"]:
                fields = _parse_multipart(self.headers.get("Content-Type", ""), raw)
                if "file" not in fields:
                    self._send(400, {"error": {"message": "missing file"}})
                    return
                purpose = fields.get("purpose", (None, b""))[1].decode()
                self._send(200, server.add_file(fields["file"][1], purpose, fields["file"][0] or "upload.jsonl"))
            elif parts == ["v1", "batches"]:
                status, batch = server.create_batch(json.loads(raw or b"{}"))
                if server.lose_create and status == 200:
                    server.lose_create = False
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self._send(status, batch)
            elif parts[:2] == ["v1", "batches"] and len(parts) == 4 and parts[3] == "cancel":
                batch = server.batches.get(parts[2])
                if batch is None:
                    self._send(404, {"error": {"message": f"No batch found with id '{parts[2]}'."}})
                    return
                if batch["status"] in LIVE:
                    batch.update(status="cancelled", cancelled_at=int(time.time()))
                self._send(200, batch)
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            self._send_bytes(status, json.dumps(payload).encode(), "application/json")

        def _send_bytes(self, status: int, data: bytes, content_type: str) -> None:
            send_bytes(self, status, data, content_type)

    return Handler
