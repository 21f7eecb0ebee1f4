"""ONNX Runtime backends of the embedder: the same all-MiniLM-L6-v2 weights, exported offline.

``embedder.backend``: ``torch`` (sentence-transformers on PyTorch), ``onnx`` (the default: the
transformer's forward pass exported to ONNX, fp32) or ``onnx-int8`` (that graph with its weights dynamically
quantised to int8, per channel). Tokenisation and the modules after the transformer (mean pooling,
normalisation) stay the SentenceTransformer's own, so only the forward pass changes runtime.

Why not ``SentenceTransformer(..., backend="onnx")``: its loader needs ``optimum.onnxruntime``,
which lives in ``optimum-onnx``, whose only release pins ``transformers<4.58`` while
sentence-transformers 6 needs ``transformers>=5`` (pip cannot install both). The export is
therefore torch's own exporter (``torch.onnx.export``) and the quantisation
``onnxruntime.quantization.quantize_dynamic`` (what optimum's ``ORTQuantizer`` calls).

Exports are made once from the model folder the torch backend loads (:func:`reconmem.platform.embed.model_source`;
nothing is fetched) into ``$RECONMEM_CACHE/models/onnx/<identity>/``, where the identity hashes the
weights file and the exporter, runtime and quantisation settings (:func:`export_identity`); a
finished export is moved into place atomically, so concurrent processes never read half a file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np

log = logging.getLogger(__name__)

BACKENDS = ("torch", "onnx", "onnx-int8")
# The embedder's default backend (``embedder.backend`` when not set; conf/config.yaml names it too):
# fp32 ONNX agrees with torch to 1e-6 (min cosine 1.00000, top-10 overlap 1.000, docs/code-index.md).
DEFAULT_BACKEND = "onnx"
ONNX_FILE = "model.onnx"
INT8_FILE = "model_qint8.onnx"
OPSET = 17
# int8 settings: per-channel weight scales (per-tensor scales give a min cosine near 0.84 on code
# entity texts; per channel keeps it near 0.98), signed int8 weights, every quantisable op.
QUANT_SETTINGS = {"weight_type": "QInt8", "per_channel": True, "reduce_range": False}
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"

_LOCK = threading.Lock()
_SESSIONS: dict[str, Any] = {}  # onnx file -> InferenceSession (one per process)
_IDENTITIES: dict[str, dict[str, Any]] = {}  # model folder -> export_identity (the weights are hashed once)


def check_backend(backend: str | None) -> str:
    """``embedder.backend`` normalised (``None`` -> :data:`DEFAULT_BACKEND`); a ValueError names the choices."""
    value = str(backend or DEFAULT_BACKEND).strip().lower()
    if value not in BACKENDS:
        raise ValueError(f"embedder.backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return value


def _weights_digest(folder: Path) -> str:
    """sha256 of the folder's weights file (what the export is a function of, besides the code)."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        path = folder / name
        if path.exists():
            from reconmem.platform.downloads import sha256_file

            return sha256_file(path)
    raise RuntimeError(f"embedder: no weights file in {folder}")


def export_identity(folder: str | Path) -> dict[str, Any]:
    """What an export of ``folder`` depends on: the weights' sha256, torch, onnxruntime, opset, int8 settings."""
    key = str(Path(folder).resolve())
    if key not in _IDENTITIES:
        import onnxruntime
        import torch

        _IDENTITIES[key] = {"weights_sha256": _weights_digest(Path(folder)), "torch": torch.__version__,
                            "onnxruntime": onnxruntime.__version__, "opset": OPSET, "int8": dict(QUANT_SETTINGS)}
    return dict(_IDENTITIES[key])


def export_dir(folder: str | Path, cache_dir: str | Path | None = None) -> Path:
    """Folder of the exports of ``folder`` (under ``cache_dir``, default ``$RECONMEM_CACHE/models/onnx``)."""
    if cache_dir is None:
        from reconmem.platform.downloads import cache_root

        cache_dir = cache_root() / "models" / "onnx"
    ident = export_identity(folder)
    tag = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]
    return Path(cache_dir) / f"all-MiniLM-L6-v2-{tag}"


def _export_fp32(model: Any, target: Path) -> None:
    """``torch.onnx.export`` of the SentenceTransformer's transformer (dynamic batch and length)."""
    import torch

    class _Forward(torch.nn.Module):
        def __init__(self, auto_model: Any):
            super().__init__()
            self.auto_model = auto_model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.auto_model(input_ids=input_ids, attention_mask=attention_mask,
                                   token_type_ids=token_type_ids).last_hidden_state

    features = model[0].preprocess(["an example text", "a second, longer example text"])
    args = tuple(features[name].cpu() for name in INPUT_NAMES)
    axes = {name: {0: "batch", 1: "sequence"} for name in (*INPUT_NAMES, OUTPUT_NAME)}
    wrapper = _Forward(model[0].auto_model).eval().cpu()
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        torch.onnx.export(wrapper, args, str(target), input_names=list(INPUT_NAMES), output_names=[OUTPUT_NAME],
                          dynamic_axes=axes, opset_version=OPSET, dynamo=False)


