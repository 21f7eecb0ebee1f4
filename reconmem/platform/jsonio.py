"""Lenient JSON parsing for model output.

Small models (and large ones outside JSON mode) wrap JSON in code fences or prose, leave trailing
commas, use Python-style single quotes and literals, or stop mid-object when they hit ``max_tokens``.
:func:`parse_json_lenient` undoes those in order and raises :class:`JSONRepairError` when nothing
yields valid JSON. Truncated output is closed where it stopped (an open string is closed as is; a
member cut before its value is dropped); no content is invented.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_CLOSERS = {"{": "}", "[": "]"}
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_MAX_CUT_ATTEMPTS = 400


class JSONRepairError(ValueError):
    """The text holds no JSON value that survives repair."""


def parse_json_lenient(text: str) -> Any:
    """Parse ``text`` as JSON, repairing common model mistakes; raise :class:`JSONRepairError`."""
    if not isinstance(text, str):
        raise JSONRepairError(f"expected a string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise JSONRepairError("empty output")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    for candidate in _candidates(stripped):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
        repaired = repair_json(candidate)
        if repaired is not None:
            return json.loads(repaired)
    raise JSONRepairError(f"no valid JSON found in output starting {stripped[:80]!r}")


def repair_json(text: str) -> str | None:
    """Return a valid JSON string derived from ``text`` (one value starting at its first bracket), or None.

    Fixes single-quoted strings, Python literals (True/False/None), trailing commas, unescaped
    newlines inside strings, and truncation (closes open strings and brackets, dropping an
    incomplete last member).
    """
    start = _first_bracket(text)
    if start is None:
        return None
    normalised = _normalise(text[start:])
    end = _balanced_end(normalised)
    if end is not None:  # complete value: only trailing commas may be fixed
        candidate = _strip_trailing_commas(normalised[:end])
        return candidate if _is_valid(candidate) else None
    # Truncated: close what is open, cutting back to member boundaries.
    cuts = _cut_points(normalised)
    attempts = [len(normalised)] + sorted(cuts, reverse=True)
    for cut in attempts[:_MAX_CUT_ATTEMPTS]:
        candidate = _close(normalised[:cut])
        if candidate is not None and _is_valid(candidate):
            # a value cut before its first complete member carries nothing: treat as a failure
            return candidate if _has_content(json.loads(candidate)) else None
    return None


def _has_content(value: Any) -> bool:
    """Whether a value holds any key or scalar (not only nested empty containers)."""
    if isinstance(value, dict):
        return bool(value)
    if isinstance(value, list):
        return any(_has_content(v) for v in value)
    return True


def extract_fenced_blocks(text: str) -> list[str]:
    """Contents of Markdown code fences in ``text``, JSON-tagged fences first."""
    blocks = [(lang.lower(), body.strip()) for lang, body in _FENCE_RE.findall(text)]
    tagged = [b for lang, b in blocks if lang in ("json", "jsonc", "json5")]
    other = [b for lang, b in blocks if lang not in ("json", "jsonc", "json5")]
    return [b for b in tagged + other if b]


def _candidates(text: str) -> list[str]:
    """Substrings of ``text`` that may hold the JSON value, most likely first."""
    out = extract_fenced_blocks(text)
    out.append(text)
    seen: set[str] = set()
    unique = []
    for c in out:
        if c not in seen:
            seen.add(c)
            unique.append(c)
    return unique


def _first_bracket(text: str) -> int | None:
    positions = [p for p in (text.find("{"), text.find("[")) if p >= 0]
    return min(positions) if positions else None


def _is_valid(candidate: str) -> bool:
    try:
        json.loads(candidate)
    except json.JSONDecodeError:
        return False
    return True


def _normalise(text: str) -> str:
    """Rewrite single-quoted strings and Python literals outside strings; escape raw newlines in strings."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            body, i, closed = _read_string(text, i)
            out.append(body if closed else body[:-1])  # unterminated: leave the quote open for _close
            continue
        if ch.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_PY_LITERALS.get(word, word))
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _read_string(text: str, i: int) -> tuple[str, int, bool]:
    """Read a string literal at ``text[i]`` (either quote); return (double-quoted JSON form, next index, closed)."""
    quote = text[i]
    j = i + 1
    chars: list[str] = []
    n = len(text)
    while j < n:
        ch = text[j]
        if ch == "\\" and j + 1 < n:
            nxt = text[j + 1]
            if quote == "'" and nxt == "'":
                chars.append("'")
            else:
                chars.append(ch + nxt)
            j += 2
            continue
        if ch == quote:
            return '"' + "".join(chars) + '"', j + 1, True
        if ch == '"':  # only reachable inside a single-quoted string
            chars.append('\\"')
        elif ch == "\n":
            chars.append("\\n")
        elif ch == "\r":
            chars.append("\\r")
        elif ch == "\t":
            chars.append("\\t")
        else:
            chars.append(ch)
        j += 1
    if chars and chars[-1] == "\\":  # a dangling escape at the truncation point
        chars.pop()
    return '"' + "".join(chars) + '"', n, False


_OUT, _IN, _OPEN, _CLOSE = 0, 1, 2, 3


def _scan(text: str):
    """Yield (index, char, kind) over normalised text; kind is _OUT, _IN (string content), _OPEN or _CLOSE (quotes)."""
    in_string = False
    escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                yield i, ch, _CLOSE
                continue
            yield i, ch, _IN
        elif ch == '"':
            in_string = True
            yield i, ch, _OPEN
        else:
            yield i, ch, _OUT


def _balanced_end(text: str) -> int | None:
    """Index just past the value that starts at text[0] when its brackets balance, else None."""
    depth = 0
    for i, ch, kind in _scan(text):
        if kind != _OUT:
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _strip_trailing_commas(text: str) -> str:
    out: list[str] = []
    for _, ch, kind in _scan(text):
        if kind == _OUT and ch in "}]":
            k = len(out) - 1
            while k >= 0 and out[k].isspace():
                k -= 1
            if k >= 0 and out[k] == ",":
                del out[k]
        out.append(ch)
    return "".join(out)


def _cut_points(text: str) -> list[int]:
    """Positions where a truncated document can be cut: before commas, after brackets and values."""
    cuts = []
    for i, ch, kind in _scan(text):
        if kind == _CLOSE:
            cuts.append(i + 1)
        if kind != _OUT:
            continue
        if ch == ",":
            cuts.append(i)
        elif ch in "{[}]":
            cuts.append(i + 1)
    return cuts


def _close(prefix: str) -> str | None:
    """Close an open string and every open bracket of ``prefix``; drop a dangling comma/colon."""
    stack: list[str] = []
    in_string = False
    for _, ch, kind in _scan(prefix):
        in_string = kind in (_IN, _OPEN)
        if kind != _OUT:
            continue
        if ch in "{[":
            stack.append(ch)
        elif ch in "}]":
            if not stack or _CLOSERS[stack[-1]] != ch:
                return None
            stack.pop()
    body = prefix + ('"' if in_string else "")
    body = body.rstrip()
    while body.endswith(",") or body.endswith(":"):
        body = body[:-1].rstrip()
    body = _strip_trailing_commas(body + "".join(_CLOSERS[b] for b in reversed(stack)))
    return body
