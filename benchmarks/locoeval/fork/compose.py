"""The fork set's conversations: validated fork tasks -> LoCoEval-format samples (seeded, deterministic).

``python -m scripts.build_fork_set compose --screen <screen.jsonl> [--seed N]`` reads the latest row of
every task the screening validated (current catalogue and derivation) and writes ``samples.jsonl``,
``samples.verification.jsonl`` and ``generation.json`` (default ``benchmarks/locoeval/fork/set/``).

Per task (one DevEval target of a fork):

- a ``requirement`` turn: the DevEval requirement and the exact signature. Where the requirement text
  names the public behaviour of a change (a case, comparison, side, sort order, flag value, a
  separator's name, a number word) it is edited to the fork's, and a doctest example (its output
  shows the public behaviour) is left out; every edit is recorded (``requirement_edits``);
- one ``info`` turn per fork change: the user states the fork decision (``gt_items``);
- one ``distractor`` and its ``revision``: either the public library's real behaviour at one
  change's site (the prior and the early statement agree; only memory of the revision wins) -- for
  at most half of the set's tasks -- or another plausible value for that site (a counterfactual of
  the fork: another scale or bound, another separator, ``.title()`` for a case, no sorting for a sort
  order, a sibling exception class) whose body fails the fork's tests (run and cached when
  ``forks.jsonl`` is beside the samples; ``--no-check`` skips it). Tasks that only admit a public
  distractor beyond the half are left out (``generation.json`` says which);
- a ``retrospective`` recap; ``noise`` and ``chat`` fillers (``verified.compose``) bring a sample to a
  seeded length in 30-69 turns.

No tell: info and distractor turns are rendered by the same templates (random openings, shapes and
tails; the value and the code fragment are the only difference), the distractor comes before or
after its site's info turn, and in single-hop samples a task's details are shuffled with fillers
between them (multi-hop: every task introduced early, among a seeded number of fillers, details of
every task spread over the middle, revisions and recaps late). The verification rows record per task the changes, the
distractor (``mode`` public | counterfactual) and ``distractor_bodies``: the target body a model
would write if it believed that distractor (the fork body with that one change replaced), which
``validate_locoeval`` checks fails the fork's tests.

Samples hold what v2's hold (ids, subsets and item ids stay in the records; a method sees only the
user's words). Today's tasks are few: every sample has one target unless the tasks allow
``MIN_SAMPLES`` samples of v2's sizes 1-4.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import random
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from benchmarks.locoeval.fork.catalogue import (CATALOGUE_VERSION, CatalogueError, ExceptionFamily, ForkChange, Target,
                                                apply_changes)
from benchmarks.locoeval.fork.tests_derive import DERIVE_VERSION
from benchmarks.locoeval.verified.compose import (SIZES, SUFFIX, TURNS, _fillers, _revision_before_recap, _step,
                                                  plan_sizes, set_statistics)
from benchmarks.locoeval.verified.source import norm, one_line
from reconmem.platform import pyast

SET_NAME = "locoeval_fork"
GENERATOR = "benchmarks.locoeval.fork.compose"
MIN_SAMPLES = 128
PUBLIC_SHARE = 0.5              # at most this share of the distractors state the public library's behaviour
SET_DIR = Path(__file__).resolve().parent / "set"

# -- what a detail turn says (info and distractor alike) -------------------------------------------------

OPENERS = (
    "For `{fn}`,", "One thing about `{fn}`:", "Note for `{fn}`:", "On `{fn}`:", "Regarding `{fn}`,",
    "We settled this for `{fn}`:", "Keep in mind for `{fn}`:", "Another point on `{fn}`:", "Quick one on `{fn}` --",
    "About `{fn}`:", "Something our team agreed on for `{fn}`:", "In `{fn}`,", "`{fn}`:",
    "Here is how `{fn}` works in our code:", "Please remember this for `{fn}`:", "A detail of `{fn}`:",
)
SHAPES = (
    "{opener} {what} (`{frag}`).",
    "{opener} {what}: `{frag}`.",
    "{opener} the line is `{frag}` -- {what}.",
    "{opener} `{frag}`, i.e. {what}.",
    "{opener} {what}. The code reads `{frag}`.",
    "{opener} we have `{frag}` there, so {what}.",
)
TAILS = ("", "", "", " It matters for the tests.", " We agreed on it in the review.", " Small thing, but keep it.",
         " That's deliberate.", " This one is easy to miss.")
REVISIONS = (
    "Correction for `{fn}`: {what_true} (`{frag_true}`), not `{frag_wrong}` as I said earlier.",
    "I misspoke about `{fn}` before -- it's `{frag_true}`, not `{frag_wrong}`.",
    "Scratch what I told you earlier about `{fn}`: not `{frag_wrong}`; {what_true}, so `{frag_true}`.",
    "Update on `{fn}`: earlier I said `{frag_wrong}`, but the right line is `{frag_true}`.",
    "Let me fix something for `{fn}`: not `{frag_wrong}` -- we use `{frag_true}` ({what_true}).",
    "Sorry, one earlier remark on `{fn}` was off. The line is `{frag_true}`, not `{frag_wrong}`.",
    "I need to take back something about `{fn}`: {what_true}, `{frag_true}` -- not `{frag_wrong}`.",
)
RECAPS = (
    "Quick recap before we move on: what have we agreed so far about `{fn}`?",
    "Can you summarise what we decided for `{fn}`?",
    "Before I forget: list the decisions we made on `{fn}`.",
    "Let's pause -- what's the current plan for `{fn}`, in a few bullet points?",
    "Where are we with `{fn}`? Give me the agreed details.",
)
REQUIREMENTS = (
    "Next piece of work: I need `{fn}` in `{file}` with the signature `{sig}`.",
    "Let's look at `{fn}` ({file}) next. Signature: `{sig}`.",
    "New task: `{file}` needs `{fn}`, signature `{sig}`.",
    "I'd like us to write `{fn}` in `{file}` -- `{sig}`.",
    "Moving on to `{fn}` in `{file}`; it has the signature `{sig}`.",
)
REQUIREMENT_TAILS = (
    "Don't write it yet -- I'll give you the details first.", "No code yet, please; details follow.",
    "Hold off on the code for now.", "We'll go through how it should behave before you write it.",
)
OPENINGS = (
    "Hi! Today I'm working in our fork of {name} (based on version {version}). We'll go through a few "
    "functions step by step.",
    "Hello. We maintain a fork of {name}, started from release {version}; I want to go over some functions "
    "with you.",
    "Hi there -- I'm on our team's fork of the {name} code base ({version} underneath). Let's work through a "
    "few functions.",
)
QUERY = "Please implement `{fn}` now, following everything we agreed about it."

SEPARATOR_POOL = (",", ";", ":", "|", "/", "-", "_", ".", "+", "=", "~")
ENCODING_POOL = ("utf-8", "latin-1", "ascii", "cp1252", "utf-16")
_PUNCT_NAMES = {",": "comma", ";": "semicolon", ":": "colon", "-": "hyphen", "_": "underscore", "|": "pipe",
                "/": "slash", ".": "dot", "&": "ampersand", "+": "plus sign", "=": "equals sign", "\t": "tab",
                "~": "tilde"}
_PUNCT_WORDS = {"comma": ",", "semicolon": ";", "colon": ":", "hyphen": "-", "dash": "-", "underscore": "_",
                "pipe": "|", "slash": "/", "ampersand": "&", "tab": "\t"}
_COMPARISON_WORDS = {"<": ("less than", "smaller than", "fewer than", "below"),
                     "<=": ("less than or equal to", "at most", "no more than", "not greater than"),
                     ">": ("greater than", "more than", "larger than", "above", "exceeds"),
                     ">=": ("greater than or equal to", "at least", "no less than", "not less than")}
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve")


class ComposeError(ValueError):
    """A screening row or input the composition cannot use (one line naming it)."""


@dataclass
class ProjectInput:
    """What a sample needs of its project: the manifest entry's identity and the noise symbols."""

    project_path: str
    pypi_name: str
    version: str
    sha256: str | None
    symbols: list[dict[str, str]] = field(default_factory=list)   # verified.compose.repository_symbols
    exceptions: ExceptionFamily = field(default_factory=ExceptionFamily)
    repo: dict[str, Any] | None = None      # the snapshot's provider spec when it is not a PyPI sdist (git route)


