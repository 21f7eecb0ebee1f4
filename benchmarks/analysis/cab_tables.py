"""CodeAssistBench tables: Table 2 (correctness, verbosity, turns) and Table 5 (tokens per issue and
per turn, Eq. 12–13) — pure functions over ``RunSet.samples_frame("cab")``.

Evaluated issues are those with ``status == "ok"`` (the judge returned a verdict). Issues that could
not be initialised (``init_failed``), whose judge failed (``judge_error``), that needed Docker where
none was available (``docker_unavailable``) or that crashed (``error``) are excluded and counted in
the "Excluded issues" row, never scored as incorrect. Percentages are over evaluated issues.

Maintainer tokens = response purposes (``turn_generation``, ``maintainer_tool_step``, ...); Memory
tokens = every other counted purpose (see ``benchmarks.analysis.tokens``); user-agent and judge calls
are excluded. Tok./Turn is macro-averaged over issues: T_i / r_i, then the mean (Eq. 13).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from benchmarks.analysis import labels
from benchmarks.analysis.render import MISSING, Block, Table, fmt_int, fmt_num, is_missing

NAN = float("nan")
VERDICTS = {"CORRECT": "correct", "PARTIALLY CORRECT": "partially_correct", "INCORRECT": "incorrect",
            "NOT CORRECT": "incorrect"}
VERBOSITY = {"APPROPRIATE": "appropriate", "VERBOSE": "verbose", "CONCISE": "terse", "TERSE": "terse"}


def _norm(value: Any, mapping: dict[str, str], field: str, sample: str) -> str:
    key = " ".join(str(value or "").upper().replace("_", " ").replace("-", " ").split())
    if key not in mapping:
        raise ValueError(f"CAB record {sample}: unknown {field} {value!r} (expected one of {sorted(mapping)})")
    return mapping[key]


def issue_metrics(issues: pd.DataFrame) -> pd.DataFrame:
    """Per-issue metric columns for ok issues: verdict / verbosity categories, turns and tokens."""
    ok = issues[issues["status"] == "ok"].copy() if not issues.empty else issues.copy()
    if ok.empty:
        return ok
    ok["verdict_cat"] = [_norm(v, VERDICTS, "verdict", s) for v, s in zip(ok["verdict"], ok["sample_id"])]
    ok["verbosity_cat"] = [_norm(v, VERBOSITY, "verbosity", s) for v, s in zip(ok["verbosity"], ok["sample_id"])]
    ok["maintainer_tokens"] = ok.get("response_tokens", 0)
    ok["memory_tokens"] = ok.get("memory_tokens", 0)
    ok["combined_tokens"] = ok["maintainer_tokens"] + ok["memory_tokens"]
    return ok


def _methods(issues: pd.DataFrame, methods: Sequence[str] | None) -> list[str]:
    present = set(issues["method"]) if not issues.empty else set()
    return labels.order_methods(set(methods or ()) | present)


def table2(issues: pd.DataFrame, *, methods: Sequence[str] | None = labels.CAB_METHODS) -> Table:
    """Correct / Partially Correct / Appropriate / Verbose / Terse (%) and Avg. Turns per method."""
    per_issue = issue_metrics(issues)
    rows, blocks = [], []
    for bb in labels.order_backbones(set(issues["backbone"]) if not issues.empty else set()):
        ms = _methods(issues[issues["backbone"] == bb], methods)
        columns = [("Metric",)] + [(labels.method_label(m),) for m in ms]
        metrics: dict[str, dict[str, float]] = {}
        for m in ms:
            sel = per_issue[(per_issue["backbone"] == bb) & (per_issue["method"] == m)] if not per_issue.empty else per_issue
            allsel = issues[(issues["backbone"] == bb) & (issues["method"] == m)]
            n = len(sel)
            pct = (lambda col, cat: 100.0 * float((sel[col] == cat).mean()) if n else NAN)
            metrics[m] = {
                "correct_pct": pct("verdict_cat", "correct"),
                "partially_correct_pct": pct("verdict_cat", "partially_correct"),
                "appropriate_pct": pct("verbosity_cat", "appropriate"),
                "verbose_pct": pct("verbosity_cat", "verbose"),
                "terse_pct": pct("verbosity_cat", "terse"),
                "avg_turns": float(sel["n_turns"].mean()) if n else NAN,
                "n_evaluated": n,
                "n_excluded": int(len(allsel) - n),
            }
            rows.append({"backbone": bb, "method": m, **metrics[m]})
        spec = [("Correct (%)", "correct_pct", 2), ("Partially Correct (%)", "partially_correct_pct", 2),
                ("Appropriate (%)", "appropriate_pct", 2), ("Verbose (%)", "verbose_pct", 2),
                ("Terse (%)", "terse_pct", 2), ("Avg. Turns", "avg_turns", 2)]
        display = [[name] + [fmt_num(metrics[m][key], d) for m in ms] for name, key, d in spec]
        display.append(["Evaluated issues"] + [str(metrics[m]["n_evaluated"]) if metrics[m]["n_evaluated"] or
                                              metrics[m]["n_excluded"] else MISSING for m in ms])
        display.append(["Excluded issues"] + [str(metrics[m]["n_excluded"]) if metrics[m]["n_evaluated"] or
                                             metrics[m]["n_excluded"] else MISSING for m in ms])
        blocks.append(Block(columns=columns, rows=display, heading=labels.backbone_label(bb)))
    data = pd.DataFrame(rows, columns=["backbone", "method", "correct_pct", "partially_correct_pct", "appropriate_pct",
                                       "verbose_pct", "terse_pct", "avg_turns", "n_evaluated", "n_excluded"])
    notes = ["Percentages over evaluated issues (status ok); Terse = the judge's CONCISE. Excluded: init_failed, "
             "judge_error, docker_unavailable and errored issues (not scored)."]
    return Table("table2", "Table 2. Performance on CodeAssistBench", data, blocks, notes)


def table5(issues: pd.DataFrame, *, methods: Sequence[str] | None = labels.CAB_METHODS) -> Table:
    """Maintainer / Memory / Combined tokens per issue (mean) and per turn (macro over issues)."""
    per_issue = issue_metrics(issues)
    rows, blocks = [], []
    kinds = (("Maintainer", "maintainer_tokens"), ("Memory", "memory_tokens"), ("Combined", "combined_tokens"))
    for bb in labels.order_backbones(set(issues["backbone"]) if not issues.empty else set()):
        ms = _methods(issues[issues["backbone"] == bb], methods)
        columns = [("Metric",)] + [(labels.method_label(m),) for m in ms]
        values: dict[tuple[str, str], float] = {}
        for m in ms:
            sel = per_issue[(per_issue["backbone"] == bb) & (per_issue["method"] == m)] if not per_issue.empty else per_issue
            turns = sel["n_turns"].astype(float).to_numpy() if len(sel) else np.array([])
            for name, col in kinds:
                tok = sel[col].astype(float).to_numpy() if len(sel) else np.array([])
                per_issue_mean = float(tok.mean()) if len(tok) else NAN
                valid = turns > 0
                per_turn = float(np.mean(tok[valid] / turns[valid])) if valid.any() else NAN
                values[(m, f"{name} Tok./Issue")] = per_issue_mean
                values[(m, f"{name} Tok./Turn")] = per_turn
                rows.append({"backbone": bb, "method": m, "kind": name.lower(), "tokens_per_issue": per_issue_mean,
                             "tokens_per_turn": per_turn, "n_evaluated": int(len(sel))})
        display = []
        for unit in ("Tok./Issue", "Tok./Turn"):
            for name, _ in kinds:
                metric = f"{name} {unit}"
                display.append([metric] + [fmt_int(values[(m, metric)]) for m in ms])
        blocks.append(Block(columns=columns, rows=display, heading=labels.backbone_label(bb)))
    data = pd.DataFrame(rows, columns=["backbone", "method", "kind", "tokens_per_issue", "tokens_per_turn",
                                       "n_evaluated"])
    notes = ["Input + output tokens over evaluated issues; Tok./Turn = mean over issues of tokens / turns (Eq. 13).",
             "Maintainer = response-generation purposes; Memory = all other counted purposes; user agent and judge "
             "excluded."]
    if data.empty or all(is_missing(v) for v in data["tokens_per_issue"]):
        notes.append("No evaluated issues.")
    return Table("table5", "Table 5. Token consumption on CodeAssistBench", data, blocks, notes)
