"""A local OpenAI-compatible server for tests: scripted replies (or a real local model) behind
faults injected on a schedule the test controls. TEST CODE: its replies are scripted, not a model's.

    server = FaultServer(reply=scripted_reply).start()        # http://127.0.0.1:<port>/v1
    server.plan = ["429", "500", "reset"]                      # the next chat requests get these faults
    server.storm = "429"                                       # every request gets this fault until None
    server.fault_fn = lambda n, body: "timeout" if n % 7 == 3 else None
    server.latency = 0.5                                       # seconds per answered chat request
    ...
    server.stats()   # requests, faults, answered, duplicate paid requests

Faults (``FAULTS``): ``429`` (with ``Retry-After``), ``500`` / ``502`` / ``503``, ``reset`` (TCP
RST after reading the request), ``timeout`` (no answer for ``timeout_seconds``, then the
connection closes), ``empty_choice`` (200 with ``choices: []``), ``truncated_json`` (200 whose
message content is JSON cut in the middle, ``finish_reason: length``), ``truncated_body`` (the
HTTP body itself cut off: fewer bytes than Content-Length), and a context-length error body in
each major provider's wording: ``context_openai``, ``context_anthropic``, ``context_gemini``,
``context_deepseek``, ``context_vllm``, ``context_llamacpp``. ``context_limit = N`` makes the server
refuse every request whose prompt (its own count, :func:`approx_tokens`) plus ``max_tokens`` exceeds
N, in OpenAI's wording with the real numbers. A reply function may return a dict ``{"content",
"finish_reason", "reasoning_tokens"}`` for a reasoning model's reply (``reasoning_tokens`` counted
into ``completion_tokens`` and reported in ``completion_tokens_details``).

"Paid" requests are the ones answered with a complete 200 reply (what a provider bills);
``duplicate_paid()`` lists request bodies answered more than once -- a resumed run that re-pays a
finished call shows up there.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback import LoopbackServer, send_bytes

Reply = Callable[[dict[str, Any]], "str | dict[str, Any]"]

# (status, body) of a context-length error in each provider's own wording
CONTEXT_ERRORS: dict[str, tuple[int, dict[str, Any]]] = {
    "context_openai": (400, {"error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
                   "131000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
    "context_anthropic": (400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "prompt is too long: 215000 tokens > 200000 maximum"}}),
    "context_gemini": (400, {"error": {
        "code": 400, "status": "INVALID_ARGUMENT",
        "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}}),
    "context_deepseek": (400, {"error": {
        "message": "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens "
                   "(139000 in the messages, 1000 in the completion). Please reduce the length of the messages "
                   "or completion.", "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}),
    "context_vllm": (400, {"object": "error", "type": "BadRequestError", "param": None, "code": 400,
                           "message": "This model's maximum context length is 32768 tokens. However, you requested "
                                      "33792 tokens (32768 in the messages, 1024 in the completion). Please reduce "
                                      "the length of the messages or completion."}),
    "context_llamacpp": (400, {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 40000,
                                         "n_ctx": 32768,
                                         "message": "the request exceeds the available context size, try increasing it"}}),
}
STATUS_FAULTS = {"429": 429, "500": 500, "502": 502, "503": 503}
FAULTS = (*STATUS_FAULTS, "reset", "timeout", "empty_choice", "truncated_json", "truncated_body", *CONTEXT_ERRORS)


def body_key(body: dict[str, Any]) -> str:
    """Identity of a request for duplicate detection: sha256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class FaultServer(LoopbackServer):
    """Threaded OpenAI-compatible server on loopback (``/v1/chat/completions``, ``/v1/models``; :attr:`url`:
    the base URL)."""

    base_path = "/v1"

    def __init__(self, reply: Reply | None = None, *, model: str = "served-model", latency: float = 0.0,
                 retry_after: float = 0.2, timeout_seconds: float = 3.0, host: str = "127.0.0.1", port: int = 0) -> None:
        self.reply = reply or (lambda body: "Noted.")
        self.model = model
        self.latency = float(latency)
        self.retry_after = retry_after
        self.timeout_seconds = float(timeout_seconds)
        self.plan: list[str] = []          # faults for the next chat requests, consumed in order
        self.storm: str | None = None      # a fault for every chat request while set
        self.fault_fn: Callable[[int, dict[str, Any]], str | None] | None = None
        self.context_limit: int | None = None  # refuse prompts + max_tokens above this (OpenAI wording)
        self.log: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self.max_in_flight = 0
        super().__init__(_make_handler(self), host=host, port=port, quiet_errors=True)  # faults break sockets

    # ---- accounting
    def stats(self) -> dict[str, Any]:
        """Counts: chat requests, faults by kind, paid (answered) requests, distinct paid bodies, duplicates."""
        with self._lock:
            log = list(self.log)
        faults = collections.Counter(e["fault"] for e in log if e["fault"] != "ok")
        paid = [e for e in log if e["paid"]]
        return {"requests": len(log), "faults": dict(faults), "paid": len(paid),
                "distinct_paid": len({e["key"] for e in paid}), "duplicate_paid": len(self.duplicate_paid()),
                "max_in_flight": self.max_in_flight}

    def duplicate_paid(self) -> dict[str, int]:
        """Request bodies answered (paid) more than once: {body key: times}."""
        with self._lock:
            counts = collections.Counter(e["key"] for e in self.log if e["paid"])
        return {k: n for k, n in counts.items() if n > 1}

    def paid_keys(self) -> set[str]:
        with self._lock:
            return {e["key"] for e in self.log if e["paid"]}

    def reset_log(self) -> None:
        with self._lock:
            self.log.clear()
            self.max_in_flight = 0

    # ---- scheduling
    def _next_fault(self, n: int, body: dict[str, Any]) -> str:
        with self._lock:
            if self.storm:
                return self.storm
            if self.plan:
                return self.plan.pop(0)
        if self.fault_fn is not None:
            return self.fault_fn(n, body) or "ok"
        return "ok"


