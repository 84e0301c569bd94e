"""Back up the database and the file roots into one archive (see orchestrator.backup)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from orchestrator.core.errors import OrchestratorError
from orchestrator.ops import backup


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
        target = Path(options["target"])
        if not target.suffix and not target.exists():
            target.mkdir(parents=True)
        try:
            result = backup.create_backup(target, include_files=not options["no_files"])
        except OrchestratorError as exc:
            for line in (exc.details or {}).get("output", "").splitlines():
                self.stderr.write(line)
            raise CommandError(exc.message) from exc
        if options["keep"] > 0 and target.is_dir():
            for removed in backup.prune_backups(target, options["keep"]):
                self.stdout.write(f"removed {removed}")
        rows = ", ".join(f"{table} {count}" for table, count in result["rows"].items())
        self.stdout.write(self.style.SUCCESS(
            f"backup written: {result['path']} ({result['bytes']} bytes; {rows})"))
