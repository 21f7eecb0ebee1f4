"""LLMClient: response cache, retries/backoff, error mapping, API-key check, BackboneSpec parsing.

Transports are test doubles (scripted replies or raised exceptions); nothing here touches the network.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from reconmem.platform.llm import (
    BackboneSpec,
    Completion,
    ContextLengthExceeded,
    LLMClient,
    LLMError,
    LLMUnavailable,
    ResponseCache,
    TransientLLMError,
    Usage,
    UsageLedger,
    LiteLLMTransport,
    classify_error,
    request_key,
)
from reconmem.platform.llm.response import prefill_counts
from reconmem.platform.testing import ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "What does foo() do?"}]


# ------------------------------------------------------------------------------------ cache
def test_cache_hit_replays_response_and_original_usage(tmp_path):
    ledger = UsageLedger()
    llm = ScriptedLLM([{"text": "answer", "usage": {"input_tokens": 123, "output_tokens": 45}}],
                      ledger=ledger, cache_path=tmp_path / "cache.sqlite")
    first = llm.chat(MSGS, purpose="turn_generation")
    second = llm.chat(MSGS, purpose="turn_generation")  # script has one reply: must come from the cache
    assert (first.cached, second.cached) == (False, True)
    assert second.text == "answer" and second.usage == Usage(123, 45)
    assert len(llm.calls) == 1
    events = ledger.events
    assert [e["cached"] for e in events] == [False, True]
    assert [(e["input_tokens"], e["output_tokens"]) for e in events] == [(123, 45), (123, 45)]


def test_rerun_reproduces_identical_token_tables(tmp_path):
    def run(ledger):
        llm = ScriptedLLM(lambda m, p: f"reply to {m[-1]['content']}", ledger=ledger, cache_path=tmp_path)
        for i in range(3):
            with ledger.tags(sample=f"s{i}"):
                llm.chat([{"role": "user", "content": f"q{i}"}], purpose="turn_generation")
                llm.chat([{"role": "user", "content": f"judge {i}"}], purpose="judge")
        return llm

    first, second = UsageLedger(), UsageLedger()
    run(first)
    llm2 = run(second)
    assert llm2.calls == []  # everything served by the cache
    strip = lambda t: {k: {f: v[f] for f in ("calls", "input_tokens", "output_tokens")} for k, v in t.items()}  # noqa: E731
    assert strip(first.totals(by=("sample", "purpose"))) == strip(second.totals(by=("sample", "purpose")))
    assert second.totals(by=())["cached_calls"] == 6


@pytest.mark.parametrize(
    "change",
    [
        {"messages": [{"role": "user", "content": "What does bar() do?"}]},
        {"max_tokens": 99},
        {"json_mode": True},
        {"stop": ["\n\n"]},
        {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]},
    ],
)
def test_cache_key_sensitive_to_every_parameter(tmp_path, change):
    llm = ScriptedLLM(["a", "b"], cache_path=tmp_path / "c.sqlite")
    llm.chat(MSGS, purpose="judge")
    kw = dict(change)
    messages = kw.pop("messages", MSGS)
    resp = llm.chat(messages, purpose="judge", **kw)
    assert (resp.text, resp.cached, len(llm.calls)) == ("b", False, 2)


def test_cache_key_ignores_purpose_but_not_model():
    base = {"model": "m1", "messages": MSGS, "max_tokens": 5, "temperature": 0.0}
    assert request_key(base) == request_key(dict(base))
    assert request_key(base) != request_key({**base, "model": "m2"})
    assert request_key(base) != request_key({**base, "api_base": "http://other:8000/v1"})


def test_nonzero_temperature_is_never_cached(tmp_path):
    llm = ScriptedLLM(["a", "b"], cache_path=tmp_path / "c.sqlite")
    assert llm.chat(MSGS, purpose="persona", temperature=0.7).text == "a"
    assert llm.chat(MSGS, purpose="persona", temperature=0.7).text == "b"
    assert len(llm.cache) == 0


def test_cache_shared_across_clients_and_threads(tmp_path):
    path = tmp_path / "shared.sqlite"
    writer = ScriptedLLM(lambda m, p: "v:" + m[-1]["content"], cache_path=path)
    errors = []

    def work(t):
        try:
            for i in range(20):
                writer.chat([{"role": "user", "content": f"{t}-{i}"}], purpose="judge")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(writer.cache) == 80
    reader = ScriptedLLM([], cache_path=path)  # a second client (as another process would open it)
    assert reader.chat([{"role": "user", "content": "2-7"}], purpose="judge").text == "v:2-7"
    assert ResponseCache(tmp_path).path == tmp_path / "llm_cache.sqlite"


# ---------------------------------------------------------------------------------- retries
class FlakyTransport(LiteLLMTransport):
    """litellm's transport whose send raises the given exceptions, then replies (test double)."""

    def __init__(self, spec, failures):
        super().__init__(spec)
        self.failures = list(failures)
        self.attempts = 0

    def send(self, request, *, purpose, key):
        self.attempts += 1
        if self.failures:
            raise self.failures.pop(0)
        return self.reply(request)

    def reply(self, request):
        return Completion(text="ok", usage=Usage(3, 1), model="openai/flaky")

    def count_text(self, text):  # keep litellm out of these tests
        return len(text.split())

    def count_messages(self, messages):
        return sum(len(str(m.get("content", "")).split()) for m in messages)


