"""``manage.py sync_graph``: repair the graph mirror from Postgres (cron / hook friendly)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from graph.tasks import sync_graph_task


class Command(BaseCommand):
    help = "Make the Bolt graph mirror match task_contexts, task_relationships and sessions."

    def handle(self, *args, **options) -> None:
        # The beat job, run from here: the run is recorded for the console.
        report = sync_graph_task(transport="command", check_first=False)
        if isinstance(report.get("error"), dict):  # the call itself failed (E16xx)
            raise CommandError(f"{report['error']['code']}: {report['error']['message']}")
        if report["graph"] == "disabled":
            self.stdout.write("graph disabled (ENABLE_NEO4J=false): nothing to do")
            return
        if not report["success"]:
            self.stdout.write(f"sync_graph failed: {report['error']}")
            raise CommandError("graph server unreachable; Postgres is unchanged", returncode=2)
        for part in ("tasks", "agents", "edges"):
            counts = ", ".join(f"{k} {v}" for k, v in report[part].items())
            self.stdout.write(f"{part}: {counts}")
        self.stdout.write(f"sessions: repaired {report['sessions']['repaired']}")
