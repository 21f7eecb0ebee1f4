"""How far the LLM client's token counts are off per backbone family, on the harness's real prompts
(``python -m scripts.measure_token_counts``; the reserves are used by :mod:`reconmem.platform.llm.margins`).

The client counts API prompts with litellm's counter (``providers.litellm_count_messages``). For each
backbone family this compares that count with the family's own tokenizer where one is available offline:

* **qwen** (Qwen3-235B on OpenRouter; litellm counts it with tiktoken cl100k_base): the Qwen2.5 BPE
  inside the offline backbone's GGUF, with its ChatML chat template (llama.cpp's ``/apply-template`` and
  ``/tokenize``; Qwen3 uses the same BPE vocabulary and the same ChatML turns);
* **deepseek** (litellm counts with the DeepSeek-V3 tokenizer it bundles): that tokenizer over the
  DeepSeek-V3 chat template (``<｜begin▁of▁sentence｜>``, ``<｜User｜>``, ``<｜Assistant｜>`` markers);
* **openai** (GPT-5 mini; litellm counts with o200k_base, the model's encoding): o200k_base over
  OpenAI's documented chat overhead (3 tokens per message, 3 for the reply), i.e. exact by construction;
* **other** (Gemini and any model litellm counts with cl100k_base): no tokenizer offline; bounded by
  cl100k_base's largest undercount against the three tokenizers above.

Prompts (nothing generated; every text is the harness's or its data's): LoCoEval conversations of the
verified set (response system prompt, every scripted user turn, assistant turns taken from the target
file's source, the task query), CAB maintainer requests (system prompt, the fixture issue, three
``read_file`` results of boltons 23.1.1 modules as the tools print them, clipped as the maintainer
clips them), the memory-management prompts of every method over one conversation turn, and whole
boltons modules. Error of a prompt: ``true / client - 1`` (positive = the client undercounts). The
reserve per family: the largest undercount rounded up to the next half per cent, plus half a per cent.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"qwen": "openrouter/qwen/qwen3-235b-a22b-2507", "deepseek": "deepseek/deepseek-chat",
          "openai": "openai/gpt-5-mini", "other": "gemini/gemini-2.5-flash"}
Messages = list[dict[str, Any]]


def _boltons_root() -> Path:
    from benchmarks.locoeval.repo import snapshot_root

    return snapshot_root({"provider": "pypi", "name": "boltons", "version": "23.1.1"})


def locoeval_prompts(limit: int | None) -> list[tuple[str, Messages]]:
    """Full-history requests over the verified samples (as Full History builds them, untrimmed)."""
    from benchmarks.locoeval.loader import load_samples
    from benchmarks.locoeval.prompts import load as load_prompt
    from benchmarks.locoeval.runner import display_path, task_query

    samples = load_samples(ROOT / "benchmarks" / "locoeval" / "verified" / "samples.jsonl")[:limit]
    system = load_prompt("response_system")
    out = []
    root = _boltons_root()
    for sample in samples:
        req = sample.requirements[0]
        source_root = root if sample.repo_spec.get("name") == "boltons" else None
        src = (source_root / display_path(sample, req)).read_text(encoding="utf-8").splitlines() if source_root else []
        messages: Messages = [{"role": "system", "content": system}]
        for k, step in enumerate(sample.outline):
            if not step.text:
                continue
            messages.append({"role": "user", "content": step.text})
            chunk = "\n".join(src[(k * 40) % max(1, len(src)):][:40]) if src else "Noted."
            messages.append({"role": "assistant", "content": f"Here is the relevant code:\n```python\n{chunk}\n```"})
        messages.append({"role": "user", "content": task_query(sample, req, "Please implement it now.")})
        out.append((f"locoeval:{sample.id}", messages))
    return out


def cab_prompts() -> list[tuple[str, Messages]]:
    """Maintainer requests: system prompt, issue, three read_file results (function-calling shape)."""
    from benchmarks.cab.maintainer import maintainer_system_prompt, response_dispatch
    from benchmarks.cab.loader import load_issues
    from benchmarks.cab.tools import RepoTools

    issue = load_issues(ROOT / "tests" / "cab" / "fixture_issues.jsonl", task_ids=["cab_fixture_1"])[0]
    system = maintainer_system_prompt(issue, function_calling=True, max_tool_steps=8)
    root = _boltons_root()
    tools = response_dispatch(RepoTools(root))
    modules = sorted(p.relative_to(root).as_posix() for p in (root / "boltons").glob("*.py"))
    out = []
    for i in range(0, len(modules) - 2, 3):
        tools.new_response()
        messages: Messages = [{"role": "system", "content": system}, {"role": "user", "content": issue.body}]
        for j, path in enumerate(modules[i:i + 3]):
            text, _ = tools.execute("read_file", {"path": path})
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{j}", "type": "function", "function": {"name": "read_file",
                                                                 "arguments": json.dumps({"path": path})}}]})
            messages.append({"role": "tool", "tool_call_id": f"c{j}", "name": "read_file", "content": text})
        out.append((f"cab:{'+'.join(Path(m).stem for m in modules[i:i + 3])}", messages))
    return out


def memory_prompts() -> list[tuple[str, Messages]]:
    """Every method's memory-management prompt template over one real conversation turn."""
    from benchmarks.locoeval.loader import load_samples

    sample = load_samples(ROOT / "benchmarks" / "locoeval" / "verified" / "samples.jsonl")[0]
    turn = "\n".join(f"User: {s.text}" for s in sample.outline if s.text)[:6000]
    out = []
    for folder in (ROOT / "reconmem" / "memory" / "prompts", ROOT / "baselines" / "prompts"):
        for path in sorted(folder.glob("*.txt")):
            out.append((f"memory:{path.stem}", [{"role": "user", "content": path.read_text(encoding="utf-8") + "\n\n" + turn}]))
    return out