class FlakyClient(LLMClient):
    """A real LLMClient whose transport raises the given exceptions, then succeeds."""

    transport_class = FlakyTransport

    def __init__(self, failures, **kw):
        spec = BackboneSpec(name="flaky", model="openai/flaky", context_window=1000, max_output_tokens=10)
        super().__init__(spec, retry_base_delay=0.001, retry_max_delay=0.002,
                         transport=self.transport_class(spec, failures), **kw)

    @property
    def attempts(self):
        return self.transport.attempts


def _litellm():
    from reconmem.platform.llm import import_litellm

    return import_litellm()


def test_retry_on_rate_limit_then_success(monkeypatch):
    litellm = _litellm()
    sleeps = []
    monkeypatch.setattr("reconmem.platform.llm.client.time.sleep", lambda s: sleeps.append(s))
    client = FlakyClient([litellm.RateLimitError("slow down", llm_provider="openai", model="flaky"),
                          litellm.InternalServerError("boom", llm_provider="openai", model="flaky"),
                          litellm.Timeout("timed out", model="flaky", llm_provider="openai")])
    resp = client.chat(MSGS, purpose="judge")
    assert resp.text == "ok" and client.attempts == 4
    assert len(sleeps) == 3
    # exponential backoff with jitter in [0.5, 1.5) x base x 2^attempt (capped at retry_max_delay)
    assert all(0.0005 <= s < 0.003 for s in sleeps)
    assert client.ledger.totals()["judge"]["calls"] == 1


def test_backoff_grows_exponentially():
    client = FlakyClient([])
    client.retry_base_delay, client.retry_max_delay = 1.0, 10.0
    for attempt, base in enumerate([1, 2, 4, 8, 10, 10]):
        d = client._backoff(attempt)
        assert 0.5 * base <= d < 1.5 * base


def test_gives_up_after_max_retries(monkeypatch):
    monkeypatch.setattr("reconmem.platform.llm.client.time.sleep", lambda s: None)
    client = FlakyClient([TransientLLMError("overloaded")] * 10, max_retries=2)
    with pytest.raises(LLMError, match="giving up after 3 attempts"):
        client.chat(MSGS, purpose="judge")
    assert client.attempts == 3 and len(client.ledger) == 0


