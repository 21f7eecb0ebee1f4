"""A toy method written from the recipe of docs/ARCHITECTURE.md "Add a method" alone: one class (this
file) and one config (``conf/method/echo.yaml``: name, label, ``manager._target_``). It remembers
nothing and sends the query alone."""

from __future__ import annotations

from reconmem.platform.context import Context, ContextManager, Turn, build_messages


class Echo(ContextManager):
    name = "echo"

    def context_for(self, query: str, *, read_only: bool = False) -> Context:
        return Context(query=query, messages=build_messages(self._session().system_prompt, [], [], query))

    def observe(self, turn: Turn) -> None:
        pass