def source_prompts() -> list[tuple[str, Messages]]:
    """Whole boltons modules (code-heavy prompts)."""
    root = _boltons_root()
    return [(f"source:{p.stem}", [{"role": "user", "content": p.read_text(encoding="utf-8")}])
            for p in sorted((root / "boltons").glob("*.py")) if p.stat().st_size > 2000]


def _text(m: dict[str, Any]) -> str:
    text = str(m.get("content") or "")
    if m.get("tool_calls"):
        text += json.dumps(m["tool_calls"])
    return text


class Truth:
    """The families' own tokenizers (offline)."""

    def __init__(self) -> None:
        from omegaconf import OmegaConf

        from reconmem.platform.llm.providers import import_litellm

        litellm = import_litellm()
        litellm.token_counter(model="openai/gpt-5-mini", text="x")  # points tiktoken at litellm's bundled encodings
        import tiktoken

        from reconmem.platform.local_model.server import get_model

        self.qwen = get_model(OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "backbone" / "local.yaml").local))
        self.o200k = tiktoken.get_encoding("o200k_base")
        self.cl100k = tiktoken.get_encoding("cl100k_base")
        from tokenizers import Tokenizer

        path = Path(litellm.__file__).parent / "litellm_core_utils" / "tokenizers" / "deepseek_tokenizer.json"
        self.deepseek = Tokenizer.from_file(str(path))

    def count(self, family: str, messages: Messages) -> int:
        if family == "qwen":
            return self.qwen.count_messages([{"role": m["role"], "content": _text(m)} for m in messages])
        if family == "openai":
            return sum(3 + len(self.o200k.encode(_text(m), disallowed_special=())) for m in messages) + 3
        if family == "deepseek":  # DeepSeek-V3's chat template
            parts = ["<｜begin▁of▁sentence｜>"]
            for m in messages:
                role, text = m["role"], _text(m)
                if role == "system":
                    parts.append(text)
                elif role in ("user", "tool"):
                    parts.append(("<｜User｜>" if role == "user" else "<｜tool▁output▁begin｜>") + text
                                 + ("" if role == "user" else "<｜tool▁output▁end｜>"))
                else:
                    parts.append("<｜Assistant｜>" + text + "<｜end▁of▁sentence｜>")
            parts.append("<｜Assistant｜>")
            return len(self.deepseek.encode("".join(parts), add_special_tokens=False).ids)
        raise KeyError(family)

    def cl100k_messages(self, messages: Messages) -> int:
        return sum(3 + len(self.cl100k.encode(_text(m), disallowed_special=())) for m in messages) + 3