def completion_body(model: str, content: str, *, finish_reason: str = "stop", prompt_tokens: int = 0,
                    completion_tokens: int = 0) -> dict[str, Any]:
    """An OpenAI chat.completion response body."""
    return {"id": f"chatcmpl-{int(time.time() * 1e6)}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "finish_reason": finish_reason,
                                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def approx_tokens(text: str) -> int:
    """The server's own token count of a text: ceil(len / 4) (scripted; stands in for a tokenizer)."""
    return -(-len(text) // 4)


def _prompt_tokens(body: dict[str, Any]) -> int:
    return approx_tokens("".join(str(m.get("content") or "") for m in body.get("messages") or []))


def _requested_tokens(body: dict[str, Any]) -> int:
    """The server's count of a request: prompt tokens plus the completion cap it asks for."""
    return _prompt_tokens(body) + int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)


def _make_handler(server: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model", "owned_by": "test"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            body = json.loads(raw or b"{}")
            with server._lock:
                n = len(server.log)
                entry = {"n": n, "key": body_key(body), "fault": "?", "paid": False, "t": time.time(),
                         "json_mode": (body.get("response_format") or {}).get("type") == "json_object"}
                server.log.append(entry)
                server._in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server._in_flight)
            try:
                fault = server._next_fault(n, body)
                entry["fault"] = fault
                self._serve(fault, body, entry)
            finally:
                with server._lock:
                    server._in_flight -= 1

        def _serve(self, fault: str, body: dict[str, Any], entry: dict[str, Any]) -> None:
            if fault in STATUS_FAULTS:
                headers = {"Retry-After": f"{server.retry_after:g}"} if fault == "429" else {}
                self._send(STATUS_FAULTS[fault], {"error": {"message": f"injected {fault}", "type": "server_error",
                                                            "code": STATUS_FAULTS[fault]}}, headers)
            elif fault in CONTEXT_ERRORS:
                status, payload = CONTEXT_ERRORS[fault]
                self._send(status, payload)
            elif fault == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
            elif fault == "timeout":
                time.sleep(server.timeout_seconds)
                self.close_connection = True
                self.connection.close()
            elif fault == "ok" and server.context_limit and _requested_tokens(body) > server.context_limit:
                entry["fault"] = "context_limit"
                prompt = _prompt_tokens(body)
                out = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
                self._send(400, {"error": {
                    "message": f"This model's maximum context length is {server.context_limit} tokens. However, you "
                               f"requested {prompt + out} tokens ({prompt} in the messages, {out} in the completion). "
                               "Please reduce the length of the messages or completion.",
                    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
            elif fault == "empty_choice":
                data = completion_body(server.model, "")
                data["choices"] = []
                self._send(200, data)
            else:
                if server.latency:
                    time.sleep(server.latency)
                text = server.reply(body)
                reasoning = None
                finish = "stop"
                if isinstance(text, dict):  # a reasoning model's reply
                    reasoning = text.get("reasoning_tokens")
                    finish = text.get("finish_reason") or finish
                    text = str(text.get("content") or "")
                prompt = "".join(str(m.get("content") or "") for m in body.get("messages") or [])
                if fault == "truncated_json":
                    colon = text.find(":")  # '{"memories":' -- the first key without its value: beyond repair
                    text = text[: colon + 1] if colon > 0 else text[: len(text) // 2]
                data = completion_body(server.model, text, finish_reason="length" if fault == "truncated_json" else finish,
                                       prompt_tokens=approx_tokens(prompt),
                                       completion_tokens=approx_tokens(text) + int(reasoning or 0))
                if reasoning is not None:
                    data["usage"]["completion_tokens_details"] = {"reasoning_tokens": int(reasoning)}
                if fault == "truncated_body":
                    payload = json.dumps(data).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                entry["paid"] = True  # before the bytes leave: the client may look at stats() right after
                entry["paid"] = self._send(200, data)

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> bool:
            try:
                send_bytes(self, status, json.dumps(payload).encode(), "application/json", headers)
                return True
            except OSError:  # the client went away (killed runner)
                return False

    return Handler


# ------------------------------------------------------------------ scripted replies (not a model's)
GOOD_ADD = "Here it is:\n```python\ndef add(a, b):\n    return a + b\n```"


def scripted_reply(body: dict[str, Any]) -> str:
    """SCRIPTED replies keyed on the prompt: valid JSON for the memory calls of ReConMem and Mem0,
    CAB user / judge verdicts, a passing ``add`` implementation otherwise."""
    prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])
    if '{"memories": [' in prompt:
        return json.dumps({"memories": [{"text": "add(a, b) in tinypkg/ops.py returns a + b.",
                                         "anchors": ["tinypkg/ops.py/add"]}]})
    if '"action": "INSERT"' in prompt:
        return json.dumps({"action": "INSERT", "target": None, "text": None, "relations": []})
    if '{"facts": [' in prompt:
        return json.dumps({"facts": ["add(a, b) in tinypkg/ops.py returns a + b."]})
    if '{"memory": [{"id"' in prompt:
        return json.dumps({"memory": [{"id": "new", "text": "add(a, b) in tinypkg/ops.py returns a + b.", "event": "ADD"}]})
    if "VERDICT" in prompt and "TECHNICAL CORRECTNESS" in prompt:
        return ("TECHNICAL CORRECTNESS: CORRECT\nALIGNMENT SCORE: 2/2 CONDITIONS MET (100%)\n"
                "CONDITION 1: TRUE Explains how to wait longer\nCONDITION 2: TRUE Identifies DEFAULT_TIMEOUT\n"
                "VERBOSITY ASSESSMENT: APPROPRIATE\nVERDICT: CORRECT\nKEY ISSUES: none\nREASONING: Matches.")
    if "SATISFACTION_STATUS" in prompt:
        return "Perfect, that answers everything.\n\nSATISFACTION_STATUS: FULLY_SATISFIED\nREASON: Both conditions are met."
    if "tinykv" in prompt.lower():
        return "Pass Client(timeout=30) or set TINYKV_TIMEOUT=30; the default is DEFAULT_TIMEOUT in tinykv/config.py."
    return GOOD_ADD


def main() -> None:
    """Run the server in the foreground (manual probing): scripted replies, optional latency and fault rate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--fault", default=None, help=f"fault for every 5th request, one of {', '.join(FAULTS)}")
    args = parser.parse_args()
    server = FaultServer(scripted_reply, latency=args.latency, port=args.port)
    if args.fault:
        server.fault_fn = lambda n, body: args.fault if n % 5 == 4 else None
    server.start()
    print(f"serving {server.url} (scripted replies)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