@dataclass
class TaskInput:
    """One validated fork task: its screening row, DevEval record, module text and signature."""

    row: dict[str, Any]
    record: dict[str, Any]
    module_text: str
    signature: str
    test_ids: list[str] | None = None      # forks.jsonl's, when the fork data is shipped beside the samples


@dataclass
class Claim:
    """A value a turn states for one change's site: the value's words and its code fragment."""

    value: str
    fragment: str
    body: str = ""                   # the target body a model writes if it believes this claim
    mode: str = "fork"               # fork | public | counterfactual


@dataclass
class Prepared:
    """A task ready to compose: changes, edited requirement, the chosen distractor."""

    inp: TaskInput
    project: ProjectInput
    changes: list[ForkChange]
    requirement: dict[str, str]
    edits: list[dict[str, str]]
    options: dict[int, list[Claim]]             # change index -> distractor claims (public first)
    distractor: tuple[int, Claim] | None = None
    rejected: list[dict[str, str]] = field(default_factory=list)   # counterfactuals the fork's tests do not catch

    @property
    def namespace(self) -> str:
        return self.inp.row["namespace"]

    @property
    def fn(self) -> str:
        return self.namespace.rsplit(".", 1)[-1]

    def has_counterfactual(self) -> bool:
        return any(c.mode == "counterfactual" for opts in self.options.values() for c in opts)


# -- reading the screening rows -----------------------------------------------------------------------------

def validated_rows(screen: Path) -> list[dict[str, Any]]:
    """The rows the set is made of, in namespace order: the shipped fork data's selection
    (``ship.latest_validated``: the latest row per task of the file's newest catalogue and derivation,
    validated)."""
    from benchmarks.locoeval.fork.ship import latest_validated

    if not Path(screen).is_file():
        raise ComposeError(f"--screen {screen}: file not found")
    rows, _ = latest_validated(Path(screen))
    for r in rows:
        for key in ("project_path", "version", "file", "body_start", "body_end", "signature_line", "changes",
                    "fork_body"):
            if key not in r:
                raise ComposeError(f"{screen}: validated row {r['namespace']} has no field {key!r}")
    return sorted(rows, key=lambda r: r["namespace"])


# -- one task -------------------------------------------------------------------------------------------

def target_of(inp: TaskInput, family: ExceptionFamily | None = None) -> Target:
    """The catalogue target of a task (its function at the row's signature line)."""
    row = inp.row
    tree = pyast.parse(inp.module_text)
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.lineno == row["signature_line"]), None)
    if func is None:
        raise ComposeError(f"{row['namespace']}: no function at {row['file']}:{row['signature_line']}")
    return Target(inp.module_text, func, row["body_start"], row["body_end"], module_rel=row["file"],
                  exceptions=family or ExceptionFamily())


DistractorCheck = Callable[[str, str], bool]      # (namespace, body) -> the body fails the fork's tests


