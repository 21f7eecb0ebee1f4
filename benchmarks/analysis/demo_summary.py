"""What ``make demo`` prints after its runs: Pass@1, CR and tokens per method from the run
summaries, and each run's time split (sample wall seconds vs the uncached model calls)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from benchmarks.locoeval.metrics import compression_ratio_between
from benchmarks.records import RunDir
from reconmem.platform.llm.purposes import MEMORY_PURPOSES


def _fmt(v: object, pct: bool = False) -> str:
    if v is None:
        return "n/a"
    if pct:
        return f"{100 * float(v):.1f}%"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def summary_lines(summaries: Mapping[str, Mapping[str, Any]], methods: Sequence[str], *,
                  full: str = "full") -> list[str]:
    """One row per method of ``summaries`` (run summaries by method; CR against the ``full`` run),
    each followed by its samples' errors."""
    full_dir = summaries[full]["run_dir"]
    lines = [f"{'method':<10} {'Pass@1':>8} {'single':>8} {'multi':>8} {'tasks':>6} {'CR':>6} {'in tok/conv':>12} "
             f"{'out tok/conv':>13} {'memory tok/conv':>16}"]
    for method in methods:
        s = summaries[method]
        cr = 1.0 if method == full else compression_ratio_between(s["run_dir"], full_dir)
        p = s.get("pass_at_1") or {}
        tok = s.get("tokens_per_conversation") or {}
        stages = tok.get("stages") or {}
        mem = sum(stages.get(purpose) or 0 for purpose in MEMORY_PURPOSES)
        lines.append(f"{method:<10} {_fmt(p.get('overall'), True):>8} {_fmt(p.get('single-hop'), True):>8} "
                     f"{_fmt(p.get('multi-hop'), True):>8} {s.get('n_passed', 0)}/{s.get('n_tasks', 0):<4} {_fmt(cr):>6} "
                     f"{_fmt(tok.get('input')):>12} {_fmt(tok.get('output')):>13} {_fmt(mem):>16}")
        lines += [f"  error in {e['sample_id']}: {e['error']}" for e in s.get("errors") or []]
    return lines


def time_split(method: str, run_dir: str) -> str:
    """One line: the samples' wall seconds and how much of it the uncached model calls took, by purpose."""
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
