"""Run sync_hot_context on demand (a cron, a hook, or by hand), with progress."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from contexts.tasks import sync_hot_context_task
from foundation.core.errors import OrchestratorError
from foundation.core.tools import ToolContext, call_tool


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
        if not (options["task_ids"] or options["no_redis"] or options["no_files"]
                or options["no_registry"]):
            result = sync_hot_context_task(transport="command", progress=progress)
        else:
            arguments = {"syncRedis": not options["no_redis"],
                         "syncFiles": not options["no_files"],
                         "updateRegistry": not options["no_registry"]}
            if options["task_ids"]:
                arguments["taskIds"] = options["task_ids"]
            try:
                result = call_tool("sync_hot_context", arguments,
                                   ToolContext("command", actor="manage.py",
                                               progress=progress))
            except OrchestratorError as exc:
                result = exc.to_dict()
        if result.get("success") is False:
            error = result["error"]
            details = error.get("details")
            for line in details.get("errors", []) if isinstance(details, dict) else []:
                self.stderr.write(line)
            raise CommandError(f"{error['code']}: {error['message']}")
        synced = result["synced"]
        self.stdout.write(self.style.SUCCESS(
            f"done: redis {synced['redis']['taskContexts']} tasks "
            f"(hot: {synced['redis']['hotContext']}), files {synced['files']['taskContexts']} "
            f"tasks (hot: {synced['files']['hotContext']}, "
            f"registry: {synced['files']['registry']})"))
