"""Code retrieval backends: ``dense`` (the paper's), ``bm25`` and ``hybrid``, for every method.

Every place that retrieves repository code -- the baselines' unified repository adaptation
(``RepositoryIndex.search`` through ``baselines.repo_context``), Mem0^R's repository search and
ReConMem's code-side routes (repository-wide k31 and structural-graph k32) -- ranks with the
backend named by :class:`RetrieverSpec` (the run's ``retriever`` config group, carried by
``Session.retriever``):

* ``dense``: cosine similarity of all-MiniLM-L6-v2 vectors (:mod:`reconmem.platform.code.search`);
  the default and the paper's retrieval, unchanged.
* ``bm25``: Okapi BM25 (``bm25s``, Lucene variant, ``k1``/``b``) over a code-aware tokenisation
  (:func:`code_tokens`): identifiers are split on underscores and case changes, lower-cased and
  lemmatised, and the whole compound identifier is kept beside its parts. An entity's document is its path, signature
  and full source; no embedding is computed.
* ``hybrid``: reciprocal-rank fusion of the two rankings, each cut at ``depth``:
  ``score(e) = sum over rankings of 1 / (rrf_k + rank(e))`` (rank from 1).

Ties are broken by repository order everywhere, as in the dense search. Lexical indexes are built
lazily, once per repository index object, entity kinds and BM25 parameters.
"""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping, Sequence

import numpy as np

from reconmem.platform.vectors import top_k

if TYPE_CHECKING:                      # annotations only: the index imports this module
    from reconmem.platform.code.entities import EntitySource

DENSE, BM25, HYBRID = "dense", "bm25", "hybrid"
RETRIEVERS = (DENSE, BM25, HYBRID)

Ranking = list[tuple[str, float]]

_MEMO: "weakref.WeakKeyDictionary[Any, dict[tuple, Any]]" = weakref.WeakKeyDictionary()
_MEMO_LOCK = threading.Lock()


