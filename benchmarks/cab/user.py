"""The CAB user agent (purpose ``mock_user``): the simulated issue author and its reply parser.

The user sees the issue, its satisfaction conditions and the conversation; each reply ends with a
satisfaction status that is stripped before the text goes to the maintainer.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from benchmarks.cab.loader import CabIssue, issue_text
from benchmarks.cab.prompts import numbered, render_prompt

if TYPE_CHECKING:
    from reconmem.platform.llm import LLMClient

FULLY_SATISFIED, PARTIALLY_SATISFIED, NOT_SATISFIED = "FULLY_SATISFIED", "PARTIALLY_SATISFIED", "NOT_SATISFIED"

_STATUS_RE = re.compile(
    r"SATISFACTION[\s_]*STATUS\**\s*[:=\-]?\s*\**\s*\[?\s*(FULLY[\s_]+SATISFIED|PARTIALLY[\s_]+SATISFIED|NOT[\s_]+SATISFIED)?",
    re.IGNORECASE)
_BARE_STATUS_RE = re.compile(r"\b(FULLY_SATISFIED|PARTIALLY_SATISFIED|NOT_SATISFIED)\b")


@dataclass
class UserReply:
    """The user agent's message: ``text`` goes to the maintainer; status/reason never do."""

    text: str
    status: str
    reason: str
    raw: str
    status_found: bool = True
    finish_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _canon_status(s: str) -> str:
    return re.sub(r"[\s_]+", "_", s.strip().upper())


def parse_user_reply(raw: str) -> UserReply:
    """Split a user-agent reply into the message and its satisfaction status (stripped).

    The status section starts at the last ``SATISFACTION_STATUS`` header (markdown emphasis and
    a preceding ``---`` rule are tolerated) and runs to the end. Without a header, a bare status
    token on the last non-empty line is accepted. Anything else is ``NOT_SATISFIED`` with
    ``status_found=False`` (the upstream default), and the whole text goes to the maintainer.
    """
    headers = list(_STATUS_RE.finditer(raw))
    if headers:
        h = headers[-1]
        status = _canon_status(h.group(1)) if h.group(1) else NOT_SATISFIED
        section = raw[h.start():]
        reason_m = re.search(r"REASON\**\s*[:=\-]\s*\**\s*(.+)", section, re.IGNORECASE)
        reason = reason_m.group(1).strip() if reason_m else ""
        head = raw[: h.start()].rstrip(" \t\r\n*#_")
        while re.search(r"(^|\n)[ \t]*(-{3,}|\*{3,}|_{3,}|={3,})$", head):  # trailing horizontal rules
            head = re.sub(r"(^|\n)[ \t]*(-{3,}|\*{3,}|_{3,}|={3,})$", "", head).rstrip(" \t\r\n*#_")
        return UserReply(text=head.strip(), status=status, reason=reason, raw=raw, status_found=bool(h.group(1)))
    lines = [ln for ln in raw.strip().splitlines() if ln.strip()]
    if lines:
        m = _BARE_STATUS_RE.search(lines[-1].upper())
        if m:
            return UserReply(text="\n".join(lines[:-1]).strip(), status=m.group(1), reason="", raw=raw)
    return UserReply(text=raw.strip(), status=NOT_SATISFIED, reason="no satisfaction status given", raw=raw,
                     status_found=False)


def format_conversation(conversation: list[dict[str, str]]) -> str:
    """``User: ...`` / ``Maintainer: ...`` blocks, as the user agent sees the exchange."""
    out = []
    for m in conversation:
        who = "User" if m["role"] == "user" else "Maintainer"
        out.append(f"{who}: {m['content']}")
    return "\n\n".join(out)


class UserAgent:
    """Simulated issue author (purpose ``mock_user``). Sees the issue, its conditions and the chat."""

    def __init__(self, llm: "LLMClient", issue: CabIssue, *, max_tokens: int | None = None):
        self.llm = llm
        self.issue = issue
        self.max_tokens = max_tokens
        self.system_prompt = render_prompt("user_system.txt", repo=issue.repo, title=issue.title.strip(),
                                           conditions=numbered(issue.satisfaction_conditions))

    def opening_message(self) -> str:
        """The first user message: the issue as filed (no model call)."""
        return issue_text(self.issue)

    def reply(self, conversation: list[dict[str, str]], *, temperature: float | None = None) -> UserReply:
        """The user's next message (``temperature`` for a retry: a temperature-0 retry replays the cache)."""
        prompt = render_prompt("user_turn.txt", question=self.issue.body.strip() or self.issue.title.strip(),
                               conversation=format_conversation(conversation))
        messages = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": prompt}]
        kw: dict[str, Any] = {} if temperature is None else {"temperature": temperature}
        resp = self.llm.chat(messages, purpose="mock_user", max_tokens=self.max_tokens, **kw)
        reply = parse_user_reply(resp.text)
        reply.finish_reason = resp.finish_reason
        return reply


# --------------------------------------------------------------------------- maintainer
