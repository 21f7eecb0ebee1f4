"""LoCoEval: long repository-oriented conversations judged by DevEval Pass@1 (docs/locoeval.md).

Modules: ``schema`` (format + checks), ``loader`` / ``convert`` (sources), ``builder`` (samples
from DevEval), ``mock_user``, ``repo`` (blanked snapshots), ``judge`` (Pass@1 of task replies),
``runner`` (``LoCoEval``: ``solve`` / ``grade``), ``metrics`` (pure functions over run records).
"""
