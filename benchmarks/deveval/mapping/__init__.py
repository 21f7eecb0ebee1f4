"""Mapping DevEval projects onto PyPI sdists: candidates, task matching, test environments, oracle.

``python -m scripts.map_deveval`` drives it. One module per step: :mod:`.pypi` (the index's JSON
API and verified downloads), :mod:`.match` (which sdist version holds DevEval's functions at
DevEval's lines), :mod:`.requirements` (test requirements derived from the sdist, resolved and
pinned), :mod:`.project` (one project end to end, resumable), :mod:`.report` (one row per project),
:mod:`.run` (every selected project, largest first, the report and manifest after each).
"""