def prepare(inp: TaskInput, project: ProjectInput, rng: random.Random,
            fails: DistractorCheck | None = None) -> Prepared:
    """Changes, fork body check, requirement edits and distractor options of one task (ComposeError: drop).
    ``fails``: a counterfactual whose body does not fail the fork's tests is no distractor (left out)."""
    row = inp.row
    changes = [ForkChange.from_record(c) for c in row["changes"]]
    target = target_of(inp, project.exceptions)
    try:
        fork_body = apply_changes(target, changes)
    except CatalogueError as exc:
        raise ComposeError(f"{row['namespace']}: the changes do not apply to the module text: {exc}") from exc
    if fork_body != row["fork_body"]:
        raise ComposeError(f"{row['namespace']}: the changes applied to {row['file']} do not give the row's fork_body")
    requirement, edits = edit_requirement(inp.record, changes)
    options: dict[int, list[Claim]] = {}
    rejected: list[dict[str, str]] = []
    for i, ch in enumerate(changes):
        others = [c for c in changes if c is not ch]
        public = Claim(ch.public_value, ch.fragment, apply_changes(target, others), "public")
        opts = [public]
        alt = counterfactual(ch, project.exceptions, target, rng)
        if alt is not None:
            alt_text, alt_value = alt
            body = apply_changes(target, others + [dataclasses.replace(ch, fork_text=alt_text)])
            frag = _fragment_with(ch, alt_text)
            if frag and body not in (fork_body, public.body) and _parses(body):
                if fails is None or fails(row["namespace"], body):
                    opts.append(Claim(alt_value, frag, body, "counterfactual"))
                else:
                    rejected.append({"namespace": row["namespace"], "change": ch.key, "value": alt_value,
                                     "reason": "its body passes the fork's tests"})
        options[i] = opts
    return Prepared(inp, project, changes, requirement, edits, options, rejected=rejected)


def _parses(body: str) -> bool:
    try:
        pyast.parse("async def _f():\n" + textwrap.indent(body, "    "))
    except SyntaxError:
        return False
    return True


def _fragment_with(ch: ForkChange, text: str) -> str | None:
    """The change's one-line fragment with ``text`` at the change's span (None: the span is not found)."""
    pf, pt = ch.fragment, one_line(ch.public_text)
    start = pf.find(pt)
    while start >= 0:
        if pf[:start] + one_line(ch.fork_text) + pf[start + len(pt):] == ch.fork_fragment:
            return pf[:start] + one_line(text) + pf[start + len(pt):]
        start = pf.find(pt, start + 1)
    return None


