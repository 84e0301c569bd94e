"""What a tool is (``Tool``) and who calls it (``ToolContext``): the registry and the
access rules both build on these, and neither on the other's module."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolContext:
    """Who is calling and through which transport.

    ``scope`` is the bearer token's scope when a token authenticated the call (REST, MCP;
    ``actor`` is then the token's name); None for in-process callers (admin, commands,
    tasks), which are trusted. See ``orchestrator.core.tools.access``.
    """

    transport: str  # "rest" | "mcp" | "admin" | "command" | "task"
    actor: str = ""
    scope: str | None = None
    # Long in-process work reports (done, total) here (a command's progress lines).
    progress: Callable[[int, int], None] | None = field(default=None, compare=False)

    @property
    def in_process(self) -> bool:
        """A console action, a periodic job or a management command: not a network client."""
        return self.transport in IN_PROCESS_TRANSPORTS


IN_PROCESS_TRANSPORTS = frozenset({"admin", "command", "task"})


Handler = Callable[[dict[str, Any], ToolContext], dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    handler: Handler
    # The E16xx code a schema violation is reported with (spec: E1612 for task updates,
    # E1621 for checkpoint scope, E1641 for conflict types).
    validation_code: str = "E1612"
    read_only: bool = False
    # The session a call writes (from its arguments), which only its owner token may do.
    writes_session: Callable[[dict[str, Any]], str | None] | None = None
    # An operation for in-process callers only (console actions, periodic jobs, commands):
    # traced, metered and audited like every tool, but not offered over REST or MCP, and
    # not in the OpenAPI document; a network client naming it gets E1615, as for any
    # unknown name.
    internal: bool = False
    validator: Any = field(default=None, compare=False, repr=False)
    quick_validator: Any = field(default=None, compare=False, repr=False)
