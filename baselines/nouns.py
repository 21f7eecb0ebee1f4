"""Noun lemmas of a text, offline (LD-Agent topics).

LD-Agent takes the nouns of an event summary / query (POS tagging) and lemmatises them. No POS
model can be downloaded here, so this module uses a documented heuristic over lexicons that ship
inside PyPI wheels:

- ``lemminflect`` (0.2.3; its wheel holds the SPECIALIST-lexicon lemma tables) gives, for a word,
  the parts of speech it can have and the lemma for each. A word with only a NOUN reading is a noun.
- A word that can be NOUN or VERB is taken as a verb right after a verb cue (``to``, a pronoun
  subject, a modal, ``please`` ...) or as the first word of a sentence (imperative), else as a noun.
  A word that can be NOUN or ADJ is taken as an adjective when another open-class word follows it.
- Words with no reading in the lexicon are technical terms (``boltons``, ``maxsize``, ``LRU``) and
  count as nouns; code identifiers (``snake_case``, ``camelCase``, ``dotted.names``) are nouns too
  and are kept verbatim (lower-cased). Their lemma comes from ``simplemma`` (2.0.0).
- Closed-class words (determiners, pronouns, prepositions, conjunctions, auxiliaries) never count.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:'[a-z]+)?|[.!?;:\n]")
_SENTENCE_END = {".", "!", "?", ";", ":", "\n"}
_CLOSED_CLASS = set("""
a an the this that these those some any each every no all both either neither such what which whose whom who
i me my mine we us our ours you your yours he him his she her hers it its they them their theirs myself itself
ourselves yourself yourselves themselves one ones
of in on at by for with about against between into through during before after above below to from up down out
off over under again further then once here there when where why how than too very so just also only own same
and or but nor if because as until while although though unless whether
is are was were be been being am have has had having do does did doing done can could should would will shall
may might must not don't doesn't didn't isn't aren't wasn't weren't won't can't couldn't shouldn't wouldn't
let's it's that's there's i'm i've i'd i'll we're we've you're you've they're yes ok okay please thanks thank
more most other another many much few several lot lots via etc e.g i.e
""".split())
_VERB_CUES = set("""
to i we you they he she it can could should would will shall may might must please let's don't doesn't didn't
not never also always just then we'll i'll you'll let
""".split())


@lru_cache(maxsize=50_000)
def _readings(word: str) -> dict[str, tuple[str, ...]]:
    import lemminflect

    return dict(lemminflect.getAllLemmas(word))


@lru_cache(maxsize=50_000)
def _simple_lemma(word: str) -> str:
    import simplemma

    return simplemma.lemmatize(word, lang="en").lower()


def _is_identifier(token: str) -> bool:
    return "_" in token or "." in token or bool(re.search(r"[a-z][A-Z]", token)) or bool(re.search(r"\d", token))


def _followed_by_word(tokens: list[str], position: int) -> bool:
    """True when the next token is an open-class word (attributive use: "short docstrings")."""
    if position + 1 >= len(tokens):
        return False
    nxt = tokens[position + 1]
    return nxt not in _SENTENCE_END and nxt.lower() not in _CLOSED_CLASS


def noun_lemmas(text: str) -> list[str]:
    """Distinct noun lemmas of ``text``, in order of first occurrence (lower-case)."""
    out: list[str] = []
    previous = "\n"  # start of text = start of a sentence
    tokens = _TOKEN.findall(text)
    for position, token in enumerate(tokens):
        if token in _SENTENCE_END:
            previous = "\n"
            continue
        word = token.lower()
        lemma: str | None = None
        if _is_identifier(token):
            lemma = word
        elif word not in _CLOSED_CLASS and len(word) >= 2 and "'" not in word:
            readings = _readings(word) if token.islower() or token.istitle() else _readings(token)
            if not readings:
                lemma = _simple_lemma(word)  # not in the lexicon: technical term / acronym
            elif "NOUN" in readings:
                verb_use = "VERB" in readings and (previous == "\n" or previous in _VERB_CUES)
                adjective_use = "ADJ" in readings and _followed_by_word(tokens, position)
                if not verb_use and not adjective_use:
                    lemma = readings["NOUN"][0].lower()
            elif "PROPN" in readings:
                lemma = word
        if lemma and lemma not in out:
            out.append(lemma)
        previous = word
    return out
