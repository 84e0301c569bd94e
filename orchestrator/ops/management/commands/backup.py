"""Back up the database and the file roots into one archive (see orchestrator.backup)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from foundation.core.errors import OrchestratorError
from foundation.core.tools import ToolContext, call_tool


class Command(BaseCommand):
    help = ("Write a .tar.gz with a pg_dump of the database and CONTEXT_DIR / RECOVERY_DIR. "
            "Redis and the graph are rebuilt from Postgres on restore.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("target", nargs="?", default="backups",
                            help="archive file, or a directory to write a timestamped one in "
                                 "(default: ./backups/)")
        parser.add_argument("--no-files", action="store_true",
                            help="only the database, not the file roots")
        parser.add_argument("--keep", type=int, default=0,
                            help="with a directory TARGET: then delete all but the newest "
                                 "KEEP archives in it (default: delete none)")

    def handle(self, *args, **options) -> None:
        try:
            result = call_tool("backup", {"target": options["target"],
                                          "includeFiles": not options["no_files"],
                                          "keep": max(options["keep"], 0)},
                               ToolContext("command", actor="manage.py"))
        except OrchestratorError as exc:
            details = exc.details if isinstance(exc.details, dict) else {}
            for line in details.get("output", "").splitlines():
                self.stderr.write(line)
            raise CommandError(exc.message) from exc
        for removed in result["removed"]:
            self.stdout.write(f"removed {removed}")
        rows = ", ".join(f"{table} {count}" for table, count in result["rows"].items())
        self.stdout.write(self.style.SUCCESS(
            f"backup written: {result['path']} ({result['bytes']} bytes; {rows})"))