def test_no_retry_on_context_length():
    litellm = _litellm()
    client = FlakyClient([litellm.ContextWindowExceededError("maximum context length is 1000", model="flaky",
                                                             llm_provider="openai")])
    with pytest.raises(ContextLengthExceeded, match="purpose=judge"):
        client.chat(MSGS, purpose="judge")
    assert client.attempts == 1


def test_auth_error_names_env_var(monkeypatch):
    litellm = _litellm()
    monkeypatch.setenv("RECONMEM_TEST_KEY", "sk-wrong")
    client = FlakyClient([litellm.AuthenticationError("bad key", llm_provider="openai", model="flaky")])
    client.spec.api_key_env = "RECONMEM_TEST_KEY"
    with pytest.raises(LLMUnavailable, match="RECONMEM_TEST_KEY"):
        client.chat(MSGS, purpose="judge")
    assert client.attempts == 1


def test_classify_error_without_litellm_types():
    class Status(Exception):
        def __init__(self, code):
            super().__init__(f"status {code}")
            self.status_code = code

    assert classify_error(Status(429)) == "retry"
    assert classify_error(Status(503)) == "retry"
    assert classify_error(Status(400)) == "fatal"
    assert classify_error(Status(401)) == "auth"
    assert classify_error(ConnectionResetError("reset")) == "retry"
    assert classify_error(ValueError("This model's maximum context length is 8192 tokens")) == "context"
    assert classify_error(ValueError("bad")) == "fatal"


def test_fatal_error_wrapped_once():
    client = FlakyClient([ValueError("malformed request")])
    with pytest.raises(LLMError, match="ValueError: malformed request"):
        client.chat(MSGS, purpose="judge")
    assert client.attempts == 1


def test_concurrency_cap():
    active, peak = [0], [0]
    lock = threading.Lock()
    gate = threading.Event()

    class SlowTransport(FlakyTransport):
        def reply(self, request):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            gate.wait(0.05)
            with lock:
                active[0] -= 1
            return Completion(text="ok", usage=Usage(1, 1))

    class Slow(FlakyClient):
        transport_class = SlowTransport

    client = Slow([], max_concurrency=2)
    threads = [threading.Thread(target=client.chat, args=(MSGS,), kwargs={"purpose": "judge"}) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 2 and len(client.ledger) == 6


def test_llama_cpp_timings_become_prefilled_and_restored_tokens_in_the_ledger():
    class LlamaCppTransport(FlakyTransport):
        def reply(self, request):
            return Completion(text="ok", usage=Usage(120, 4), raw={"timings": {"prompt_n": 20, "cache_n": 100}})

    class LlamaCpp(FlakyClient):
        transport_class = LlamaCppTransport

    client = LlamaCpp([])
    client.chat(MSGS, purpose="turn_generation")
    event = client.ledger.events[0]
    assert (event["prefilled_tokens"], event["restored_tokens"], event["input_tokens"]) == (20, 100, 120)
    other = FlakyClient([])  # a provider without timings: no such fields
    other.chat(MSGS, purpose="judge")
    assert "prefilled_tokens" not in other.ledger.events[0] and prefill_counts({"timings": {}}) == {}


# ------------------------------------------------------------------------------ construction
def test_missing_api_key_fails_at_construction(monkeypatch):
    monkeypatch.delenv("RECONMEM_TEST_MISSING_KEY", raising=False)
    spec = BackboneSpec(name="gpt", model="openai/gpt-5-mini", context_window=400000, max_output_tokens=100,
                        api_key_env="RECONMEM_TEST_MISSING_KEY")
    with pytest.raises(LLMUnavailable) as info:
        LLMClient(spec)
    message = str(info.value)
    assert "RECONMEM_TEST_MISSING_KEY" in message and "\n" not in message


def test_tools_rejected_when_backbone_lacks_function_calling():
    llm = ScriptedLLM(["x"], supports_function_calling=False)
    with pytest.raises(LLMError, match="supports_function_calling"):
        llm.chat(MSGS, purpose="maintainer_tool_step", tools=[{"type": "function", "function": {"name": "f"}}])


def test_backbone_spec_from_every_config_file():
    from omegaconf import OmegaConf

    for name in ("local", "gpt5_mini", "deepseek_v32", "qwen3_235b", "openai_compatible"):
        spec = BackboneSpec.from_config(OmegaConf.load(REPO / "conf" / "backbone" / f"{name}.yaml"))
        assert spec.name == name and spec.context_window > 0 and spec.max_output_tokens > 0
    local = BackboneSpec.from_config(OmegaConf.load(REPO / "conf" / "backbone" / "local.yaml"))
    assert local.is_local and local.local["gguf_name"].endswith(".gguf") and local.api_key_env is None
    assert BackboneSpec.from_config(OmegaConf.load(REPO / "conf" / "backbone" / "deepseek_v32.yaml")).api_key_env == "DEEPSEEK_API_KEY"


def test_backbone_spec_errors_name_the_option():
    good = {"name": "x", "model": "openai/x", "context_window": 100, "max_output_tokens": 10}
    with pytest.raises(ValueError, match="backbone.contxt_window"):
        BackboneSpec.from_config({**good, "contxt_window": 5})
    with pytest.raises(ValueError, match="missing backbone.model"):
        BackboneSpec.from_config({k: v for k, v in good.items() if k != "model"})


def test_cache_safe_across_processes(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from reconmem.platform.testing import ScriptedLLM\n"
        "tag = sys.argv[1]\n"
        "llm = ScriptedLLM(lambda m, p: 'r:' + m[-1]['content'], cache_path=sys.argv[2])\n"
        "for i in range(40):\n"
        "    llm.chat([{'role': 'user', 'content': f'{tag}-{i % 30}'}], purpose='judge')\n"
        "print(len(llm.calls))\n"
    )
    path = tmp_path / "mp.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", code, tag, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=REPO) for tag in ("a", "b", "a")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    # each process makes at most 30 transport calls (10 of its 40 are repeats it cached itself)
    assert all(int(o[0]) <= 30 for o in outs)
    reader = ScriptedLLM([], cache_path=path)
    assert len(reader.cache) == 60
    assert reader.chat([{"role": "user", "content": "b-29"}], purpose="judge").text == "r:b-29"


