"""Benchmark scripts that print ratios: ``python -m scripts.bench {llm,index,recall,methods,retrieval} ...``."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "llm": ("scripts.bench_llm", "local backbone tokens/s and response-cache speed-up"),
    "prefill": ("scripts.bench_prefill", "local backbone prompt tokens prefilled per call purpose, with vs without prompt reuse"),
    "index": ("scripts.bench_index", "repository index + embedding seconds by phase (files/s, entities/s, texts/s)"),
    "recall": ("scripts.bench_recall", "ReConMem non-LLM recall/update latency vs memory size"),
    "methods": ("scripts.bench_overhead", "non-model time per turn of every method (zero-latency scripted backbone, 50 turns over Faker); --tokens: prompt and memory tokens"),
    "workers": ("scripts.bench_workers", "run.workers scaling over real HTTP (injected latency per call)"),
    "retrieval": ("scripts.bench_retrieval", "recall@10, MRR and ms/query of the dense / bm25 / hybrid code retrievers on DevEval pairs"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print("usage: python -m scripts.bench {" + ",".join(COMMANDS) + "} [options]")
        for name, (_, what) in COMMANDS.items():
            print(f"  {name:9s} {what}")
        return 2
    module, _ = COMMANDS[argv[0]]
    return int(importlib.import_module(module).main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
