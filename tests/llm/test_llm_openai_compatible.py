"""The real litellm transport against a fake OpenAI-compatible server on loopback (no internet):
api_base and api_key_env are passed, tool calls are parsed, 429s are retried, context errors are not."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reconmem.platform.llm import BackboneSpec, ContextLengthExceeded, LLMClient, UsageLedger


class FakeOpenAI(BaseHTTPRequestHandler):
    requests: list = []
    script: list = []

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        status, payload = type(self).script.pop(0)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def _ok(content=None, tool_calls=None):
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return 200, {"id": "c1", "object": "chat.completion", "created": 1, "model": "served-model",
                 "choices": [{"index": 0, "finish_reason": "tool_calls" if tool_calls else "stop", "message": message}],
                 "usage": {"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28}}


@pytest.fixture()
def server(monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    FakeOpenAI.requests, FakeOpenAI.script = [], []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def _client(api_base, **kw):
    spec = BackboneSpec(name="oc", model="openai/served-model", context_window=32768, max_output_tokens=64,
                        api_base=api_base, supports_function_calling=True, **kw)
    return LLMClient(spec, ledger=UsageLedger(), retry_base_delay=0.001, retry_max_delay=0.002)


def test_api_base_key_tools_and_usage(server, monkeypatch):
    monkeypatch.setenv("RECONMEM_TEST_SERVER_KEY", "sk-test-123")
    FakeOpenAI.script = [_ok(tool_calls=[{"id": "t1", "type": "function",
                                          "function": {"name": "search_code", "arguments": "{\"query\": \"foo\"}"}}])]
    client = _client(server, api_key_env="RECONMEM_TEST_SERVER_KEY")
    tools = [{"type": "function", "function": {"name": "search_code", "description": "search",
                                               "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]
    resp = client.chat([{"role": "user", "content": "find foo"}], purpose="maintainer_tool_step", tools=tools, max_tokens=33)
    assert resp.tool_calls == [{"id": "t1", "name": "search_code", "arguments": {"query": "foo"}}]
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (21, 7)
    (req,) = FakeOpenAI.requests
    assert req["path"].endswith("/chat/completions") and req["auth"] == "Bearer sk-test-123"
    assert req["body"]["model"] == "served-model" and req["body"]["max_tokens"] == 33
    assert req["body"]["tools"][0]["function"]["name"] == "search_code"
    assert client.ledger.events[0]["purpose"] == "maintainer_tool_step"


def test_keyless_server_gets_placeholder_key_not_a_provider_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-secret")
    FakeOpenAI.script = [_ok('{"a": 1}')]
    client = _client(server)
    assert client.chat_json([{"role": "user", "content": "json please"}], purpose="judge") == {"a": 1}
    (req,) = FakeOpenAI.requests
    assert "sk-real-secret" not in (req["auth"] or "")
    assert req["body"]["response_format"] == {"type": "json_object"}


def test_rate_limit_retried_then_success(server, monkeypatch):
    monkeypatch.setattr("reconmem.platform.llm.client.time.sleep", lambda s: None)
    FakeOpenAI.script = [(429, {"error": {"message": "rate limited", "type": "rate_limit"}}),
                         (503, {"error": {"message": "overloaded"}}), _ok("done")]
    client = _client(server)
    assert client.chat([{"role": "user", "content": "hi"}], purpose="judge").text == "done"
    assert len(FakeOpenAI.requests) == 3


def test_context_error_from_server_not_retried(server):
    FakeOpenAI.script = [(400, {"error": {"message": "This model's maximum context length is 32768 tokens. "
                                          "However, your messages resulted in 40000 tokens.",
                                          "type": "invalid_request_error", "code": "context_length_exceeded"}})] * 3
    client = _client(server)
    with pytest.raises(ContextLengthExceeded):
        client.chat([{"role": "user", "content": "hi"}], purpose="turn_generation")
    assert len(FakeOpenAI.requests) == 1