@dataclass(frozen=True)
class RetrieverSpec:
    """Which backend ranks repository code, with its parameters."""

    name: str = DENSE
    k1: float = 1.5  # BM25 term-frequency saturation
    b: float = 0.75  # BM25 length normalisation
    rrf_k: int = 60  # reciprocal-rank fusion constant
    depth: int = 100  # each ranking is cut here before fusion

    def __post_init__(self) -> None:
        if self.name not in RETRIEVERS:
            raise ValueError(f"retriever: unknown backend {self.name!r}; choose from {list(RETRIEVERS)}")
        if self.k1 < 0 or not 0 <= self.b <= 1 or self.rrf_k < 0 or self.depth < 1:
            raise ValueError(f"retriever={self.name}: need k1 >= 0, 0 <= b <= 1, rrf_k >= 0, depth >= 1")

    @classmethod
    def of(cls, value: "RetrieverSpec | str | Mapping[str, Any] | None") -> "RetrieverSpec":
        """A spec from a name, a config mapping (``name``, ``k1``, ``b``, ``rrf_k``, ``depth``; other keys
        such as ``label`` are ignored) or None (dense)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            return cls(name=value)
        data = dict(value)
        fields = {k: data[k] for k in ("k1", "b", "rrf_k", "depth") if data.get(k) is not None}
        return cls(name=str(data.get("name") or DENSE), **fields)

    def record(self) -> dict[str, Any]:
        """What the manifest records: the backend and the parameters it uses."""
        out: dict[str, Any] = {"name": self.name}
        if self.name in (BM25, HYBRID):
            out.update(k1=self.k1, b=self.b, tokeniser="code_tokens:v1", library=f"bm25s=={_bm25s_version()}")
        if self.name == HYBRID:
            out.update(rrf_k=self.rrf_k, depth=self.depth, dense="all-MiniLM-L6-v2")
        return out


def _bm25s_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bm25s")
    except PackageNotFoundError:
        return "missing"


# ---------------------------------------------------------------------------------------- tokens
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# English function words: frequent in requirement text, carry no code meaning.
STOPWORDS = frozenset(
    "a an and are as at be been but by can do does for from has have if in into is it its itself no not of on "
    "or such that the their then there these they this to was were when which while will with".split()
)


@lru_cache(maxsize=200_000)
def _lemma(token: str) -> str:
    """English lemma of a word of four letters or more (shorter parts are mostly abbreviations)."""
    if len(token) < 4 or not token.isalpha():
        return token
    import simplemma

    return simplemma.lemmatize(token, lang="en").lower()


def code_tokens(text: str) -> list[str]:
    """Lower-case tokens of ``text`` for BM25: identifiers split on ``_`` and case changes
    (``parseHTTPHeader_value`` -> ``parsehttpheader_value``, ``parse``, ``http``, ``header``, ``value``: the
    compound kept beside its parts), each word part of four letters or more lemmatised (simplemma,
    English: ``returns`` -> ``return``), one-character tokens and :data:`STOPWORDS` dropped."""
    out: list[str] = []
    for word in _WORD.findall(text):
        parts = [_lemma(p.lower()) for piece in word.split("_") if piece for p in _PART.findall(piece)]
        whole = word.strip("_").lower()
        if len(parts) > 1 and len(whole) > 1:
            out.append(whole)
        out.extend(parts)
    return [t for t in out if len(t) > 1 and t not in STOPWORDS]


def lexical_text(index: EntitySource, path: str) -> str:
    """The document BM25 indexes for an entity: path, signature and full source."""
    e = index.entities[path]
    return f"{e.path}\n{e.signature}\n{index.source(path)}"


# ---------------------------------------------------------------------------------------- BM25
class LexicalIndex:
    """BM25 over a repository's entities of ``kinds`` (one document per entity, repository order)."""

    def __init__(self, repo: EntitySource, kinds: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        import bm25s

        kinds_t = set(kinds)
        self.paths = [p for p, e in repo.entities.items() if e.kind in kinds_t]
        self.rows = {p: i for i, p in enumerate(self.paths)}
        self._bm25: Any = None
        if self.paths:
            self._bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
            self._bm25.index([code_tokens(lexical_text(repo, p)) for p in self.paths], show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (zeros when no query token is in the index)."""
        if self._bm25 is None:
            return np.zeros(0, np.float32)
        ids = self._bm25.get_tokens_ids(code_tokens(query))
        if not ids:
            return np.zeros(len(self.paths), np.float32)
        return np.asarray(self._bm25.get_scores_from_ids(ids), dtype=np.float32)

    def top_k(self, query: str, k: int, *, among: Collection[str] | None = None) -> Ranking:
        """The ``k`` best entities with a positive score (ties by repository order); ``among``
        restricts the ranking to those paths."""
        if k <= 0 or not self.paths:
            return []
        scores = self.scores(query)
        if among is not None:
            mask = np.zeros(len(self.paths), bool)
            rows = [self.rows[p] for p in among if p in self.rows]
            mask[rows] = True
            scores = np.where(mask, scores, 0.0).astype(np.float32)
        positive = int(np.count_nonzero(scores > 0))
        return [(self.paths[i], s) for i, s in top_k(scores, min(k, positive))]


def lexical_index(repo: EntitySource, kinds: Sequence[str], spec: RetrieverSpec | None = None) -> LexicalIndex:
    """The memoised :class:`LexicalIndex` of ``repo`` for ``kinds`` and the spec's BM25 parameters."""
    spec = spec or RetrieverSpec(BM25)
    key = ("bm25", tuple(sorted(set(kinds))), spec.k1, spec.b)
    with _MEMO_LOCK:
        found = _MEMO.setdefault(repo, {}).get(key)
    if found is None:
        found = LexicalIndex(repo, key[1], k1=spec.k1, b=spec.b)
        with _MEMO_LOCK:
            found = _MEMO.setdefault(repo, {}).setdefault(key, found)
    return found


def repository_order(repo: EntitySource) -> dict[str, int]:
    """Entity path -> position in the repository (the tie-break of every ranking)."""
    with _MEMO_LOCK:
        found = _MEMO.setdefault(repo, {}).get(("order",))
    if found is None:
        found = {p: i for i, p in enumerate(repo.entities)}
        with _MEMO_LOCK:
            _MEMO.setdefault(repo, {})[("order",)] = found
    return found


# ---------------------------------------------------------------------------------------- fusion
def reciprocal_rank_fusion(rankings: Sequence[Ranking], k: int, *, rrf_k: int = 60,
                           order: Mapping[str, int] | None = None) -> Ranking:
    """Fuse rankings (best first) by ``sum 1 / (rrf_k + rank)``; ties by ``order`` (then path)."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (path, _) in enumerate(ranking, start=1):
            fused[path] = fused.get(path, 0.0) + 1.0 / (rrf_k + rank)
    big = len(order) if order is not None else 0
    ranked = sorted(fused.items(), key=lambda ps: (-ps[1], order.get(ps[0], big) if order is not None else 0, ps[0]))
    return [(p, round(s, 8)) for p, s in ranked[:max(0, k)]]


def rank_code(spec: RetrieverSpec, k: int, *, dense: Callable[[int], Ranking], lexical: Callable[[int], Ranking],
              order: Mapping[str, int] | None = None) -> Ranking:
    """Top-``k`` by the spec's backend, given the dense and the lexical ranking (each ``n -> top n``);
    only the backend's own rankings are computed."""
    if k <= 0:
        return []
    if spec.name == DENSE:
        return dense(k)
    if spec.name == BM25:
        return lexical(k)
    depth = max(k, spec.depth)
    return reciprocal_rank_fusion([dense(depth), lexical(depth)], k, rrf_k=spec.rrf_k, order=order)


def search(index: EntitySource, query: str, embedder: Any, *, k: int, kinds: Sequence[str],
           retriever: "RetrieverSpec | str | None" = None) -> Ranking:
    """Top-``k`` (path, score) of entities of ``kinds`` for ``query`` by the chosen backend (score:
    cosine, BM25 or fused reciprocal rank)."""
    import reconmem.platform.code.search as dense_search

    spec = RetrieverSpec.of(retriever)
    if spec.name == DENSE:
        return dense_search.search(index, query, embedder, k=k, kinds=kinds)
    return rank_code(spec, k, dense=lambda n: dense_search.search(index, query, embedder, k=n, kinds=kinds),
                     lexical=lambda n: lexical_index(index, kinds, spec).top_k(query, n),
                     order=repository_order(index))


class CodeRetriever:
    """ReConMem's code-side ranking: repository-wide (:meth:`repository`) and among the entities
    already in its structural graph (:meth:`among`), by the spec's backend."""

    def __init__(self, repo: EntitySource, vectors: Any, kinds: Sequence[str],
                 retriever: "RetrieverSpec | str | None" = None) -> None:
        self.repo = repo
        self.vectors = vectors  # RepositoryVectors: the dense ranking space
        self.kinds = tuple(kinds)
        self.spec = RetrieverSpec.of(retriever)

    def _lexical(self) -> LexicalIndex:
        return lexical_index(self.repo, self.kinds, self.spec)

    def _text(self, text: str | None) -> str:
        if text is None:
            raise ValueError(f"retriever={self.spec.name} needs the query text, not only its vector")
        return text

    def repository(self, vector: np.ndarray, k: int, *, text: str | None = None) -> Ranking:
        """Top-``k`` code entities of the whole repository for the query (``vector``, ``text``)."""
        if self.spec.name == DENSE:
            return self.vectors.top_k(vector, k)
        return rank_code(self.spec, k, dense=lambda n: self.vectors.top_k(vector, n),
                         lexical=lambda n: self._lexical().top_k(self._text(text), n),
                         order=repository_order(self.repo))

    def among(self, paths: Collection[str], dense: Callable[[int], Ranking], k: int, *,
              text: str | None = None) -> Ranking:
        """Top-``k`` among ``paths`` (e.g. the structural graph's entities); ``dense(n)`` is the dense
        ranking of that set (the graph's own vector store)."""
        if self.spec.name == DENSE:
            return dense(k)
        return rank_code(self.spec, k, dense=dense,
                         lexical=lambda n: self._lexical().top_k(self._text(text), n, among=paths),
                         order=repository_order(self.repo))
