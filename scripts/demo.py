"""``make demo``: ReConMem and Full History on the quick demo samples with the offline model.

Runs both methods through the same entry point as ``python -m scripts.run experiment=demo_quick``
(two samples, 4 DevEval tasks, 8 scripted turns each; records under
``results/demo_quick/<backbone>/<method>/demo``; a second invocation resumes from the records and
the LLM cache), then prints Pass@1, CR and tokens per method, the time split and the machine's load.
``--full`` (``make demo-full``) runs ``experiment=demo`` instead: all three demo samples, 12 turns
each. Other arguments are Hydra overrides, e.g. ``python -m scripts.demo backbone=local_1_5b``.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

METHODS = ("full", "reconmem")  # Full first: ReConMem's CR needs the Full run's input tokens
EXPERIMENTS = {False: "demo_quick", True: "demo"}  # --full: all three samples, 12 turns each


def _fmt(v: object, pct: bool = False) -> str:
    if v is None:
        return "n/a"
    if pct:
        return f"{100 * float(v):.1f}%"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _time_split(method: str, run_dir: str) -> str:
    """One line: the samples' wall seconds and how much of it the uncached model calls took, by purpose."""
    from benchmarks.records import RunDir

    wall, by_purpose, prompt, prefilled, calls = 0.0, {}, 0, 0, 0
    for sample_dir in RunDir(run_dir).sample_dirs():
        result = sample_dir.result()
        if result is None:
            continue
        wall += float(result.get("wall_seconds") or 0.0)
        for event in sample_dir.ledger():
            if event.get("attempt") == result.get("attempt") and not event.get("cached"):
                purpose = str(event.get("purpose"))
                by_purpose[purpose] = by_purpose.get(purpose, 0.0) + float(event.get("seconds") or 0.0)
                if "prefilled_tokens" in event:  # llama.cpp reported what it evaluated
                    calls += 1
                    prompt += int(event.get("input_tokens") or 0)
                    prefilled += int(event.get("prefilled_tokens") or 0)
    llm = sum(by_purpose.values())
    parts = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(by_purpose.items(), key=lambda kv: -kv[1]))
    share = f"{100 * llm / wall:.0f}%" if wall else "n/a"
    line = (f"time {method}: samples {wall:.0f} s, of which model calls {llm:.0f} s ({share}: {parts or 'all cached'}); "
            f"the rest is retrieval, memory, embedding, tests")
    if calls:
        line += (f"; llama.cpp prefilled {prefilled:,} of {prompt:,} prompt tokens ({100 * prefilled / max(prompt, 1):.0f}%, "
                 f"{prefilled / calls:.0f} per call), the rest restored from its prompt cache")
    return line


def main(argv: list[str] | None = None) -> int:
    from hydra import compose, initialize_config_dir

    from benchmarks.harness import ConfigError
    from benchmarks.locoeval import metrics
    from scripts.run import CONFIG_DIR, precheck, run

    overrides = list(sys.argv[1:] if argv is None else argv)
    experiment = EXPERIMENTS["--full" in overrides]
    overrides = [o for o in overrides if o != "--full"]
    base = [f"experiment={experiment}", *overrides]  # conf/experiment/: demo samples, local model, budgets
    problem = precheck(base)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    summaries: dict[str, dict] = {}
    t0 = time.perf_counter()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        for method in METHODS:
            cfg = compose("config", overrides=[*base, f"method={method}"])
            print(f"demo: running {method} on {cfg.benchmark.name} with backbone={cfg.backbone.name}", flush=True)
            try:
                summaries[method] = run(cfg)
            except ConfigError as exc:  # config / data problem: one line, as scripts.run
                print(f"error: {exc}", file=sys.stderr)
                return 2
    wall = time.perf_counter() - t0
    full_dir = summaries["full"]["run_dir"]
    print()
    print(f"{'method':<10} {'Pass@1':>8} {'single':>8} {'multi':>8} {'tasks':>6} {'CR':>6} {'in tok/conv':>12} {'out tok/conv':>13} {'memory tok/conv':>16}")
    for method in METHODS:
        s = summaries[method]
        cr = 1.0 if method == "full" else metrics.compression_ratio_between(s["run_dir"], full_dir)
        p = s.get("pass_at_1") or {}
        tok = s.get("tokens_per_conversation") or {}
        stages = tok.get("stages") or {}
        mem = (stages.get("memory_sketching") or 0) + (stages.get("memory_update") or 0)
        print(f"{method:<10} {_fmt(p.get('overall'), True):>8} {_fmt(p.get('single-hop'), True):>8} "
              f"{_fmt(p.get('multi-hop'), True):>8} {s.get('n_passed', 0)}/{s.get('n_tasks', 0):<4} {_fmt(cr):>6} "
              f"{_fmt(tok.get('input')):>12} {_fmt(tok.get('output')):>13} {_fmt(mem):>16}")
        if s.get("errors"):
            for e in s["errors"]:
                print(f"  error in {e['sample_id']}: {e['error']}")
    print()
    for method in METHODS:
        print(_time_split(method, summaries[method]["run_dir"]))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\ndemo: wall time {wall:.0f} s ({experiment}; load average {load} on {os.cpu_count()} cores); records in {os.path.dirname(os.path.dirname(full_dir))}/<method>/demo")
    return 0 if all(not s.get("errors") for s in summaries.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
