"""`manage.py mcp_stdio`: serve the tools over MCP stdio, for clients that launch a process."""

import anyio
from django.core.management.base import BaseCommand
from mcp.server.stdio import stdio_server

from orchestrator.web.mcp import build_server


class Command(BaseCommand):
    help = "Serve every registered tool over MCP on stdin/stdout."

    def handle(self, *args, **options):
        server = build_server()

        async def main() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream,
                                 server.create_initialization_options())

        anyio.run(main)