def _quantise(source: Path, target: Path) -> None:
    """int8 dynamic quantisation of ``source`` (weights per channel; activations quantised at run time)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()  # onnxruntime logs a "consider pre-processing" notice on the root logger
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(str(source), str(target), weight_type=getattr(QuantType, QUANT_SETTINGS["weight_type"]),
                         per_channel=QUANT_SETTINGS["per_channel"], reduce_range=QUANT_SETTINGS["reduce_range"])
    finally:
        root.setLevel(level)  # the process's own logging is left as it was


def ensure_export(model: Any, folder: str | Path, backend: str, cache_dir: str | Path | None = None) -> Path:
    """Path of the ``backend`` ONNX file for the model in ``folder``, exporting it first when missing."""
    backend = check_backend(backend)
    if backend == "torch":
        raise ValueError("ensure_export: the torch backend has no ONNX file")
    out = export_dir(folder, cache_dir)
    target = out / (ONNX_FILE if backend == "onnx" else INT8_FILE)
    if target.exists():
        return target
    out.parent.mkdir(parents=True, exist_ok=True)
    with _LOCK:
        if target.exists():
            return target
        work = Path(tempfile.mkdtemp(prefix=".export-", dir=out.parent))
        try:
            fp32 = out / ONNX_FILE
            if not fp32.exists():
                _export_fp32(model, work / ONNX_FILE)
                _publish(work / ONNX_FILE, fp32)
            if backend == "onnx-int8":
                _quantise(fp32, work / INT8_FILE)
                _publish(work / INT8_FILE, target)
            (out / "identity.json").write_text(json.dumps(export_identity(folder), indent=1), encoding="utf-8")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    log.info("embedder: exported %s to %s", backend, target)
    return target


def _publish(source: Path, target: Path) -> None:
    """Move a finished file into the export folder (atomic rename on the same file system)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)


def batch_size_for(backend: str, batch_size: int) -> int:
    """The batch size ``backend`` runs at: int8 one text at a time, because dynamic quantisation
    scales activations per tensor, i.e. over the whole batch, so a batched text's vector would
    depend on its batch-mates (measured: up to 0.02 per component); alone it depends on itself only."""
    return 1 if backend == "onnx-int8" else batch_size


def session(path: str | Path) -> Any:
    """The process-wide ONNX Runtime session of ``path`` (CPU, full graph optimisation, no spinning)."""
    key = str(path)
    found = _SESSIONS.get(key)
    if found is not None:
        return found
    import onnxruntime as ort

    with _LOCK:
        found = _SESSIONS.get(key)
        if found is None:
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            # Idle intra-op threads sleep instead of spinning: on a shared 2-core machine spinning
            # threads compete with the work (one query, back to back: p50 118 -> 80 ms at load 9).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            found = ort.InferenceSession(key, options, providers=["CPUExecutionProvider"])
            _SESSIONS[key] = found
    return found


def encode(model: Any, onnx_path: str | Path, texts: Sequence[str], batch_size: int,
           max_tokens: int | None = None) -> np.ndarray:
    """Sentence vectors of ``texts`` with the forward pass on ONNX Runtime: the SentenceTransformer's
    tokenisation (truncated at ``max_tokens`` when given), the session's ``last_hidden_state``, then
    the model's own later modules (pooling, normalisation). Returns ``(n, dim)`` float32. Batches are
    padded only as the caller groups them."""
    parts = [encode_features(model, onnx_path, tokenize(model, texts[start:start + batch_size], max_tokens))
             for start in range(0, len(texts), batch_size)]
    return np.concatenate(parts, axis=0) if parts else np.zeros((0, 0), dtype=np.float32)


def tokenize(model: Any, texts: Sequence[str], max_tokens: int | None = None) -> dict[str, Any]:
    """The transformer module's features of ``texts`` (what :func:`encode` runs on), padded to the
    longest; truncated at ``max_tokens`` word pieces when given (else at the model's ``max_seq_length``)."""
    cap = {} if max_tokens is None else {"max_length": int(max_tokens)}
    return model[0].preprocess(list(texts), **cap)


def rows_of(features: dict[str, Any], rows: Sequence[int], length: int) -> dict[str, Any]:
    """The features of ``rows`` cut to their common token ``length``: equal to tokenising those texts alone."""
    picked = list(rows)
    return {name: value[picked, :length] if hasattr(value, "dim") and value.dim() == 2 else value
            for name, value in features.items()}


def encode_features(model: Any, onnx_path: str | Path, features: dict[str, Any]) -> np.ndarray:
    """Sentence vectors of one tokenised batch (:func:`tokenize`, :func:`rows_of`): the session's
    ``last_hidden_state``, then the model's modules after the transformer. ``(n, dim)`` float32."""
    import torch

    sess = session(onnx_path)
    wanted = [i.name for i in sess.get_inputs()]
    features = dict(features)
    hidden = sess.run([OUTPUT_NAME], {name: features[name].cpu().numpy() for name in wanted})[0]
    features["token_embeddings"] = torch.from_numpy(hidden)
    with torch.inference_mode():
        for module in list(model)[1:]:
            features = module(features)
    return features["sentence_embedding"].float().numpy()
