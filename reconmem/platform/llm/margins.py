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

# family -> reserve (fraction of the prompt). Measured on 109 real prompts (48 LoCoEval conversations,
# 10 CAB maintainer requests with read_file results, 23 memory prompts, 28 source files), error =
# true / client - 1, results/reference/token_counts.json:
COUNT_MARGINS: dict[str, float] = {
    "exact": 0.0,      # local/ (the GGUF's own tokenizer), scripted/ (its own approximation)
    "openai": 0.015,   # o200k_base over OpenAI's chat overhead: mean -1.4 %, max +0.9 % (CAB: tool calls)
    "deepseek": 0.02,  # DeepSeek-V3 tokenizer over its chat template: mean -3.7 %, max +1.1 % (CAB)
    "qwen": 0.16,      # cl100k_base vs the Qwen BPE: mean +3.2 %, max +15.1 %; CAB's numbered read_file lines
                       # (Qwen splits every digit; +13.7 % on a numbered file, +0.6 % on the same text raw)
    "other": 0.18,     # cl100k_base vs a tokenizer not available offline (Gemini, a custom server's model):
                       # not measured; bounded by cl100k's largest undercount vs the three above (+17.1 %)
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
