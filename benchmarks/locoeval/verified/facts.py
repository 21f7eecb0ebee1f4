"""Facts of a reference body, each with a counterfactual drawn from the project's vocabulary.

A fact is one token of the reference body that decides behaviour, stated with its code context:

| kind | token | counterfactual token (see ``distractors``) |
|---|---|---|
| ``raise`` | the class a ``raise`` uses | another class raised in the module / project |
| ``constant`` | an ``UPPER_CASE`` name or ``mod.UPPER_CASE`` attribute | another constant of the same kind |
| ``string`` | a string constant (not a docstring, message or log text) | another string of the same shape |
| ``number`` | a number other than 0 / 1 | another number of the module, or a neighbouring value |
| ``bool`` | ``True`` / ``False`` | the other one |
| ``call`` | a called function / method | another module function, class method, or method called on that object |
| ``attribute`` | an attribute read from ``self`` / ``cls`` | another data attribute of the class |
| ``compare`` | a comparison operator | its negation (``<`` / ``>=``, ``in`` / ``not in``, ``is`` / ``is not``) |

The **literal** of a fact is the one-line code fragment around the token that a turn states
(the token's enclosing expression, widened to its statement when that stays short); the
**counter-literal** is the same fragment with the counterfactual token. The counterfactual body
is the reference body with only that token replaced.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from benchmarks.locoeval.verified.distractors import CONSTANT_NAME, Vocabulary, skip_constant
from benchmarks.locoeval.verified.source import SourceText, dedent_body, fragment_node, one_line, parents_of

KIND_ORDER = ("raise", "constant", "string", "number", "call", "attribute", "bool", "compare")
_NEGATE = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.In: ast.NotIn,
           ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_OP_TEXT = {ast.Lt: "<", ast.GtE: ">=", ast.LtE: "<=", ast.Gt: ">", ast.In: "in", ast.NotIn: "not in",
            ast.Is: "is", ast.IsNot: "is not"}
_OP_RE = re.compile(r"not\s+in\b|is\s+not\b|<=|>=|<|>|\bin\b|\bis\b")


@dataclass
class Fact:
    """One fact of a reference body with one counterfactual."""

    kind: str
    lines: list[list[int]]          # grounding: file line ranges inside the reference body
    literal: str                    # the fragment a turn states
    counter_literal: str            # the same fragment with the counterfactual token
    token: str
    counter_token: str
    source: str                     # the counterfactual token's origin: module | project | class | neighbour | negation
    counterfactual_body: str        # the reference body following the counterfactual (dedented)
    key: str                        # position of the token (one fact per token)
    condition: str = ""             # raise: the enclosing if-test, when short
    in_else: bool = False           # raise: in the else branch of that test
    in_requirement: bool = False    # its token or counter-token occurs in the requirement text

    @property
    def change(self) -> str:
        return f"{self.token} -> {self.counter_token}"

    def statements(self, fn: str) -> dict[str, str]:
        """The info, distractor and revision texts of a turn stating this fact (seeded by its key)."""
        v = int(hashlib.sha256(self.key.encode()).hexdigest(), 16) % 2
        if self.kind == "raise":
            when = ""
            if self.condition:
                when = f"when `{self.condition}` does not hold, " if self.in_else else f"when `{self.condition}`, "
            lead = (f"For `{fn}`: {when}it fails with", f"One more thing about `{fn}`: {when}it must do")[v]
            return {"text": f"{lead} `{self.literal}`.",
                    "distractor": f"{lead} `{self.counter_literal}`.",
                    "revision": f"Correction for `{fn}`: {when}it is `{self.literal}` -- not "
                                f"`{self.counter_literal}` as I said earlier."}
        if self.kind == "compare":
            lead = (f"For `{fn}`: the condition it checks is", f"About `{fn}`: the check there is")[v]
            return {"text": f"{lead} `{self.literal}`.", "distractor": f"{lead} `{self.counter_literal}`.",
                    "revision": f"Correction for `{fn}`: the check is `{self.literal}`, not "
                                f"`{self.counter_literal}` as I said earlier."}
        if self.kind in ("call", "attribute"):
            verb = "calls" if self.kind == "call" else "reads"
            lead = (f"For `{fn}`: it {verb} `{{}}` -- that is `{{}}`.", f"A detail of `{fn}`: the code has `{{}}` "
                    f"(it {verb} `{{}}`).")[v]
            return {"text": lead.format(self.literal, self.token),
                    "distractor": lead.format(self.counter_literal, self.counter_token),
                    "revision": f"Correction for `{fn}`: it is `{self.literal}` (it {verb} `{self.token}`), not "
                                f"`{self.counter_token}` as I said earlier."}
        what = {"constant": "the constant", "string": "the string", "number": "the value",
                "bool": "the flag"}[self.kind]
        lead = (f"For `{fn}`: it has `{{}}` -- {what} there is `{{}}`.",
                f"A detail of `{fn}`: the code says `{{}}` ({what} `{{}}`).")[v]
        return {"text": lead.format(self.literal, self.token),
                "distractor": lead.format(self.counter_literal, self.counter_token),
                "revision": f"Correction for `{fn}`: it is `{self.literal}` ({what} `{self.token}`), not "
                            f"`{self.counter_token}` as I said earlier."}

    def record(self) -> dict[str, Any]:
        """The verification-file record of this fact."""
        return {"kind": self.kind, "lines": self.lines, "facts": [self.literal], "literal": self.literal,
                "counter_literal": self.counter_literal, "token": self.token, "counter_token": self.counter_token,
                "source": self.source, "change": self.change, "in_requirement": self.in_requirement,
                "counterfactual_body": self.counterfactual_body}


@dataclass
class FactSite:
    """A token of the body that can be a fact, with its counterfactual tokens in preference order."""

    kind: str
    key: str
    node: ast.AST                   # the node whose source span the counterfactual replaces
    context: ast.AST                # the fragment's node
    token: str
    alternatives: list[tuple[str, str]] = field(default_factory=list)
    condition: str = ""
    in_else: bool = False


class BodyFacts:
    """The fact sites of one reference function and the facts built from them."""

    def __init__(self, text: str, func: ast.FunctionDef | ast.AsyncFunctionDef, body_start: int, body_end: int,
                 vocabulary: Vocabulary, class_name: str | None = None) -> None:
        self.src = SourceText(text)
        self.class_name = class_name
        self.func = func
        self.body_start, self.body_end = body_start, body_end
        self.voc = vocabulary
        self.parents = parents_of(func)
        self.body_lo, self.body_hi = self.src.starts[body_start - 1], self.src.starts[body_end]
        self.body_text = text[self.body_lo:self.body_hi]

    def reference_body(self) -> str:
        return dedent_body(self.body_text)

    def _inside(self, node: ast.AST) -> bool:
        return self.body_start <= getattr(node, "lineno", 0) and getattr(node, "end_lineno", 10**9) <= self.body_end

    def _replaced(self, node: ast.AST, new: str) -> str:
        a, b = self.src.span(node)
        return dedent_body(self.body_text[:a - self.body_lo] + new + self.body_text[b - self.body_lo:])

    def _enclosing_if(self, node: ast.AST) -> tuple[ast.If | None, bool]:
        cur = node
        while cur in self.parents:
            par = self.parents[cur]
            if isinstance(par, ast.If):
                return par, cur in par.orelse
            if isinstance(par, (ast.FunctionDef, ast.AsyncFunctionDef, ast.For, ast.While, ast.Try, ast.With)):
                return None, False
            cur = par
        return None, False

    def sites(self) -> list[FactSite]:
        """Every fact site of the body, in KIND_ORDER then line order (one per token position)."""
        out: dict[str, FactSite] = {}
        for stmt in self.func.body:
            for n in ast.walk(stmt):
                if not self._inside(n):
                    continue
                site = self._site(n)
                if site is not None and site.alternatives and site.key not in out:
                    out[site.key] = site
        return sorted(out.values(), key=lambda s: (KIND_ORDER.index(s.kind), s.node.lineno, s.node.col_offset))

    def _site(self, n: ast.AST) -> FactSite | None:
        key = f"{n.lineno}:{n.col_offset}"
        if isinstance(n, ast.Raise) and n.exc is not None:
            target = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
            if not isinstance(target, (ast.Name, ast.Attribute)):
                return None
            seg = self.src.segment(n)
            if n.end_lineno - n.lineno > 2 or len(one_line(seg)) > 160 or "#" in seg or '"""' in seg or "'''" in seg:
                return None
            exc = self.src.segment(target)
            test, in_else = self._enclosing_if(n)
            cond = ""
            if test is not None and test.test.lineno == test.test.end_lineno \
                    and len(self.src.segment(test.test)) <= 80:
                cond = self.src.segment(test.test)
            return FactSite("raise", "raise:" + key, target, n, exc, self.voc.exception_alternatives(exc),
                            cond, in_else)
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in _NEGATE:
            ctx = fragment_node(self.src, self.parents, n)
            if ctx is None:
                return None
            new_op = _OP_TEXT[_NEGATE[type(n.ops[0])]]
            return FactSite("compare", "compare:" + key, n, ctx, _OP_TEXT[type(n.ops[0])], [(new_op, "negation")])
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load):
            site = self._name_site(n, key)
            if site is not None:
                return site
            name = n.id if isinstance(n, ast.Name) else n.attr
            if not CONSTANT_NAME.match(name) or len(name) < 3 or isinstance(self.parents.get(n), ast.Attribute):
                return None
            if skip_constant(self.parents, n, self.func) or isinstance(self.parents.get(n), ast.Raise):
                return None
            ctx = fragment_node(self.src, self.parents, n)
            if ctx is None:
                return None
            token = self.src.segment(n)
            return FactSite("constant", "constant:" + key, n, ctx, token, self.voc.constant_alternatives(token))
        if isinstance(n, ast.Constant) and not skip_constant(self.parents, n, self.func):
            v = n.value
            ctx = fragment_node(self.src, self.parents, n)
            if ctx is None:
                return None
            token = self.src.segment(n)
            if isinstance(v, bool):
                return FactSite("bool", "bool:" + key, n, ctx, token, [(repr(not v), "negation")])
            if isinstance(v, (int, float)) and v not in (0, 1):
                return FactSite("number", "number:" + key, n, ctx, token, self.voc.number_alternatives(v))
            if isinstance(v, str) and "\n" not in v and len(v) <= 60 and "\n" not in token:
                return FactSite("string", "string:" + key, n, ctx, token, self.voc.string_alternatives(v))
        return None

    def _name_site(self, n: ast.Name | ast.Attribute, key: str) -> FactSite | None:
        """A called function / method, or an attribute read from ``self`` / ``cls``."""
        par = self.parents.get(n)
        if isinstance(par, ast.Raise) or skip_constant(self.parents, n, self.func):
            return None
        is_call = isinstance(par, ast.Call) and par.func is n
        if isinstance(n, ast.Name):
            if not is_call or n.id not in self.voc.functions:
                return None
            base, name = "", n.id
        else:
            base = self.src.segment(n.value)
            name = n.attr
            if "\n" in base or name.startswith("__"):
                return None
            if not is_call and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")):
                return None
            if not is_call and isinstance(par, ast.Attribute):
                return None  # self.x.y: the fact would be about y
        ctx = fragment_node(self.src, self.parents, n)
        if ctx is None:
            return None
        token = self.src.segment(n)
        if is_call:
            return FactSite("call", "call:" + key, n, ctx, token,
                            self.voc.call_alternatives(base, name, self.class_name))
        return FactSite("attribute", "attribute:" + key, n, ctx, token,
                        self.voc.attribute_alternatives(base, name, self.class_name))

    def fact(self, site: FactSite, alternative: tuple[str, str]) -> Fact:
        """The fact of ``site`` with one of its counterfactual tokens."""
        alt, source = alternative
        ctx_a, ctx_b = self.src.span(site.context)
        tok_a, tok_b = self.src.span(site.node)
        literal = self.src.text[ctx_a:ctx_b]
        if site.kind == "compare":
            cmp = site.node
            gap_a, gap_b = self.src.span(cmp.left)[1], self.src.span(cmp.comparators[0])[0]
            gap = self.src.text[gap_a:gap_b]
            m = _OP_RE.search(gap)
            new_gap = gap[:m.start()] + alt + gap[m.end():]
            counter_literal = self.src.text[ctx_a:gap_a] + new_gap + self.src.text[gap_b:ctx_b]
            a, b = gap_a, gap_b
            body = dedent_body(self.body_text[:a - self.body_lo] + new_gap + self.body_text[b - self.body_lo:])
        else:
            counter_literal = self.src.text[ctx_a:tok_a] + alt + self.src.text[tok_b:ctx_b]
            body = self._replaced(site.node, alt)
        lines = sorted({(site.context.lineno, site.context.end_lineno)})
        return Fact(kind=site.kind, lines=[list(r) for r in lines], literal=one_line(literal),
                    counter_literal=one_line(counter_literal), token=site.token, counter_token=alt, source=source,
                    counterfactual_body=body, key=site.key, condition=site.condition, in_else=site.in_else)
