"""The judge of LoCoEval's task replies: DevEval Pass@1 on the pristine snapshot (protocol step 5,
:mod:`benchmarks.locoeval.runner`), or a replacement function named by ``benchmark.evaluator``."""

from __future__ import annotations

import importlib
import threading
from typing import Any

from benchmarks.locoeval.schema import Requirement, Sample


def import_function(path: str) -> Any:
    """A function named ``package.module.fn`` or ``package.module:fn``."""
    if ":" in path:
        module, _, name = path.partition(":")
        return getattr(importlib.import_module(module), name)
    import hydra.utils

    return hydra.utils.get_method(path)


class PassAt1:
    """``(sample, requirement, reply) -> verdict`` (``outcome``, ``passed``, ``log``, ``seconds``,
    ``completion``): DevEval Pass@1 on the pristine snapshot, or ``evaluator`` (a dotted function with
    ``benchmarks.deveval.evaluate.evaluate_completion``'s signature; tests). The executor
    (``executor_cfg``, the run's ``cfg.executor``) is built on first use, once for every thread."""

    def __init__(self, evaluator: str | None = None, *, deveval_data: str | None = None,
                 sources_manifest: str | None = None, executor_cfg: Any = None) -> None:
        self._custom = bool(evaluator)
        if evaluator:
            self._fn = import_function(evaluator)
        else:
            from benchmarks.deveval.evaluate import evaluate_completion

            self._fn = evaluate_completion
        self._manifest = sources_manifest
        self._extra: dict[str, Any] = {}
        if not self._custom and deveval_data:
            from benchmarks.harness import resolve_data_path

            self._extra["data_path"] = resolve_data_path(deveval_data)
        self._executor_cfg = executor_cfg
        self._executor: Any = None
        self._built = False
        self._lock = threading.Lock()

    def __call__(self, sample: Sample, req: Requirement, reply_text: str) -> dict[str, Any]:
        with self._lock:
            if not self._built:
                self._executor = None if self._custom else self._build_executor()
                self._built = True
        return self._fn(req.namespace, reply_text, repo_spec=sample.repo_spec, executor=self._executor,
                        manifest=self._manifest, **self._extra)

    def _build_executor(self) -> Any:
        from benchmarks.sandbox import build_executor

        return build_executor(self._executor_cfg)
