"""The unified repository adaptation of the baselines (paper §3.4, LoCoEval protocol).

For each user query, the ``k`` repository functions most similar to the query (full code; ranked by
the session's code retriever: embedding similarity by default, or BM25 / hybrid) are supplied as
extra context. Full, Vanilla RAG, Mem0, MemGPT and LD-Agent
use it; Mem0^R has its own repository access and ReConMem its own recall.

``k`` is a property of the benchmark's protocol (``benchmark.repo_adaptation_k``: LoCoEval 10 as in
the paper, CAB 0 because CAB gives repository access through tools), handed to each method as its
``repo_context_k`` by the method configs (``method.manager.repo_context_k: ${benchmark.repo_adaptation_k}``;
``method.manager.repo_context_k=N`` overrides it for one run). A method built in Python without it
(None) falls back to ``session.repo_context_k`` (tests).
"""

from __future__ import annotations

from typing import Iterable

from reconmem.platform.context import REPO_WIDE, ContextItem, Session

REPO_HEADER = "Repository code that may be relevant to the request:"


def code_item(session: Session, path: str, *, source: str, score: float | None = None, text: str | None = None,
              compression: str = "full") -> ContextItem:
    """One code entity as a context item; ``text`` defaults to the entity's code as shown to a model."""
    repo = session.repo
    if repo is None:
        raise RuntimeError("code_item: the session has no repository index")
    code = text if text is not None else repo.display_source(path)
    meta: dict = {"path": path, "compression": compression}
    if score is not None:
        meta["score"] = round(float(score), 6)
    entity = repo.get(path)
    if entity is not None:
        meta["entity_kind"] = entity.kind
    return ContextItem(kind="code", id=path, text=f"# {path}\n{code}", source=source, meta=meta)


def adaptation_k(session: Session, own: int | None) -> int:
    """The unified adaptation's k for a method whose own setting is ``own`` (None = the session's)."""
    if own is None:
        return int(session.repo_context_k or 0)
    if session.repo_context_k:
        raise ValueError(f"repo_context_k is set both by the method ({own}) and the session ({session.repo_context_k}); "
                         "set one of them")
    if own < 0:
        raise ValueError(f"method.manager.repo_context_k must be >= 0, got {own}")
    return int(own)


def repo_items(session: Session, query: str, k: int | None = None, *, exclude: Iterable[str] = ()) -> list[ContextItem]:
    """The ``k`` (None: ``session.repo_context_k``) functions most similar to ``query``, full code.

    Returns ``[]`` when the session has no repository or ``k <= 0``.
    """
    k = session.repo_context_k if k is None else k
    if session.repo is None or k <= 0 or not query.strip():
        return []
    skip = set(exclude)
    hits = session.repo.search(query, session.embedder, k=k + len(skip), kinds=("function",), retriever=session.retriever)
    items = []
    for path, score in hits:
        if path in skip:
            continue
        items.append(code_item(session, path, source=REPO_WIDE, score=score))
        if len(items) >= k:
            break
    return items


def render_code_block(items: list[ContextItem], header: str = REPO_HEADER) -> str:
    """The prompt section for code items ('' when there are none)."""
    code = [i.text for i in items if i.kind == "code"]
    if not code:
        return ""
    return header + "\n\n" + "\n\n".join(code)