def client_count(model: str, messages: Messages) -> int:
    """The count the LLM client uses for ``model`` (litellm's counter, as reconmem.platform.llm.LiteLLMTransport.count_messages)."""
    from reconmem.platform.llm import providers

    return providers.litellm_count_messages(model, messages)


def reserve(max_error: float) -> float:
    """The largest undercount rounded up to the next half per cent, plus half a per cent (never < 0.5 %)."""
    return round(math.ceil(max(0.0, max_error) * 200 - 1e-9) / 200 + 0.005, 4)


def summarise(errors: list[float]) -> dict[str, Any]:
    return {"n": len(errors), "mean": round(statistics.fmean(errors), 4), "median": round(statistics.median(errors), 4),
            "min": round(min(errors), 4), "max": round(max(errors), 4)}


def measure(limit: int | None = None) -> dict[str, Any]:
    """Every prompt counted by the client and by each family's tokenizer; per-family error summaries
    and reserves (``limit``: LoCoEval samples to use, default all)."""
    prompts = locoeval_prompts(limit) + cab_prompts() + memory_prompts() + source_prompts()
    truth = Truth()
    rows: list[dict[str, Any]] = []
    for name, messages in prompts:
        row: dict[str, Any] = {"prompt": name, "kind": name.split(":")[0]}
        for family in ("qwen", "deepseek", "openai"):
            ours, true = client_count(MODELS[family], messages), truth.count(family, messages)
            row[family] = {"client": ours, "true": true, "error": round(true / ours - 1, 5)}
        cl = truth.cl100k_messages(messages)
        row["cl100k_vs"] = {f: round(row[f]["true"] / cl - 1, 5) for f in ("qwen", "deepseek", "openai")}
        rows.append(row)

    families: dict[str, Any] = {}
    for family in ("qwen", "deepseek", "openai"):
        errors = [r[family]["error"] for r in rows]
        by_kind = {k: summarise([r[family]["error"] for r in rows if r["kind"] == k]) for k in sorted({r["kind"] for r in rows})}
        families[family] = {"model": MODELS[family], **summarise(errors), "by_kind": by_kind, "reserve": reserve(max(errors))}
    bound = max(max(r["cl100k_vs"].values()) for r in rows)
    families["other"] = {"model": MODELS["other"], "measured": False,
                         "cl100k_max_undercount_vs_known_tokenizers": round(bound, 4), "reserve": reserve(bound)}
    return {"prompts": len(rows), "kinds": {k: sum(1 for r in rows if r["kind"] == k) for k in sorted({r["kind"] for r in rows})},
            "families": families, "rows": rows}


def report_lines(report: dict[str, Any]) -> list[str]:
    """The printed table of :func:`measure`'s report."""
    families = report["families"]
    bound = max(max(r["cl100k_vs"].values()) for r in report["rows"])
    lines = [f"{report['prompts']} prompts ({', '.join(f'{k} {n}' for k, n in report['kinds'].items())}); "
             "error = true/client - 1",
             f"{'family':10} {'client counter':28} {'mean':>8} {'median':>8} {'min':>8} {'max':>8} {'reserve':>8}"]
    counters = {"qwen": "cl100k_base", "deepseek": "DeepSeek-V3 (bundled)", "openai": "o200k_base"}
    for family in ("qwen", "deepseek", "openai"):
        f = families[family]
        lines.append(f"{family:10} {counters[family]:28} {f['mean']:8.2%} {f['median']:8.2%} {f['min']:8.2%} "
                     f"{f['max']:8.2%} {f['reserve']:8.2%}")
    lines.append(f"{'other':10} {'cl100k_base':28} {'(no tokenizer offline; cl100k max undercount vs the three: ' + format(bound, '.2%') + ')':>44}"
                 f" {families['other']['reserve']:8.2%}")
    return lines