def counterfactual(ch: ForkChange, family: ExceptionFamily, target: Target,
                   rng: random.Random) -> tuple[str, str] | None:
    """``(source text, value words)`` of another plausible value at the change's site (None: the kind has
    no third value here: a flag, a side, a strictness, an order, a bool default, a membership, a missing
    test, an empty guard, a key, a base, a rounding)."""
    if ch.kind in ("scale", "bound", "default"):
        try:
            pv, fv = pyast.literal_eval(ch.public_text), pyast.literal_eval(ch.fork_text)
        except (ValueError, SyntaxError):
            return None
        if isinstance(pv, bool) or not isinstance(pv, (int, float)) or not isinstance(fv, (int, float)):
            return None
        if ch.kind == "bound":
            d = fv - pv
            cands = [fv + d] + ([pv - d] if (pv - d >= 0) == (pv >= 0) else [])
        else:
            cands = [pv * 3, pv * 4] + ([pv // 2] if isinstance(pv, int) and pv % 2 == 0 else [pv / 2])
        cands = [c for c in cands if c not in (pv, fv) and c != 0]
        if not cands:
            return None
        v = rng.choice(cands)
        return repr(v), repr(v)
    if ch.kind in ("separator", "format", "encoding"):
        return _string_counterfactual(ch, rng)
    if ch.kind == "case" and ch.fork_text in ("upper", "lower"):
        return "title", ".title()"
    if ch.kind == "strip" and {ch.public_text, ch.fork_text} < {"strip", "rstrip", "lstrip"}:
        other = ({"strip", "rstrip", "lstrip"} - {ch.public_text, ch.fork_text}).pop()
        return other, f".{other}()"
    if ch.kind == "sort":
        m = re.fullmatch(r"sorted\((.*), reverse=True\)", ch.fork_text)
        inner = m.group(1) if m else ""
        if inner.strip() and not re.search(r"[,|&^]| - |\bset\(|\{", inner):   # no set: its order is arbitrary
            return f"list({inner})", "unsorted (the input order)"
        return None
    if ch.kind == "exception":
        names = [n for n, rel in family.siblings(ch.public_value) if n != ch.fork_value and rel == target.module_rel]
        if names:
            v = rng.choice(names)
            return v, v
    return None


def _string_counterfactual(ch: ForkChange, rng: random.Random) -> tuple[str, str] | None:
    try:
        pv, fv = pyast.literal_eval(ch.public_text), pyast.literal_eval(ch.fork_text)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(pv, str) or not isinstance(fv, str):
        return None
    m = re.fullmatch(r"([rRuU]?)(['\"])(.*)\2", ch.fork_text, flags=re.S)
    if not m or "\\" in m.group(3) or m.group(3) != fv:
        return None                                  # escapes or implicit concatenation: no safe rewrite
    if ch.kind == "encoding":
        cands = [e for e in ENCODING_POOL if e.lower() not in (pv.lower(), fv.lower())]
        new = rng.choice(cands)
    else:
        k = 0
        while k < min(len(pv), len(fv)) and pv[k] == fv[k]:
            k += 1
        j = 0
        while j < min(len(pv), len(fv)) - k and pv[len(pv) - 1 - j] == fv[len(fv) - 1 - j]:
            j += 1
        mid_p, mid_f = pv[k:len(pv) - j], fv[k:len(fv) - j]
        if mid_f.isdigit() and mid_p.isdigit():
            alt_mid = str(int(mid_f) + 1)
        else:
            core = mid_f.strip()
            if len(core) != 1 or core not in SEPARATOR_POOL:
                return None
            cands = [c for c in SEPARATOR_POOL if c not in mid_p and c != core and c not in fv]
            if not cands:
                return None
            alt_mid = mid_f.replace(core, rng.choice(cands))
        new = fv[:k] + alt_mid + fv[len(fv) - j:]
    if new in (pv, fv):
        return None
    return f"{m.group(1)}{m.group(2)}{new}{m.group(2)}", repr(new)


# -- the requirement text ---------------------------------------------------------------------------------

def edit_requirement(record: dict[str, Any], changes: list[ForkChange]) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The requirement's Functionality and Arguments with the public behaviour named in words edited to the
    fork's, doctest examples left out; and the edits made."""
    req = record.get("requirement") or {}
    texts = {"Functionality": str(req.get("Functionality", "")), "Arguments": str(req.get("Arguments", ""))}
    edits: list[dict[str, str]] = []
    func = texts["Functionality"]
    cut = re.search(r"(?:^|\n)\s*(?:Examples?:?\s*\n)?\s*>>>", func)
    if cut:
        edits.append({"field": "Functionality", "change": "", "from": func[cut.start():].strip(), "to": "",
                      "why": "a doctest example shows the public behaviour"})
        texts["Functionality"] = func[:cut.start()].rstrip()
    for ch in changes:
        for fld in texts:
            new = _edit_for(ch, texts[fld])
            if new != texts[fld]:
                edits.append({"field": fld, "change": ch.key, "from": texts[fld], "to": new,
                              "why": f"names the public {ch.kind}"})
                texts[fld] = new
    return texts, edits


def _swap_words(text: str, a: str, b: str) -> str:
    """``a`` and ``b`` exchanged as whole words (case of the first letter kept)."""
    def sub(m: re.Match) -> str:
        w = m.group(0)
        new = b if w.lower() == a.lower() else a
        return new.capitalize() if w[0].isupper() else new
    return re.sub(rf"\b(?:{re.escape(a)}|{re.escape(b)})\b", sub, text, flags=re.I)


def _edit_for(ch: ForkChange, text: str) -> str:
    """``text`` with what it says of the change's public behaviour said of the fork's."""
    k = ch.kind
    if k == "case":
        pub, fork = ch.public_text, ch.fork_text                    # the method names: lower / upper
        return re.sub(rf"\b({pub}|{fork})(?=(?:[- ]?case|ed\b))", lambda m: _same_case(
            m.group(0), fork if m.group(0).lower() == pub else pub), text, flags=re.I)
    if k == "sort" and ch.fork_value.startswith("descending"):
        return _swap_words(text, "ascending", "descending")
    if k == "side":
        if re.match(r"\.(find|index|partition|split)\(", ch.public_value):
            return re.sub(r"\b(first|last)(?= (?:occurrence|instance|match|one))",
                          lambda m: _same_case(m.group(0), "last" if m.group(0).lower() == "first" else "first"),
                          text, flags=re.I)
        return re.sub(r"\b(first|last)(?= (?:occurrence|instance|match|one))",
                      lambda m: _same_case(m.group(0), "first" if m.group(0).lower() == "last" else "last"),
                      text, flags=re.I)
    if k == "flag" and "=" in ch.public_value:
        name = ch.public_value.split("=", 1)[0]
        return re.sub(rf"(`?{re.escape(name)}`?[^.\n]{{0,40}}?)\b(True|False)\b",
                      lambda m: m.group(1) + ("False" if m.group(2) == "True" else "True"), text)
    if k == "bound":
        try:
            pv, fv = int(ch.public_value), int(ch.fork_value)
        except ValueError:
            return text
        if 0 <= pv < len(_NUMBER_WORDS) and 0 <= fv < len(_NUMBER_WORDS):
            return re.sub(rf"\b{_NUMBER_WORDS[pv]}\b", lambda m: _same_case(m.group(0), _NUMBER_WORDS[fv]), text,
                          flags=re.I)
        return text
    if k == "strictness":
        pub, fork = ch.public_value, ch.fork_value
        hits = [(m.start(), m.end()) for w in _COMPARISON_WORDS.get(pub, ())
                for m in re.finditer(rf"\b{re.escape(w)}\b(?! or equal)", text, flags=re.I)]
        longer = [(m.start(), m.end()) for w in _COMPARISON_WORDS.get(pub + "=", ())
                  for m in re.finditer(rf"\b{re.escape(w)}\b", text, flags=re.I)] if len(pub) == 1 else []
        hits = [h for h in hits if not any(a <= h[0] < b for a, b in longer)]
        if len(hits) == 1:
            a, b = hits[0]
            return text[:a] + _COMPARISON_WORDS[fork][0] + text[b:]
        return text
    if k == "rounding" and {ch.public_value, ch.fork_value} == {"floor()", "ceil()"}:
        text = _swap_words(text, "floor", "ceiling")
        return re.sub(r"\b(round(?:s|ed|ing)?) (up|down)\b",
                      lambda m: f"{m.group(1)} {'down' if m.group(2) == 'up' else 'up'}", text, flags=re.I)
    if k == "base" and {ch.public_value, ch.fork_value} == {"0", "1"}:
        text = _swap_words(text, "zero-based", "one-based")
        return re.sub(r"\b((?:starting|starts|start|counting|numbered) (?:from|at)) (0|1|zero|one)\b",
                      lambda m: f"{m.group(1)} {dict(zip('01', '10')).get(m.group(2), 'one' if m.group(2) == 'zero' else 'zero')}",
                      text, flags=re.I)
    if k == "strip" and ch.fork_value in (".rstrip()", ".lstrip()") and ch.public_value == ".strip()":
        side = "trailing" if ch.fork_value == ".rstrip()" else "leading"
        return re.sub(r"\bleading and trailing\b|\btrailing and leading\b", side, text, flags=re.I)
    if k == "separator":
        try:
            pv, fv = pyast.literal_eval(ch.public_text).strip(), pyast.literal_eval(ch.fork_text).strip()
        except (ValueError, SyntaxError, AttributeError):
            return text
        if pv in _PUNCT_NAMES and fv in _PUNCT_NAMES:
            words = [w for w, c in _PUNCT_WORDS.items() if c == pv]
            for w in words:
                text = re.sub(rf"\b{w}(s?)\b", lambda m: _same_case(m.group(0), _PUNCT_NAMES[fv] + m.group(1)), text,
                              flags=re.I)
        return text
    return text


def _same_case(old: str, new: str) -> str:
    return new.capitalize() if old[:1].isupper() else new


def problems_of_edits(req: dict[str, str], changes: list[ForkChange]) -> list[str]:
    """What the edited requirement still says of a public value (the screening's token test)."""
    from benchmarks.locoeval.fork.screen import public_token
    from benchmarks.locoeval.verified.validity import token_in_text

    prose = " ".join(req.values())
    return [ch.key for ch in changes if (tok := public_token(ch)) and token_in_text(tok, prose)]


# -- turns ---------------------------------------------------------------------------------------------

def what(kind: str, value: str) -> str:
    """The words a detail turn says of a value of a change of ``kind``."""
    if kind == "order":
        first, _, then = value.partition("; then ")
        return f"`{first}` comes first, then `{then}`"
    if kind == "sort":
        if value.startswith("unsorted"):
            return "it keeps the input order, without sorting"
        return f"it sorts in {value.split(' ', 1)[0]} order"
    return {"scale": f"the value is {value}", "bound": f"the bound is {value}",
            "strictness": f"the comparison is `{value}`", "separator": f"the separator is {value}",
            "format": f"the format is {value}", "default": f"the fallback is {value}", "flag": f"it passes `{value}`",
            "membership": f"the accepted values are `{value}`", "case": f"it uses `{value}`",
            "side": f"it uses `{value}`", "encoding": f"the encoding is {value}",
            "exception": f"it raises `{value}`", "missing": f"the test for a missing value is `{value}`",
            "empty": f"the guard returns {value}", "strip": f"it uses `{value}`", "key": f"the key is {value}",
            "base": f"the count is `{value}`", "rounding": f"the rounding is `{value}`",
            "absent": f"the fallback is {value}", "errors": f"the error handler is {value}",
            "collection": f"the accepted values are `{value}`", "affix": f"the accepted prefixes or suffixes are `{value}`"
            }.get(kind, f"it is `{value}`")


def detail_text(fn: str, kind: str, claim: Claim, rng: random.Random) -> str:
    """An info or distractor turn: one template family for both."""
    opener = rng.choice(OPENERS).format(fn=fn)
    text = rng.choice(SHAPES).format(opener=opener, what=what(kind, claim.value), frag=claim.fragment)
    return text + rng.choice(TAILS)


def revision_text(fn: str, kind: str, true: Claim, wrong: Claim, rng: random.Random) -> str:
    return rng.choice(REVISIONS).format(fn=fn, what_true=what(kind, true.value), frag_true=true.fragment,
                                        frag_wrong=wrong.fragment)


def requirement_text(p: Prepared, rng: random.Random) -> str:
    sig = one_line(textwrap.dedent(p.inp.signature))
    head = rng.choice(REQUIREMENTS).format(fn=p.fn, file=p.inp.row["file"], sig=sig)
    func, args = one_line(p.requirement["Functionality"]), one_line(p.requirement["Arguments"])
    parts = [head, func] + ([f"Arguments and return value: {args}"] if args else []) + [rng.choice(REQUIREMENT_TAILS)]
    return " ".join(x for x in parts if x)


# -- the set ----------------------------------------------------------------------------------------------

def assign_distractors(tasks: list[Prepared], rng: random.Random) -> list[dict[str, str]]:
    """Give every task one distractor, at most PUBLIC_SHARE of them public. A task whose only possible
    distractor is public, once the public share is full, keeps no distractor (its decisions are still
    stated); returns those tasks with their reason."""
    forced = [p for p in tasks if not p.has_counterfactual()]
    free = [p for p in tasks if p.has_counterfactual()]
    bare: list[dict[str, str]] = []
    rng.shuffle(forced)
    while forced and len(forced) > int(PUBLIC_SHARE * (len(forced) + len(free))):
        p = forced.pop()
        p.distractor = None
        bare.append({"namespace": p.namespace, "reason": "no distractor: only a public one possible and the public "
                                                         "share is full"})
    forced_ids = {id(p) for p in forced}
    n = len(forced) + len(free)
    quota = int(PUBLIC_SHARE * n) - len(forced)
    order = list(free)
    rng.shuffle(order)
    public_free = {id(p) for p in order[:max(0, quota)]}
    for p in forced + free:
        mode = "public" if id(p) in public_free or id(p) in forced_ids else "counterfactual"
        sites = [i for i, opts in p.options.items() if any(c.mode == mode for c in opts)]
        i = rng.choice(sorted(sites))
        p.distractor = (i, next(c for c in p.options[i] if c.mode == mode))
    return bare


def plan(tasks: list[Prepared], seed: int) -> list[tuple[ProjectInput, list[Prepared], str]]:
    """``[(project, tasks, subset)]``: one target per sample unless the tasks allow MIN_SAMPLES samples of
    v2's sizes; subsets alternate so both have as many samples as can be."""
    by_project: dict[str, list[Prepared]] = {}
    for p in tasks:
        by_project.setdefault(p.project.project_path, []).append(p)
    multi = len(tasks) >= MIN_SAMPLES * sum(SIZES) / len(SIZES)
    out = []
    counts = {"single-hop": 0, "multi-hop": 0}
    for path in sorted(by_project):
        group = sorted(by_project[path], key=lambda p: p.namespace)
        random.Random(f"{seed}:{path}").shuffle(group)
        sizes = plan_sizes(len(group), random.Random(f"{seed}:{path}:sizes")) if multi else [1] * len(group)
        pos = 0
        for size in sizes:
            subset = "single-hop" if counts["single-hop"] <= counts["multi-hop"] else "multi-hop"
            counts[subset] += 1
            out.append((group[0].project, group[pos:pos + size], subset))
            pos += size
    return out


def _single_hop(blocks: list[tuple], fillers: list[dict], rng: random.Random) -> list[dict]:
    """Each task's turns together (requirement first, recap last), its details shuffled with fillers
    among them; fillers also between the tasks."""
    slots = [[] for _ in blocks] + [[]]
    inner: list[list[dict]] = [[] for _ in blocks]
    for f in fillers:
        k = rng.randrange(len(blocks) * 2 + 1)
        (slots[k // 2] if k % 2 == 0 or k // 2 >= len(blocks) else inner[k // 2]).append(f)
    out: list[dict] = []
    for i, (intro, infos, dis, rev, retro) in enumerate(blocks):
        details = ([dis] if dis is not None else []) + [*infos]
        rng.shuffle(details)
        if dis is not None:
            at = details.index(dis)
            details.insert(rng.randint(at + 1, len(details)), rev)
        for f in inner[i]:
            details.insert(rng.randint(0, len(details)), f)
        out += slots[i] + [intro, *details, retro]
    return out + slots[-1]


def _multi_hop(blocks: list[tuple], fillers: list[dict], rng: random.Random) -> list[dict]:
    """Every task introduced early (a seeded number of fillers among the introductions), the details of
    all tasks shuffled together with fillers in the middle, revisions and recaps late."""
    n_early = rng.randint(0, max(0, len(fillers) // 4))
    early, rest = fillers[:n_early], fillers[n_early:]
    head = [b[0] for b in blocks]
    for f in early:
        head.insert(rng.randint(0, len(head)), f)
    middle = [s for b in blocks for s in (b[2], *b[1]) if s is not None]
    rng.shuffle(middle)
    cut = len(rest) * 2 // 3
    for f in rest[:cut]:
        middle.insert(rng.randint(0, len(middle)), f)
    tail = [b[3] for b in blocks if b[3] is not None] + [b[4] for b in blocks] + rest[cut:]
    rng.shuffle(tail)
    return head + middle + tail


def compose_sample(sample_id: str, subset: str, project: ProjectInput, group: list[Prepared],
                   rng: random.Random) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One sample object and its verification rows."""
    reqs, verif, blocks, said = [], [], [], []
    for k, p in enumerate(group, 1):
        rid, fn = f"R{k}", p.fn
        target = target_of(p.inp, project.exceptions)
        fork_body = apply_changes(target, p.changes)
        truths = [Claim(ch.fork_value, ch.fork_fragment, fork_body) for ch in p.changes]
        gt_items, infos = [], []
        for i, (ch, claim) in enumerate(zip(p.changes, truths), 1):
            text = detail_text(fn, ch.kind, claim, rng)
            gt_items.append({"id": f"{rid}.I{i}", "text": text, "evidence": [ch.fork_fragment]})
            infos.append(_step("info", text + SUFFIX, f"State a decision of `{fn}`.", rid, [f"{rid}.I{i}"], fn))
        said += [ch.fork_fragment for ch in p.changes] + [ch.fragment for ch in p.changes]
        distractors, d_verif, d_bodies, dis, rev = [], {}, [], None, None
        if p.distractor is not None:
            d_idx, d_claim = p.distractor
            d_change, gt_id = p.changes[d_idx], f"{rid}.I{d_idx + 1}"
            d_text = detail_text(fn, d_change.kind, d_claim, rng)
            r_text = revision_text(fn, d_change.kind, truths[d_idx], d_claim, rng)
            said.append(d_claim.fragment)
            distractors = [{"id": f"{rid}.D1", "text": d_text, "revised_by": gt_id}]
            d_verif = {f"{rid}.D1": {"revised_by": gt_id, "kind": d_change.kind, "mode": d_claim.mode,
                                     "change": d_change.key, "value": d_claim.value, "fragment": d_claim.fragment}}
            d_bodies = [{"item_id": f"{rid}.D1", "body": d_claim.body}]
            dis = _step("distractor", d_text + SUFFIX, f"State a wrong detail of `{fn}` (revised later).", rid,
                        [f"{rid}.D1"], fn)
            rev = _step("revision", r_text + SUFFIX, f"Revise the wrong detail of `{fn}`.", rid, [gt_id], fn)
        row = p.inp.row
        reqs.append({"req_id": rid, "namespace": p.namespace, "completion_path": row["file"],
                     "signature": p.inp.signature,
                     "tests": list(p.inp.test_ids or p.inp.record.get("tests", [])),
                     "description": one_line(p.requirement["Functionality"]), "gt_items": gt_items,
                     "distractors": distractors})
        verif.append({
            "sample_id": sample_id, "req_id": rid, "namespace": p.namespace, "file": row["file"],
            "signature_line": row["signature_line"], "body_start": row["body_start"], "body_end": row["body_end"],
            "public_body_sha256": row.get("public_body_sha256"),
            "fork_body_sha256": hashlib.sha256(fork_body.encode()).hexdigest(),
            "items": {f"{rid}.I{i}": ch.record() for i, ch in enumerate(p.changes, 1)},
            "distractors": d_verif,
            "distractor_bodies": d_bodies,
            "item_changes": {f"{rid}.I{i}": [ch.key] for i, ch in enumerate(p.changes, 1)},
            "requirement_edits": p.edits})
        intro = _step("requirement", requirement_text(p, rng) + SUFFIX, f"Introduce `{fn}`.", rid, topic=fn)
        retro = _step("retrospective", rng.choice(RECAPS).format(fn=fn) + SUFFIX, f"Ask for a recap of `{fn}`.", rid,
                      [g["id"] for g in gt_items][:2], fn)
        blocks.append((intro, infos, dis, rev, retro))

    names = {p.fn for p in group}
    said_n = {norm(x) for x in said if x}
    usable = [s for s in project.symbols if s["name"] not in names and not any(x in norm(s["doc"]) for x in said_n)]
    core = 1 + sum(1 + len(b[1]) + 1 + (2 if b[2] is not None else 0) for b in blocks)
    n_turns = rng.randint(max(TURNS[0], core + 2), max(TURNS[1], core + 2))
    fillers = _fillers(n_turns - core, usable, rng)
    opening = _step("chat", rng.choice(OPENINGS).format(name=project.pypi_name, version=project.version) + SUFFIX,
                    "Open the session.")
    layout = _single_hop if subset == "single-hop" else _multi_hop
    outline = [opening] + layout(blocks, fillers, rng)
    steps = [{"turn": n, **s} for n, s in enumerate(_revision_before_recap(outline), 1)]
    repo: dict[str, Any] = dict(project.repo) if project.repo else \
        {"provider": "pypi", "name": project.pypi_name, "version": project.version}
    if project.sha256 and not project.repo:
        repo["sha256"] = project.sha256
    sample = {"id": sample_id, "subset": subset, "project_path": project.project_path, "repo": repo,
              "target_docstrings": "remove", "requirements": reqs, "outline": steps,
              "tasks": [{"req_id": r["req_id"], "kind": "function_generation",
                         "query": QUERY.format(fn=r["namespace"].rsplit(".", 1)[-1])} for r in reqs],
              "meta": {"set": SET_NAME, "generator": GENERATOR, "task_namespaces": [r["namespace"] for r in reqs]}}
    return sample, verif


def _sample_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name.lower())


def compose_set(tasks: list[TaskInput], projects: dict[str, ProjectInput], seed: int = 0,
                fails: DistractorCheck | None = None
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Samples, verification rows and a report (``dropped`` tasks with reasons, public share, the
    counterfactuals ``fails`` rejected) of a set."""
    dropped: list[dict[str, str]] = []
    prepared: list[Prepared] = []
    for inp in sorted(tasks, key=lambda t: t.row["namespace"]):
        ns = inp.row["namespace"]
        try:
            p = prepare(inp, projects[inp.row["project_path"]], random.Random(f"{seed}:{ns}:alt"), fails)
        except ComposeError as exc:
            dropped.append({"namespace": ns, "reason": str(exc)})
            continue
        left = problems_of_edits(p.requirement, p.changes)
        if left:
            dropped.append({"namespace": ns, "reason": f"the requirement still names a public value ({left})"})
            continue
        prepared.append(p)
    bare = assign_distractors(prepared, random.Random(f"{seed}:distractors"))
    samples, verification = [], []
    numbers: dict[str, int] = {}
    for project, group, subset in plan(prepared, seed):
        name = _sample_name(project.pypi_name)
        numbers[name] = numbers.get(name, 0) + 1
        sid = f"{name}-{numbers[name]:02d}-{'sh' if subset == 'single-hop' else 'mh'}"
        sample, ver = compose_sample(sid, subset, project, group, random.Random(f"{seed}:{sid}"))
        samples.append(sample)
        verification.extend(ver)
    modes = [d["mode"] for v in verification for d in v["distractors"].values()]
    report = {"validated": len(tasks), "composed": len(verification), "dropped": dropped, "no_distractor": bare,
              "distractor_modes": {m: modes.count(m) for m in sorted(set(modes))},
              "requirement_edits": sum(len(v["requirement_edits"]) for v in verification),
              "distractor_check": "not run" if fails is None else "counterfactual bodies run against the fork's tests",
              "counterfactuals_rejected": [r for p in prepared for r in p.rejected]}
    return samples, verification, report


# -- inputs from a screening file and the snapshots; writing the set ------------------------------------

def inputs_from_screen(rows: list[dict[str, Any]], *, manifest: Path | None = None,
                       deveval_data: Path | None = None) -> tuple[list[TaskInput], dict[str, ProjectInput]]:
    """Task and project inputs of validated rows: DevEval records, the snapshots' module texts,
    signatures, noise symbols and exception classes."""
    from benchmarks.deveval.providers import get_snapshot, reference_function
    from benchmarks.deveval.tasks import load_manifest, parse_task
    from benchmarks.locoeval.fork.screen import is_test_file, load_records
    from benchmarks.locoeval.verified.compose import repository_symbols
    from benchmarks.locoeval.verified.validity import text_files

    man = load_manifest(manifest)
    records = load_records(deveval_data)
    tasks: list[TaskInput] = []
    projects: dict[str, ProjectInput] = {}
    by_project: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_project.setdefault(r["project_path"], []).append(r)
    for path, prow in sorted(by_project.items()):
        entry = man.project(path)
        if entry is None:
            raise ComposeError(f"project {path} (screening rows {prow[0]['namespace']} ...) is not in the manifest")
        if entry.version != prow[0]["version"]:
            raise ComposeError(f"{prow[0]['namespace']}: screened at {path} {prow[0]['version']}, "
                               f"the manifest has {entry.version}")
        root = Path(get_snapshot(entry.repo_spec(), manifest=man))
        family = ExceptionFamily()
        if any(c["kind"] == "exception" for r in prow for c in r["changes"]):
            family = ExceptionFamily.of_files({k: v for k, v in text_files(root) if not is_test_file(k)})
        spec = entry.repo_spec()
        projects[path] = ProjectInput(path, entry.pypi_name, entry.version, entry.sdist_sha256,
                                      repository_symbols(root, {r["file"] for r in prow}), family,
                                      repo=None if spec["provider"] == "pypi" else spec)
        for r in prow:
            ns = r["namespace"]
            if ns not in records:
                raise ComposeError(f"{ns}: no DevEval record (--deveval-data or $RECONMEM_DEVEVAL_DATA)")
            ref = reference_function(root, parse_task(records[ns], ns), entry.task(ns))
            if ref["file"] != r["file"] or ref["signature_line"] != r["signature_line"]:
                raise ComposeError(f"{ns}: the snapshot's reference is at {ref['file']}:{ref['signature_line']}, "
                                   f"the row says {r['file']}:{r['signature_line']}")
            tasks.append(TaskInput(r, records[ns], (root / r["file"]).read_bytes().decode("utf-8"), ref["signature"]))
    return tasks, projects


def _versions(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many rows each (catalogue, derivation) version pair made."""
    out: dict[str, int] = {}
    for r in rows:
        key = f"catalogue {r.get('catalogue_version')}, derivation {r.get('derive_version')}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


class ForkTestCheck:
    """``(namespace, body) -> fails``: the body in its target, the fork's tests of ``forks.jsonl`` run by the
    local executor (``fork.judge.run_fork_body``); outcomes cached by project, fork tests, judging ids and body sha256
    (``verified.screening.OutcomeCache``), so a rerun runs nothing again. A timeout is no failure."""

    def __init__(self, forks: dict[str, Any], cache: Path, *, manifest: Path | None = None,
                 timeout_s: float = 180.0) -> None:
        from benchmarks.deveval.tasks import load_manifest
        from benchmarks.locoeval.verified.screening import OutcomeCache
        from benchmarks.sandbox import build_executor

        self.forks = forks
        self.cache = OutcomeCache(cache)
        self.manifest = load_manifest(manifest)
        self.executor = build_executor({"name": "local", "timeout_s": timeout_s})
        self.timeout_s = timeout_s
        self.projects: dict[str, tuple[Path, Any]] = {}
        self.runs = 0

    def _project(self, path: str) -> tuple[Path, Any]:
        from benchmarks.deveval.providers import get_snapshot
        from benchmarks.deveval.tasks import env_spec_for

        if path not in self.projects:
            entry = self.manifest.project(path)
            env = env_spec_for(entry)
            self.executor.prepare(env)
            self.projects[path] = (Path(get_snapshot(entry.repo_spec(), manifest=self.manifest)), env)
        return self.projects[path]

    def __call__(self, namespace: str, body: str) -> bool:
        from benchmarks.locoeval.fork.judge import run_fork_body

        rec = self.forks[namespace]
        tests = hashlib.sha256(("".join(t.fork_sha256 for _, t in sorted(rec.tests.items())) + "\n"
                                + "\n".join(rec.test_ids)).encode()).hexdigest()     # the fork's tests and which judge
        scope = f"{rec.project_path}@{rec.version}:{tests[:16]}"
        hit = self.cache.get(scope, namespace, body)
        if hit is None:
            root, env = self._project(rec.project_path)
            hit = run_fork_body(self.executor, root, env, [rec], rec, body, timeout_s=self.timeout_s,
                                label="distractor").outcome
            self.runs += 1
            self.cache.put(scope, namespace, body, hit)
        return hit in ("fail", "error")


def build(screen: Path, *, seed: int = 0, out_dir: Path = SET_DIR, manifest: Path | None = None,
          deveval_data: Path | None = None, check: bool = True, check_cache: Path | None = None) -> dict[str, Any]:
    """Compose the set from a screening file into ``out_dir``; returns generation.json's content.
    ``check`` (with ``forks.jsonl`` in ``out_dir``): counterfactual distractors whose body passes the
    fork's tests are left out (:class:`ForkTestCheck`, cached in ``check_cache``)."""
    from benchmarks.locoeval.loader import dump_samples
    from benchmarks.records import atomic_write_json, write_jsonl

    from benchmarks.locoeval.fork.ship import FORKS_FILE, read_forks

    out = Path(out_dir)
    rows = validated_rows(screen)
    shipped = read_forks(out / FORKS_FILE) if (out / FORKS_FILE).is_file() else None
    not_shipped = [{"namespace": r["namespace"], "reason": f"not in {FORKS_FILE}"} for r in rows
                   if shipped is not None and r["namespace"] not in shipped]
    rows = [r for r in rows if shipped is None or r["namespace"] in shipped]
    tasks, projects = inputs_from_screen(rows, manifest=manifest, deveval_data=deveval_data)
    for t in tasks:
        if shipped is not None:
            t.test_ids = list(shipped[t.row["namespace"]].test_ids)
    fails = None
    if check and shipped is not None:
        from reconmem.platform.downloads import cache_root

        fails = ForkTestCheck(shipped, check_cache or cache_root() / SET_NAME / "distractor_outcomes.jsonl",
                              manifest=manifest)
    samples, verification, report = compose_set(tasks, projects, seed, fails)
    report["dropped"] = not_shipped + report["dropped"]
    out.mkdir(parents=True, exist_ok=True)
    dump_samples(samples, out / "samples.jsonl")
    write_jsonl(out / "samples.verification.jsonl", verification)
    gen = {"set": SET_NAME, "generator": GENERATOR, "seed": seed,
           "screen": {"path": Path(screen).name, "sha256": hashlib.sha256(Path(screen).read_bytes()).hexdigest(),
                      "versions_of_rows": _versions(rows), "catalogue_version_now": CATALOGUE_VERSION,
                      "derive_version_now": DERIVE_VERSION},
           "projects": [{"project_path": p.project_path, "pypi_name": p.pypi_name, "version": p.version}
                        for _, p in sorted(projects.items())],
           **report, "statistics": set_statistics(samples, verification)}
    atomic_write_json(out / "generation.json", gen)
    return gen

