"""A table as the report writes it: display blocks (Markdown / LaTeX) plus a tidy numeric frame (CSV).

Missing values are never filled: they render as ``—`` (Markdown), ``--`` (LaTeX) and an empty CSV
field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MISSING = "—"


@dataclass
class Block:
    """One displayed table: a header of column tuples (1 or 2 levels) and rows of strings."""

    columns: list[tuple[str, ...]]
    rows: list[list[str]]
    heading: str | None = None


@dataclass
class Table:
    name: str  # file stem, e.g. "table1"
    title: str
    data: Any  # pandas DataFrame, tidy, numbers (the CSV)
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def mark(self, text: str) -> "Table":
        """Stamp the table visibly (title, every block heading, a note, a CSV column), e.g. scripted replies."""
        if text not in self.title:
            self.title = f"{self.title} [{text}]"
            if hasattr(self.data, "assign"):
                self.data = self.data.assign(mark=text)
            for b in self.blocks:
                b.heading = f"{b.heading} [{text}]" if b.heading else f"[{text}]"
            self.notes.insert(0, f"**{text}**")
        return self

    def to_markdown(self) -> str:
        out = [f"### {self.title}", ""]
        for b in self.blocks:
            if b.heading:
                out += [f"**{b.heading}**", ""]
            out.append(_md_block(b))
            out.append("")
        out += [f"{n}  " for n in self.notes]
        return "\n".join(out).rstrip() + "\n"

    def to_latex(self) -> str:
        parts = [f"% {self.title}"]
        for b in self.blocks:
            parts.append(_latex_block(b, self.title))
        if self.notes:
            parts.append("% " + "\n% ".join(self.notes))
        return "\n".join(parts) + "\n"

    def to_csv(self) -> str:
        return self.data.to_csv(index=False)

    def write(self, out_dir: str | Path) -> list[Path]:
        """Write ``<name>.md``, ``<name>.tex`` and ``<name>.csv`` atomically; returns the paths."""
        from benchmarks.records import atomic_write_text

        out_dir = Path(out_dir)
        return [atomic_write_text(out_dir / f"{self.name}.md", self.to_markdown()),
                atomic_write_text(out_dir / f"{self.name}.tex", self.to_latex()),
                atomic_write_text(out_dir / f"{self.name}.csv", self.to_csv())]


# ---------------------------------------------------------------------------- cell formatting

def is_missing(x: Any) -> bool:
    if x is None:
        return True
    try:
        return bool(math.isnan(float(x)))
    except (TypeError, ValueError):
        return False


def fmt_num(x: Any, digits: int = 3) -> str:
    return MISSING if is_missing(x) else f"{float(x):.{digits}f}"


def fmt_ratio(x: Any) -> str:
    return MISSING if is_missing(x) else f"{float(x):.1f}×"


def fmt_tokens_k(x: Any) -> str:
    """Tokens in thousands, as the paper prints them (``3,388K``; one decimal below 10K)."""
    if is_missing(x):
        return MISSING
    v = float(x) / 1000
    return f"{v:,.0f}K" if abs(v) >= 10 else f"{v:,.1f}K"


def fmt_int(x: Any) -> str:
    return MISSING if is_missing(x) else f"{float(x):,.2f}"


def fmt_usd(x: Any) -> str:
    """Dollars: ``$1.23``, four decimals below one dollar (``$0.0123``), ``$0`` for zero."""
    if is_missing(x):
        return MISSING
    v = float(x)
    if v == 0:
        return "$0"
    return f"${v:,.2f}" if abs(v) >= 1 else f"${v:.4f}"


def fmt_count(x: Any) -> str:
    return MISSING if is_missing(x) else str(int(x))


def fmt_delta(x: Any, digits: int = 3) -> str:
    if is_missing(x):
        return MISSING
    v = float(x)
    arrow = "↑" if v > 0 else ("↓" if v < 0 else "=")
    return f"{arrow} {abs(v):.{digits}f}"


# ---------------------------------------------------------------------------- Markdown / LaTeX

def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def _md_block(b: Block) -> str:
    header = [" ".join(p for p in col if p) for col in b.columns]
    lines = ["| " + " | ".join(_md_escape(h) for h in header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    for row in b.rows:
        lines.append("| " + " | ".join(_md_escape(c) for c in row) + " |")
    return "\n".join(lines)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}"}
_LATEX_UNICODE = {"×": r"$\times$", "Δ": r"$\Delta$", "↑": r"$\uparrow$", "↓": r"$\downarrow$",
                  MISSING: "--", "†": r"$^\dagger$", "±": r"$\pm$", "–": "--"}


def latex_escape(s: str) -> str:
    out = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(s))
    for k, v in _LATEX_UNICODE.items():
        out = out.replace(k, v)
    return out.replace("^R", r"$^{R}$")


def _latex_block(b: Block, title: str) -> str:
    ncol = len(b.columns)
    levels = max(len(c) for c in b.columns)
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             r"\caption{" + latex_escape(title + (f" — {b.heading}" if b.heading else "")) + "}",
             r"\begin{tabular}{l" + "r" * (ncol - 1) + "}", r"\toprule"]
    if levels == 2:
        cells, i = [], 0
        while i < ncol:
            top = b.columns[i][0]
            j = i
            while j + 1 < ncol and b.columns[j + 1][0] == top and len(b.columns[j + 1]) == 2 and b.columns[j + 1][1]:
                j += 1
            span = j - i + 1
            cells.append(latex_escape(top) if span == 1 else r"\multicolumn{%d}{c}{%s}" % (span, latex_escape(top)))
            i = j + 1
        lines.append(" & ".join(cells) + r" \\")
        lines.append(" & ".join(latex_escape(c[1] if len(c) > 1 else "") for c in b.columns) + r" \\")
    else:
        lines.append(" & ".join(latex_escape(c[0]) for c in b.columns) + r" \\")
    lines.append(r"\midrule")
    for row in b.rows:
        lines.append(" & ".join(latex_escape(c) for c in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines)
