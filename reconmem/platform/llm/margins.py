"""Token-count reserves per backbone family: how far the client's counter may undercount a prompt.

The client counts API prompts with litellm's counter (:func:`reconmem.platform.llm.providers.litellm_count_messages`):
OpenAI models with o200k_base (their own encoding), DeepSeek with the DeepSeek-V3 tokenizer litellm
bundles (its own), everything else -- Qwen3 on OpenRouter, Gemini -- with tiktoken cl100k_base, a
stand-in for a tokenizer it does not have. Every prompt budget (:func:`reconmem.platform.fit.window_budget`)
is divided by ``1 + margin``, so a prompt that fits by our count fits by the provider's too.

The margins are the largest undercount measured on the harness's real prompts, rounded up to the
next half per cent plus half a per cent (``python -m scripts.measure_token_counts``; numbers and
method in docs/api-runs.md "Token counts"). Local and scripted backbones count with their own
tokenizer: no margin. ``backbone.count_margin`` overrides the family's value.
"""

from __future__ import annotations

# family -> reserve (fraction of the prompt); see the module docstring and docs/api-runs.md
COUNT_MARGINS: dict[str, float] = {
    "exact": 0.0,      # local/ (the GGUF's own tokenizer), scripted/ (its own approximation)
    "openai": 0.01,    # o200k_base = the models' encoding; the margin covers the chat-template overhead
    "deepseek": 0.01,  # litellm's bundled DeepSeek-V3 tokenizer = the model's; chat-template overhead
    "qwen": 0.045,     # cl100k_base vs the Qwen2.5/Qwen3 BPE (the offline GGUF's tokenizer): measured
    "other": 0.045,    # cl100k_base vs a tokenizer not available offline (Gemini, ...): the Qwen bound
}


def family(model: str, api_base: str | None = None) -> str:
    """The counting family of a litellm model string (see :data:`COUNT_MARGINS`); an ``openai/`` model
    on a custom server (``api_base``) is whatever that server serves: ``other``."""
    m = model.lower()
    if m.startswith(("local/", "scripted/")):
        return "exact"
    if "qwen" in m:
        return "qwen"
    if "deepseek" in m:
        return "deepseek"
    if api_base and m.startswith("openai/"):
        return "other"
    if m.startswith(("openai/", "azure/")) or m.split("/")[-1].startswith(("gpt-", "o1", "o3", "o4")):
        return "openai"
    return "other"


def default_count_margin(model: str, api_base: str | None = None) -> float:
    """The measured reserve of ``model``'s family."""
    return COUNT_MARGINS[family(model, api_base)]
