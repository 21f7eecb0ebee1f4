"""The run's LLM clients, one per backbone role, built by the loop and handed to the benchmark.

:class:`RoleClients` is what :attr:`benchmarks.task.RunEnv.clients` holds: ``clients.backbone``,
``clients.user``, ``clients.judge`` (the roles of :mod:`benchmarks.roles`). A role's client is built
from its config option (``backbone``, ``user_backbone``, ``judge_backbone``) by
:func:`benchmarks.harness.build_llm` on first use, so a role the run never calls (LoCoEval's mock user
when every turn is scripted) is never built and never needs a key. A role whose config node equals
one already built shares that client (one cache, one concurrency cap, one ledger). The benchmark's
per-role call defaults (:meth:`benchmarks.task.Benchmark.client_defaults`: LoCoEval's per-purpose
``max_tokens`` of the backbone) are set on the role's client here, once
(:class:`reconmem.platform.llm.CallDefaults`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from benchmarks.roles import ROLE_OPTIONS


class RoleClients:
    """The clients of a run's backbone roles, built on first use from ``cfg`` into ``ledger``.

    ``defaults``: role -> :class:`reconmem.platform.llm.CallDefaults` of that role's client.
    ``clients``: role -> an already built client (tests with scripted clients), used as given
    (with the role's defaults set on it)."""

    def __init__(self, cfg: Any, ledger: Any, defaults: Mapping[str, Any] | None = None, *,
                 clients: Mapping[str, Any] | None = None) -> None:
        unknown = set(defaults or {}) | set(clients or {})
        unknown -= set(ROLE_OPTIONS)
        if unknown:
            raise ValueError(f"unknown backbone role(s) {sorted(unknown)} (known: {list(ROLE_OPTIONS)})")
        self.cfg = cfg
        self.ledger = ledger
        self.defaults = dict(defaults or {})
        self._given = dict(clients or {})
        self._built: dict[str, Any] = {}  # role -> its client (with its defaults)
        self._by_node: list[tuple[Any, Any]] = []  # (resolved config node, the plain client built from it)
        self._lock = threading.Lock()

    @property
    def backbone(self) -> Any:
        """The backbone the method drives (the assistant, CAB's maintainer)."""
        return self.get("backbone")

    @property
    def user(self) -> Any:
        """The user model (LoCoEval's mock user, CAB's user agent)."""
        return self.get("user")

    @property
    def judge(self) -> Any:
        """The judge model (CAB's judge)."""
        return self.get("judge")

    def built(self) -> tuple[str, ...]:
        """The roles whose client exists so far."""
        return tuple(self._built)

    def get(self, role: str) -> Any:
        """The client of ``role`` (built now if it is the first use)."""
        if role not in ROLE_OPTIONS:
            raise KeyError(f"unknown backbone role {role!r} (known: {list(ROLE_OPTIONS)})")
        with self._lock:
            if role not in self._built:
                client = self._given[role] if role in self._given else self._plain(role)
                defaults = self.defaults.get(role)
                self._built[role] = client.with_defaults(defaults) if defaults is not None else client
            return self._built[role]

    def _plain(self, role: str) -> Any:
        """The client of ``role``'s config node, shared with a role whose node is the same."""
        from omegaconf import OmegaConf

        from benchmarks.harness import build_llm

        option = ROLE_OPTIONS[role]
        node = self.cfg[option]
        resolved = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
        for seen, client in self._by_node:
            if seen == resolved:
                return client
        client = build_llm(node, self.cfg, self.ledger, option=option)
        self._by_node.append((resolved, client))
        return client
