"""Run sync_hot_context on demand (a cron, a hook, or by hand), with progress."""

from __future__ import annotations

from contextlib import nullcontext

from django.core.management.base import BaseCommand, CommandError

from contexts.services import sync
from orchestrator.core.errors import OrchestratorError
from orchestrator.core.jobruns import RunOutcome, record_job_run


class Command(BaseCommand):
    help = "Rewrite the Redis cache and the file backups of tasks from Postgres."

    def add_arguments(self, parser) -> None:
        parser.add_argument("task_ids", nargs="*", help="Tasks to sync (default: all active)")
        parser.add_argument("--no-redis", action="store_true", help="Skip the Redis cache")
        parser.add_argument("--no-files", action="store_true", help="Skip the file backups")
        parser.add_argument("--no-registry", action="store_true",
                            help="Do not rewrite _registry.json")

    def handle(self, *args, **options) -> None:
        def progress(done: int, total: int) -> None:
            self.stdout.write(f"synced {done}/{total} tasks")

        # A full sync is a run of the periodic job (cron instead of beat): record it.
        full = not (options["task_ids"] or options["no_redis"] or options["no_files"]
                    or options["no_registry"])
        try:
            with record_job_run("hot sync") if full else nullcontext(RunOutcome()) as run:
                result = sync.sync_hot_context(
                    sync_redis=not options["no_redis"], sync_files=not options["no_files"],
                    task_ids=options["task_ids"] or None,
                    update_registry=not options["no_registry"], progress=progress)
                run.ok(f"{result['synced']['redis']['taskContexts']} task(s) cached, "
                       f"{result['synced']['files']['taskContexts']} file(s) written")
        except OrchestratorError as exc:
            for error in (exc.details or {}).get("errors", []) if isinstance(
                    exc.details, dict) else []:
                self.stderr.write(error)
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        synced = result["synced"]
        self.stdout.write(self.style.SUCCESS(
            f"done: redis {synced['redis']['taskContexts']} tasks "
            f"(hot: {synced['redis']['hotContext']}), files {synced['files']['taskContexts']} "
            f"tasks (hot: {synced['files']['hotContext']}, "
            f"registry: {synced['files']['registry']})"))