def test_api_model_token_counting_works_offline(monkeypatch):
    """litellm.token_counter needs no network: bundled tiktoken files (cl100k fallback for non-OpenAI models)."""
    monkeypatch.setenv("RECONMEM_TEST_KEY", "x")
    for model in ("openai/gpt-5-mini", "deepseek/deepseek-chat", "openrouter/qwen/qwen3-235b-a22b-2507"):
        client = LLMClient(BackboneSpec(name="api", model=model, context_window=1000, max_output_tokens=10,
                                        api_key_env="RECONMEM_TEST_KEY"))
        assert client.count_tokens("hello world, how are you") == 6
        assert 10 <= client.count_tokens(MSGS) <= 30


def test_cache_key_names_local_weights(tmp_path):
    """Two GGUF files behind the same model string must not share cache entries."""
    calls = []

    class LocalTransport(FlakyTransport):
        def reply(self, request):
            calls.append(self.spec.local["gguf_path"])
            return Completion(text=self.spec.local["gguf_path"], usage=Usage(1, 1))

    class Local(FlakyClient):
        transport_class = LocalTransport

    def client(path):
        c = Local([], cache_path=tmp_path / "c.sqlite")
        c.spec.local = {"gguf_path": path}
        c.spec.model = "openai/same-name"  # not local/: keeps the real model out of this test
        return c

    assert client("/models/a.gguf").chat(MSGS, purpose="judge").text == "/models/a.gguf"
    assert client("/models/b.gguf").chat(MSGS, purpose="judge").text == "/models/b.gguf"
    assert client("/models/a.gguf").chat(MSGS, purpose="judge").cached
    assert calls == ["/models/a.gguf", "/models/b.gguf"]
