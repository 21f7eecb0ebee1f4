"""Read-only repository tools for the CAB maintainer, confined to one checkout.

Upstream CAB lets the maintainer run shell commands on the host; this harness does not. The four
tools are pure Python, never start a process, and never follow a path out of the checkout:

* ``list_dir(path)`` - directory entries (dirs end with ``/``), capped;
* ``read_file(path, start_line, end_line)`` - numbered lines, capped in lines, bytes and line length;
  binary files are refused;
* ``search(pattern, path, glob, context_lines, ignore_case)`` - regex search with context lines and
  a result cap;
* ``find_files(pattern, path)`` - files whose name (or relative path, when the pattern holds ``/``)
  matches a glob.

Confinement: absolute paths, ``~``, NUL bytes and any ``..`` component are refused outright; every
other path is resolved (following symlinks) and must stay inside the resolved checkout root.
Directory walks never descend into symlinked directories and skip symlinked files whose target is
outside the root. Every refusal is a one-line ``ERROR: ...`` message the model can read and react to.

Catastrophic regex backtracking: patterns are compiled with the third-party ``regex`` engine and
every match call runs with ``timeout=`` set to what is left of the search's wall-clock budget
(``search_timeout_s``, default 5 s); on expiry the search stops and returns the matches found so
far plus a message asking for a simpler pattern. ``regex`` checks the deadline inside its
backtracking loop, so a pathological pattern such as ``(a|aa)+$`` costs at most the budget.
Matching runs per file over at most ``max_search_file_bytes`` and lines longer than
``max_line_chars`` are cut before matching, which bounds the input size as well.
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".tox", ".mypy_cache"})


@dataclass
class ToolLimits:
    """Caps applied by :class:`RepoTools` (all sizes in bytes / characters / counts)."""

    max_read_lines: int = 400  # lines returned by one read_file call
    max_read_bytes: int = 40_000  # characters returned by one read_file call
    max_file_bytes: int = 50_000_000  # read_file refuses larger files only for whole-file reads
    max_line_chars: int = 500  # longer lines are cut (output and matching)
    max_list_entries: int = 300
    max_search_results: int = 50  # matching lines
    max_search_file_bytes: int = 2_000_000  # larger files are skipped by search
    max_search_files: int = 20_000  # files examined by one search / find
    max_find_results: int = 200
    max_context_lines: int = 5
    search_timeout_s: float = 5.0
    max_output_chars: int = 40_000  # hard cap on any tool result text


@dataclass
class ToolResult:
    """One tool call's outcome: the text shown to the model and a record for tool_calls.jsonl."""

    name: str
    args: dict[str, Any]
    text: str
    ok: bool
    refused: bool = False
    truncated: bool = False
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"tool": self.name, "args": self.args, "ok": self.ok, "refused": self.refused,
                "truncated": self.truncated, "seconds": round(self.seconds, 4), "chars": len(self.text),
                "meta": self.meta, "preview": self.text[:300]}


class ToolRefusal(Exception):
    """Raised internally for a refused request; its message goes to the model verbatim."""


# --------------------------------------------------------------------------- schemas

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "list_dir",
        "description": "List the entries of a directory of the repository (directories end with '/').",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "Directory relative to the repository root; '.' for the root."}},
            "required": [], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "read_file",
        "description": "Read a text file of the repository, optionally a 1-based inclusive line range. Output lines are numbered.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "File path relative to the repository root."},
            "start_line": {"type": "integer", "description": "First line to read (1-based).", "minimum": 1},
            "end_line": {"type": "integer", "description": "Last line to read (inclusive).", "minimum": 1}},
            "required": ["path"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "search",
        "description": "Search file contents with a regular expression; returns matching lines with context.",
        "parameters": {"type": "object", "properties": {
            "pattern": {"type": "string", "description": "Regular expression (Python syntax), matched per line."},
            "path": {"type": "string", "description": "Directory or file to search in, relative to the root. Default '.'."},
            "glob": {"type": "string", "description": "Only search files whose name matches this glob, e.g. '*.py'."},
            "context_lines": {"type": "integer", "description": "Lines of context before and after each match (0-5).", "minimum": 0},
            "ignore_case": {"type": "boolean", "description": "Case-insensitive matching."}},
            "required": ["pattern"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "find_files",
        "description": "Find files by name glob (e.g. '*.cpp', 'CMakeLists.txt', 'src/**/util*.h').",
        "parameters": {"type": "object", "properties": {
            "pattern": {"type": "string", "description": "Glob on the file name, or on the relative path if it contains '/'."},
            "path": {"type": "string", "description": "Directory to search under, relative to the root. Default '.'."}},
            "required": ["pattern"], "additionalProperties": False}}},
]

