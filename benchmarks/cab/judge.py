"""The CAB judge (purpose ``judge``): the final answer against the issue, its reference thread and
its satisfaction conditions, in CAB's output format; one retry on a malformed reply, a failed Docker
check makes the verdict INCORRECT."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from benchmarks.cab.loader import CabIssue
from benchmarks.cab.prompts import numbered, render_prompt

if TYPE_CHECKING:
    from reconmem.platform.llm import LLMClient

CORRECT, PARTIALLY_CORRECT, INCORRECT = "CORRECT", "PARTIALLY CORRECT", "INCORRECT"
CONCISE, APPROPRIATE, VERBOSE = "CONCISE", "APPROPRIATE", "VERBOSE"

_LABEL_RE = re.compile(r"PARTIALLY[\s_\-]+CORRECT|INCORRECT|NOT[\s_]+CORRECT|CORRECT", re.IGNORECASE)
_VERBOSITY_RE = re.compile(r"CONCISE|APPROPRIATE|VERBOSE|TERSE", re.IGNORECASE)


class JudgeParseError(ValueError):
    """The judge's output lacks a field or gives an ambiguous value."""


class JudgeError(RuntimeError):
    """The judgment stayed malformed after one retry; carries the raw outputs."""

    def __init__(self, message: str, raw_outputs: list[str]):
        super().__init__(message)
        self.raw_outputs = raw_outputs


@dataclass
class Judgment:
    verdict: str
    technical_correctness: str
    alignment_met: int
    alignment_total: int
    conditions: list[dict[str, Any]]
    verbosity: str  # CONCISE (the paper's "Terse") | APPROPRIATE | VERBOSE
    key_issues: str = ""
    reasoning: str = ""
    raw: str = ""
    attempts: int = 1
    warnings: list[str] = field(default_factory=list)
    docker: dict[str, Any] | None = None
    verdict_before_docker: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _clean_judge_text(text: str) -> str:
    text = text.replace("**", "").replace("__", "").replace("`", "")
    return re.sub(r"^[ \t]*(?:#+|[-*>]|\d+\.)[ \t]*", "", text, flags=re.MULTILINE)


def _field_value(text: str, name: str) -> str | None:
    """Value after ``NAME:`` (same line, or the next non-empty line when the line is empty)."""
    pattern = r"^[ \t]*(?:FINAL[ \t]+)?" + r"[ \t]+".join(map(re.escape, name.split())) + r"[ \t]*(?:\([^)\n]*\))?[ \t]*[:\-][ \t]*(.*)$"
    m = re.search(pattern, text, re.IGNORECASE | re.MULTILINE)
    if not m:
        return None
    value = m.group(1).strip()
    if not value:
        rest = text[m.end():].lstrip("\n")
        value = rest.splitlines()[0].strip() if rest.strip() else ""
    return value


def _one_label(value: str | None, regex: re.Pattern, field_name: str) -> str:
    if value is None:
        raise JudgeParseError(f"missing {field_name}")
    v = value.strip().strip("[]()*'\"").strip()
    m = regex.match(v)
    if not m:
        raise JudgeParseError(f"{field_name} has no recognised value ({value[:60]!r})")
    rest = v[m.end():]
    if re.match(r"\s*[/|]\s*\w", rest) or re.match(r"\s+OR\s+", rest, re.IGNORECASE):
        raise JudgeParseError(f"{field_name} lists several values ({value[:60]!r})")
    label = re.sub(r"[\s_\-]+", " ", m.group(0).upper())
    return {"NOT CORRECT": INCORRECT, "TERSE": CONCISE}.get(label, label)


def _section(text: str, name: str, following: tuple[str, ...]) -> str:
    m = re.search(r"^[ \t]*" + re.escape(name) + r"[ \t]*:[ \t]*", text, re.IGNORECASE | re.MULTILINE)
    if not m:
        return ""
    rest = text[m.end():]
    ends = [mm.start() for f in following for mm in [re.search(r"^[ \t]*" + re.escape(f) + r"[ \t]*:", rest, re.IGNORECASE | re.MULTILINE)] if mm]
    return rest[: min(ends)].strip() if ends else rest.strip()


