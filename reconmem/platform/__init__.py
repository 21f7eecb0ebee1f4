"""The platform every method and benchmark stands on: LLM client, local model, embedder, code index,
context types, JSON repair, prompt templates, downloads. It imports nothing from ``reconmem.memory``,
``baselines``, ``benchmarks`` or ``scripts``."""