TOOL_NAMES = tuple(s["function"]["name"] for s in TOOL_SCHEMAS)


def tools_prompt_description() -> str:
    """Human-readable tool list for the JSON fallback protocol (same content as the schemas)."""
    lines = []
    for s in TOOL_SCHEMAS:
        f = s["function"]
        props = f["parameters"]["properties"]
        req = set(f["parameters"].get("required", []))
        args = ", ".join(f"{k}{'' if k in req else '?'}: {v['type']}" for k, v in props.items())
        lines.append(f"- {f['name']}({args}): {f['description']}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- tools


def _is_binary(sample: bytes) -> bool:
    if b"\x00" in sample:
        return True
    if not sample:
        return False
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is not evidence of binary content.
        if exc.start >= len(sample) - 4:
            return False
    control = sum(1 for b in sample if b < 9 or 13 < b < 32)
    return control / len(sample) > 0.1


class RepoTools:
    """The maintainer's read-only view of one checkout. Thread-compatible (no shared mutation)."""

    def __init__(self, root: str | Path, limits: ToolLimits | None = None):
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(f"tool root is not a directory: {self.root}")
        self.limits = limits or ToolLimits()
        self._dispatch: dict[str, Callable[..., str]] = {
            "list_dir": self.list_dir, "read_file": self.read_file, "search": self.search, "find_files": self.find_files,
        }

    # ---- confinement

    def resolve(self, path: str | None, *, want: str = "any") -> Path:
        """Resolve ``path`` (relative to the root) or raise :class:`ToolRefusal`."""
        raw = "." if path is None else path
        if not isinstance(raw, str):
            raise ToolRefusal(f"path must be a string, got {type(raw).__name__}")
        raw = raw.strip() or "."
        if "\x00" in raw:
            raise ToolRefusal("path contains a NUL byte")
        if raw.startswith(("/", "\\", "~")) or (len(raw) > 1 and raw[1] == ":"):
            raise ToolRefusal(f"absolute paths are not allowed ({raw!r}); use a path relative to the repository root")
        parts = PurePosixPath(raw.replace("\\", "/")).parts
        if ".." in parts:
            raise ToolRefusal(f"'..' is not allowed in paths ({raw!r}); paths are relative to the repository root")
        candidate = self.root.joinpath(*parts) if parts else self.root
        try:
            resolved = candidate.resolve(strict=False)
        except (OSError, RuntimeError) as exc:  # symlink loops
            raise ToolRefusal(f"cannot resolve {raw!r}: {exc}") from exc
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise ToolRefusal(f"{raw!r} points outside the repository (symbolic link); access refused")
        if not resolved.exists():
            raise ToolRefusal(f"{raw!r} does not exist")
        if want == "file" and not resolved.is_file():
            raise ToolRefusal(f"{raw!r} is not a regular file" + (" (it is a directory)" if resolved.is_dir() else ""))
        if want == "dir" and not resolved.is_dir():
            raise ToolRefusal(f"{raw!r} is not a directory")
        return resolved

    def rel(self, p: Path) -> str:
        try:
            r = p.relative_to(self.root).as_posix()
        except ValueError:
            r = p.resolve().relative_to(self.root).as_posix()
        return r or "."

    def _inside(self, p: Path) -> bool:
        try:
            return p.resolve().is_relative_to(self.root)
        except (OSError, RuntimeError):
            return False

    def _walk_files(self, start: Path):
        """Yield confined regular files under ``start`` (sorted, no symlinked dirs, skip SKIP_DIRS)."""
        if start.is_file():
            yield start
            return
        for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not os.path.islink(os.path.join(dirpath, d)))
            for fn in sorted(filenames):
                p = Path(dirpath) / fn
                if p.is_symlink() and not self._inside(p):
                    continue
                if p.is_file():
                    yield p

    # ---- dispatch

    def execute(self, name: str, args: dict[str, Any] | str | None) -> ToolResult:
        """Run one tool call; never raises for bad input (the error text goes back to the model)."""
        t0 = time.perf_counter()
        parsed: dict[str, Any]
        if args is None or args == "":
            parsed = {}
        elif isinstance(args, str):
            try:
                parsed = json.loads(args)
            except json.JSONDecodeError as exc:
                return ToolResult(name, {"raw": args[:500]}, f"ERROR: arguments are not valid JSON ({exc.msg})", ok=False,
                                  seconds=time.perf_counter() - t0)
        else:
            parsed = dict(args)
        if not isinstance(parsed, dict):
            return ToolResult(name, {"raw": str(parsed)[:500]}, "ERROR: arguments must be a JSON object", ok=False)
        fn = self._dispatch.get(name)
        if fn is None:
            return ToolResult(name, parsed, f"ERROR: unknown tool {name!r}; available tools: {', '.join(TOOL_NAMES)}", ok=False,
                              seconds=time.perf_counter() - t0)
        try:
            inspect.signature(fn).bind(**parsed)
        except TypeError as exc:  # wrong / missing argument names
            return ToolResult(name, parsed, f"ERROR: bad arguments for {name}: {exc}", ok=False,
                              seconds=time.perf_counter() - t0)
        try:
            text, meta = fn(**parsed)
            ok, refused = True, False
        except ToolRefusal as exc:
            text, meta, ok, refused = f"ERROR: {exc}", {}, False, True
        except OSError as exc:  # permission denied, vanished file ...
            text, meta, ok, refused = f"ERROR: {type(exc).__name__}: {exc.strerror or exc}", {}, False, False
        truncated = bool(meta.get("truncated"))
        if len(text) > self.limits.max_output_chars:
            text = text[: self.limits.max_output_chars] + "\n[output truncated]"
            truncated = True
        return ToolResult(name, parsed, text, ok=ok, refused=refused, truncated=truncated,
                          seconds=time.perf_counter() - t0, meta=meta)

    # ---- list_dir

    def list_dir(self, path: str = ".") -> tuple[str, dict[str, Any]]:
        d = self.resolve(path, want="dir")
        entries = []
        for child in sorted(d.iterdir(), key=lambda c: (not c.is_dir(), c.name.lower())):
            if child.name in SKIP_DIRS:
                continue
            if child.is_symlink() and not self._inside(child):
                entries.append(f"{child.name} -> (link outside the repository)")
            elif child.is_dir():
                entries.append(child.name + "/")
            else:
                try:
                    size = child.stat().st_size
                except OSError:
                    size = -1
                entries.append(f"{child.name} ({size} bytes)")
        cap = self.limits.max_list_entries
        truncated = len(entries) > cap
        shown = entries[:cap]
        header = f"{self.rel(d)}/ ({len(entries)} entries)"
        if truncated:
            shown.append(f"[... {len(entries) - cap} more entries not shown]")
        return header + "\n" + ("\n".join(shown) if shown else "(empty)"), {"entries": len(entries), "truncated": truncated}

    # ---- read_file

    def read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> tuple[str, dict[str, Any]]:
        f = self.resolve(path, want="file")
        lim = self.limits
        try:
            start = 1 if start_line is None else int(start_line)
            end = None if end_line is None else int(end_line)
        except (TypeError, ValueError):
            raise ToolRefusal("start_line and end_line must be integers")
        if start < 1:
            raise ToolRefusal("start_line must be >= 1")
        if end is not None and end < start:
            raise ToolRefusal(f"end_line ({end}) is before start_line ({start})")
        size = f.stat().st_size
        with open(f, "rb") as fh:
            head = fh.read(8192)
        if _is_binary(head):
            raise ToolRefusal(f"{self.rel(f)} is a binary file ({size} bytes); it cannot be shown as text")
        if end is None and start == 1 and size > lim.max_file_bytes:
            raise ToolRefusal(f"{self.rel(f)} is {size} bytes; read it in line ranges (start_line/end_line)")
        want_last = start + lim.max_read_lines - 1 if end is None else min(end, start + lim.max_read_lines - 1)
        out: list[str] = []
        chars = 0
        truncated = False
        lineno = 0
        total_known = True
        with open(f, "r", encoding="utf-8", errors="replace", newline=None) as fh:
            for lineno, line in enumerate(fh, start=1):
                if lineno < start:
                    continue
                if lineno > want_last:
                    truncated = end is None or end > want_last
                    total_known = False
                    break
                line = line.rstrip("\n")
                if len(line) > lim.max_line_chars:
                    line = line[: lim.max_line_chars] + " [line cut]"
                rendered = f"{lineno:>6}| {line}"
                if chars + len(rendered) + 1 > lim.max_read_bytes:
                    truncated = True
                    total_known = False
                    break
                out.append(rendered)
                chars += len(rendered) + 1
        if not out and start > 1:
            raise ToolRefusal(f"{self.rel(f)} has only {lineno} lines (start_line={start})")
        shown_last = start + len(out) - 1
        header = f"{self.rel(f)} lines {start}-{shown_last}" + (f" of {lineno}" if total_known else "")
        text = header + "\n" + "\n".join(out)
        if truncated:
            text += f"\n[truncated at line {shown_last}; call read_file with start_line={shown_last + 1} to continue]"
        return text, {"lines": len(out), "truncated": truncated, "bytes": size}

    # ---- search

    def search(self, pattern: str, path: str = ".", glob: str | None = None, context_lines: int = 2,
               ignore_case: bool = False) -> tuple[str, dict[str, Any]]:
        import regex  # third-party engine with match timeouts (see module docstring)

        lim = self.limits
        if not isinstance(pattern, str) or not pattern:
            raise ToolRefusal("pattern must be a non-empty string")
        if len(pattern) > 1000:
            raise ToolRefusal("pattern is longer than 1000 characters")
        try:
            ctx = max(0, min(int(context_lines), lim.max_context_lines))
        except (TypeError, ValueError):
            raise ToolRefusal("context_lines must be an integer")
        flags = regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0)
        try:
            rx = regex.compile(pattern, flags)
        except (regex.error, ValueError, OverflowError) as exc:
            raise ToolRefusal(f"invalid regular expression: {exc}")
        start = self.resolve(path)
        deadline = time.monotonic() + lim.search_timeout_s
        blocks: list[str] = []
        n_matches = files_seen = files_matched = 0
        timed_out = capped = False
        for f in self._walk_files(start):
            files_seen += 1
            if files_seen > lim.max_search_files:
                capped = True
                break
            if glob and not fnmatch.fnmatch(f.name, glob):
                continue
            try:
                if f.stat().st_size > lim.max_search_file_bytes:
                    continue
                data = f.read_bytes()
            except OSError:
                continue
            if _is_binary(data[:8192]):
                continue
            lines = data.decode("utf-8", errors="replace").splitlines()
            text = "\n".join(line[: lim.max_line_chars] for line in lines)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            hit_lines: list[int] = []
            try:
                last = -1
                for m in rx.finditer(text, timeout=remaining):
                    ln = text.count("\n", 0, m.start())
                    if ln != last:
                        hit_lines.append(ln)
                        last = ln
                    if n_matches + len(hit_lines) >= lim.max_search_results:
                        break
            except TimeoutError:
                timed_out = True
            if hit_lines:
                files_matched += 1
                n_matches += len(hit_lines)
                blocks.append(self._render_hits(self.rel(f), lines, hit_lines, ctx))
            if timed_out:
                break
            if n_matches >= lim.max_search_results:
                capped = True
                break
        body = "\n".join(blocks) if blocks else "(no matches)"
        header = f"search {pattern!r} in {self.rel(start)}: {n_matches} matching line(s) in {files_matched} file(s)"
        notes = []
        if capped:
            notes.append(f"[result cap reached ({lim.max_search_results} lines / {lim.max_search_files} files); narrow the pattern, path or glob]")
        if timed_out:
            notes.append(f"[search stopped after {lim.search_timeout_s:g}s: the pattern is too slow (possible catastrophic backtracking); use a simpler pattern]")
        return "\n".join([header, body, *notes]), {"matches": n_matches, "files": files_matched, "timed_out": timed_out,
                                                 "truncated": capped or timed_out}

    def _render_hits(self, rel: str, lines: list[str], hit_lines: list[int], ctx: int) -> str:
        lim = self.limits
        hits = set(hit_lines)
        ranges: list[list[int]] = []
        for h in hit_lines:
            lo, hi = max(0, h - ctx), min(len(lines) - 1, h + ctx)
            if ranges and lo <= ranges[-1][1] + 1:
                ranges[-1][1] = max(ranges[-1][1], hi)
            else:
                ranges.append([lo, hi])
        out = [f"== {rel}"]
        for i, (lo, hi) in enumerate(ranges):
            if i:
                out.append("  --")
            for n in range(lo, hi + 1):
                line = lines[n] if n < len(lines) else ""
                if len(line) > lim.max_line_chars:
                    line = line[: lim.max_line_chars] + " [line cut]"
                out.append(f"{n + 1:>6}{':' if n in hits else '-'} {line}")
        return "\n".join(out)

    # ---- find_files

    def find_files(self, pattern: str, path: str = ".") -> tuple[str, dict[str, Any]]:
        lim = self.limits
        if not isinstance(pattern, str) or not pattern.strip():
            raise ToolRefusal("pattern must be a non-empty glob")
        start = self.resolve(path, want="dir")
        by_path = "/" in pattern
        pat = pattern.strip()
        found: list[str] = []
        seen = 0
        capped = False
        for f in self._walk_files(start):
            seen += 1
            if seen > lim.max_search_files:
                capped = True
                break
            rel = self.rel(f)
            if (fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(rel, pat.replace("**/", ""))) if by_path else fnmatch.fnmatch(f.name, pat):
                found.append(rel)
                if len(found) >= lim.max_find_results:
                    capped = True
                    break
        text = f"find {pat!r} under {self.rel(start)}: {len(found)} file(s)" + ("\n" + "\n".join(found) if found else "\n(no files)")
        if capped:
            text += f"\n[result cap reached ({lim.max_find_results} files); narrow the pattern]"
        return text, {"found": len(found), "truncated": capped}
