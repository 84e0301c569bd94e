"""What a tool is (``Tool``) and who calls it (``ToolContext``): the registry and the
access rules both build on these, and neither on the other's module."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class ToolContext:
    """Who is calling and through which transport.

    ``scope`` is the bearer token's scope when a token authenticated the call (REST, MCP;
    ``actor`` is then the token's name); None for in-process callers (admin, commands,
    tasks), which are trusted. See ``foundation.core.tools.access``.
    """

    transport: str  # "rest" | "mcp" | "admin" | "command" | "task"
    actor: str = ""
    scope: str | None = None
    # The projects the caller may reach; None: every project (in-process callers, and
    # tokens made without --project).
    projects: frozenset[str] | None = None
    # The project the client says it works in (the X-Orchestrator-Project header, which
    # claude_setup configures per repository; ``mcp_stdio --project``): where its calls
    # naming no project go, and what its listings show. None: not said.
    project: str | None = None
    # Long in-process work reports (done, total) here (a command's progress lines).
    progress: Callable[[int, int], None] | None = field(default=None, compare=False)

    @property
    def in_process(self) -> bool:
        """A console action, a periodic job or a management command: not a network client."""
        return self.transport in IN_PROCESS_TRANSPORTS

    def default_project(self) -> str:
        """Where a call naming no project goes: the project the client works in, else the
        token's project when it has exactly one, else the default project
        (MCP_PROJECT_ID)."""
        if self.project is not None:
            return self.project
        if self.projects is not None and len(self.projects) == 1:
            return next(iter(self.projects))
        return settings.MCP_PROJECT_ID

    def visible_projects(self, project_id: str | None = None) -> list[str] | None:
        """The projects a listing call looks at: ``project_id`` when it names one (the
        access check has let it through), else the project the client works in, else
        every project the caller may reach (None: all of them)."""
        if project_id is not None:
            return [project_id]
        if self.project is not None:
            return [self.project]
        return None if self.projects is None else sorted(self.projects)


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
    # Unset, a write tool with a ``sessionId`` argument it does not create gets
    # ``access.session_argument`` at registration: every write names the caller's session.
    writes_session: Callable[[dict[str, Any]], str | None] | None = None
    # An operation for in-process callers only (console actions, periodic jobs, commands):
    # traced, metered and audited like every tool, but not offered over REST or MCP, and
    # not in the OpenAPI document; a network client naming it gets E1615, as for any
    # unknown name.
    internal: bool = False
    # Only an admin token may call it over the network (in-process callers are trusted):
    # what it makes is a credential (create_enrollment), not project data.
    admin_only: bool = False
    # How a call names things, for tokens limited to projects (tools/access.py), which
    # answer for another project's task, session, conflict or checkpoint exactly as the
    # tool answers for a missing one. ``creates``: arguments naming what the call makes
    # (a taken id is the tool's own E1614 / E1601, not looked up). ``task_group``:
    # task arguments whose unknown ids the tool reports together (E1610 with
    # ``missing``, in argument order, or sorted with ``task_group_sorted``).
    # ``only_known``: id lists the tool acts on only where the ids exist, ignoring others.
    creates: frozenset[str] = frozenset()
    # The spec's code for a database failure in this tool (rollback_to: E1624,
    # check_recovery: E1630); None: E1654 (unreachable, 503) or E1699 (500). With a code,
    # an unreachable database still answers 503 and details.cause says E1654.
    database_code: str | None = None
    # The answer when Postgres is unreachable, for a network client's call (REST, MCP):
    # save_context_snapshot holds the save in RECOVERY_DIR/.pending-saves.json
    # and answers that it is pending. None (every other tool), or a handler that
    # returns None: the call fails with E1654 as usual.
    when_database_down: Handler | None = field(default=None, compare=False)
    task_group: tuple[str, ...] = ()
    task_group_sorted: bool = False
    only_known: frozenset[str] = frozenset()
    validator: Any = field(default=None, compare=False, repr=False)
    quick_validator: Any = field(default=None, compare=False, repr=False)
