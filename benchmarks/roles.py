"""The backbone roles of a run: each role's name in the records and its config option.

A run calls up to three models: the ``backbone`` (the assistant / maintainer the method drives), the
``user`` (LoCoEval's mock user, CAB's user agent) and the ``judge`` (CAB's judge). Records (manifest
``models`` / ``model_labels`` / ``backbone_settings`` / ``local_models``) name them by role; the config
names the backbone of each role by its option (``backbone``, ``user_backbone``, ``judge_backbone``).
"""

from __future__ import annotations

#: role (as records name it) -> config option of its backbone, in the order records list them
ROLE_OPTIONS: dict[str, str] = {"backbone": "backbone", "user": "user_backbone", "judge": "judge_backbone"}
#: every backbone option (``benchmark.uses_backbones`` lists a subset)
OPTIONS: tuple[str, ...] = tuple(ROLE_OPTIONS.values())
#: config option -> role
ROLE_OF_OPTION: dict[str, str] = {option: role for role, option in ROLE_OPTIONS.items()}
