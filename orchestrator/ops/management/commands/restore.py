"""Restore a backup archive (see orchestrator.backup), then rebuild Redis and the graph."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from foundation.core.errors import OrchestratorError
from orchestrator.ops import backup


class Command(BaseCommand):
    help = ("Replace the database (and CONTEXT_DIR / RECOVERY_DIR) with a backup made by "
            "`manage.py backup`, then run sync_hot_context and sync_graph.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("archive", help="a .tar.gz written by `manage.py backup`")
        parser.add_argument("--yes", action="store_true",
                            help="do not ask before replacing the current data")
        parser.add_argument("--no-files", action="store_true",
                            help="restore the database only; sync_hot_context rewrites the "
                                 "task files from it")
        parser.add_argument("--no-sync", action="store_true",
                            help="do not rebuild Redis and the graph afterwards")

    def handle(self, *args, **options) -> None:
        archive = Path(options["archive"])
        if not archive.is_file():
            raise CommandError(f"{archive}: no such file")
        try:
            manifest = backup.read_manifest(archive)
        except backup.BackupError as exc:
            raise CommandError(f"{archive}: not a readable backup ({exc.message})") from exc
        database = settings.DATABASES["default"]["NAME"]
        self.stdout.write(f"backup of {manifest['createdAt']}: {manifest['rows']}")
        if not options["yes"] and input(
                f"Replace everything in database {database!r} with it? [y/N] ").lower() != "y":
            raise CommandError("restore cancelled")
        try:
            result = backup.restore_backup(archive, include_files=not options["no_files"])
        except OrchestratorError as exc:
            for line in (exc.details or {}).get("output", "").splitlines():
                self.stderr.write(line)
            raise CommandError(exc.message) from exc
        self.stdout.write(self.style.SUCCESS(
            f"restored {result['restoredRows']}; files: {result['restoredFiles'] or 'none'}"))
        if options["no_sync"]:
            return
        # Redis and the graph are caches of Postgres: rebuild them from what was restored.
        call_command("sync_hot_context", stdout=self.stdout, stderr=self.stderr)
        if settings.ENABLE_NEO4J:
            call_command("sync_graph", stdout=self.stdout, stderr=self.stderr)
