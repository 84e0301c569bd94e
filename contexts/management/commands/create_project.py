"""``manage.py create_project KEY --name NAME``: a project (and its global context)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from foundation.core.errors import OrchestratorError
from foundation.core.tools import ToolContext, call_tool


class Command(BaseCommand):
    help = ("Create a project: one repository this server coordinates, with an empty "
            "global context. KEY: letters, digits, . _ : - (at most 200).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("key", help="The project's id")
        parser.add_argument("--name", help="Display name (default: the key)")
        parser.add_argument("--description", help="What the project is")

    def handle(self, *args, key: str, name: str | None, description: str | None,
               **options) -> None:
        arguments = {"projectId": key, "name": name or key}
        if description:
            arguments["description"] = description
        try:
            result = call_tool("create_project", arguments,
                               ToolContext("command", actor="manage.py"))
        except OrchestratorError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        self.stdout.write(self.style.SUCCESS(
            f"project {result['projectId']} ({result['name']}) created"))