def parse_judgment(text: str, n_conditions: int) -> Judgment:
    """Parse the judge's reply (CAB format); raises :class:`JudgeParseError` when malformed.

    Required: TECHNICAL CORRECTNESS, VERDICT, VERBOSITY ASSESSMENT (one value each) and the
    alignment (``X/Y`` on the ALIGNMENT SCORE line, or derivable from exactly one TRUE/FALSE
    CONDITION line per satisfaction condition). Nothing is ever defaulted.
    """
    clean = _clean_judge_text(text)
    problems: list[str] = []
    warnings: list[str] = []
    values: dict[str, str] = {}
    for key, regex, name in (("technical", _LABEL_RE, "TECHNICAL CORRECTNESS"), ("verdict", _LABEL_RE, "VERDICT"),
                             ("verbosity", _VERBOSITY_RE, "VERBOSITY ASSESSMENT")):
        try:
            values[key] = _one_label(_field_value(clean, name) if name != "VERBOSITY ASSESSMENT"
                                     else (_field_value(clean, name) or _field_value(clean, "VERBOSITY")), regex, name)
        except JudgeParseError as exc:
            problems.append(str(exc))

    conditions: list[dict[str, Any]] = []
    seen: set[int] = set()
    for m in re.finditer(r"^[ \t]*CONDITION[ \t]*(\d+)[ \t]*[:\-.][ \t]*\[?[ \t]*(TRUE|FALSE)[ \t]*\]?[ \t:\-]*(.*)$", clean,
                         re.IGNORECASE | re.MULTILINE):
        num = int(m.group(1))
        if num in seen:
            continue
        seen.add(num)
        conditions.append({"number": num, "satisfied": m.group(2).upper() == "TRUE", "description": m.group(3).strip()})

    met = total = None
    align = _field_value(clean, "ALIGNMENT SCORE") or _field_value(clean, "ALIGNMENT")
    am = re.search(r"(\d+)\s*/\s*(\d+)", align or "") or re.search(r"(\d+)\s*/\s*(\d+)\s+CONDITIONS?\s+MET", clean, re.IGNORECASE)
    if am:
        met, total = int(am.group(1)), int(am.group(2))
        if total <= 0 or met > total:
            problems.append(f"alignment {met}/{total} is impossible")
    elif conditions and sorted(seen) == list(range(1, n_conditions + 1)):
        met, total = sum(c["satisfied"] for c in conditions), n_conditions
        warnings.append("alignment derived from the CONDITION lines")
    else:
        problems.append("missing ALIGNMENT SCORE (X/Y)")
    if total is not None and total != n_conditions:
        warnings.append(f"alignment total {total} != {n_conditions} satisfaction conditions")
    if conditions and met is not None and sum(c["satisfied"] for c in conditions) != met:
        warnings.append("alignment count differs from the TRUE condition lines")
    if problems:
        raise JudgeParseError("; ".join(problems))
    return Judgment(
        verdict=values["verdict"], technical_correctness=values["technical"], alignment_met=int(met),
        alignment_total=int(total), conditions=conditions, verbosity=values["verbosity"],
        key_issues=_section(clean, "KEY ISSUES", ("REASONING", "VERDICT")),
        reasoning=_section(clean, "REASONING", ("KEY ISSUES",)), raw=text, warnings=warnings)


def format_reference(issue: CabIssue) -> str:
    if not issue.comments:
        return "(no comments)"
    return "\n\n".join(f"[{c.user}]:\n{c.body}" for c in issue.comments)


class JudgeAgent:
    """Judges the final maintainer answer (purpose ``judge``); one retry on a malformed reply."""

    def __init__(self, llm: "LLMClient", *, max_tokens: int | None = None):
        self.llm = llm
        self.max_tokens = max_tokens

    def messages(self, issue: CabIssue, answer: str, docker: dict[str, Any] | None = None) -> list[dict[str, str]]:
        docker_rules = docker_verdict = docker_block = ""
        if docker is not None:
            docker_rules = ("\nThis issue has a Docker environment. An answer can only be CORRECT if it is technically sound AND the "
                            "Docker build and test succeeded; if the Docker validation shows Success: False, it is INCORRECT.\n")
            docker_verdict = ", or the Docker validation failed"
            docker_block = (f"\nMAINTAINER ANSWER VALIDATION RESULTS VIA DOCKER\nSuccess: {bool(docker.get('success'))}\n"
                            f"Logs:\n{str(docker.get('logs', ''))[-4000:]}\n")
        system = render_prompt("judge_system.txt", docker_rules=docker_rules, docker_verdict=docker_verdict)
        user = render_prompt("judge_user.txt", title=issue.title.strip(), body=issue.body.strip() or "(empty)",
                             reference=format_reference(issue), conditions=numbered(issue.satisfaction_conditions),
                             answer=answer.strip() or "(empty answer)", docker=docker_block)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def judge(self, issue: CabIssue, answer: str, docker: dict[str, Any] | None = None) -> Judgment:
        messages = self.messages(issue, answer, docker)
        raws: list[str] = []
        problem = ""
        for attempt in (1, 2):
            resp = self.llm.chat(messages, purpose="judge", max_tokens=self.max_tokens)
            raws.append(resp.text)
            try:
                judgment = parse_judgment(resp.text, len(issue.satisfaction_conditions))
            except JudgeParseError as exc:
                problem = str(exc)
                messages = messages + [{"role": "assistant", "content": resp.text},
                                       {"role": "user", "content": render_prompt("judge_retry.txt", problem=problem)}]
                continue
            judgment.attempts = attempt
            if docker is not None:
                judgment.docker = {"success": bool(docker.get("success"))}
                if not docker.get("success") and judgment.verdict != INCORRECT:
                    judgment.verdict_before_docker = judgment.verdict
                    judgment.verdict = INCORRECT  # a failed build makes the verdict INCORRECT (CAB rule)
            return judgment
        raise JudgeError(f"malformed judgment after retry: {problem}", raws)
