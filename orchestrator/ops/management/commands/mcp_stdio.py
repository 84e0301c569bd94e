"""`manage.py mcp_stdio`: serve the tools over MCP stdio, for clients that launch a process.

``--agent-tools`` serves the agent catalogue instead (what HTTP serves at /mcp/agent):
only the tools a model should call itself, under short names and descriptions.
"""

import anyio
from django.core.management.base import BaseCommand, CommandError
from mcp.server.stdio import stdio_server

from foundation.core.errors import OrchestratorError
from foundation.core.projects import check_project_id
from orchestrator.web.mcp import build_server
from orchestrator.web.mcp_content import task_events


class Command(BaseCommand):
    help = ("Serve every registered tool over MCP on stdin/stdout (--agent-tools: only the "
            "tools a model should call itself).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", default=None,
                            help="The project the client works in: calls naming no project "
                                 "go there (claude_setup writes it)")
        parser.add_argument("--agent-tools", action="store_true",
                            help="Serve only the agent catalogue (as /mcp/agent does): the "
                                 "tools a model should call itself, not the hooks' tools")

    def handle(self, *args, project: str | None = None, agent_tools: bool = False,
               **options):
        if project:
            try:
                check_project_id(project, field="--project")
            except OrchestratorError as exc:
                raise CommandError(exc.message) from None
        server = build_server(stdio_project=project, agent=agent_tools)

        async def main() -> None:
            # task_events: subscriptions/listen streams hear of task changes here too.
            async with task_events(), stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream,
                                 server.create_initialization_options())

        anyio.run(main)
