"""``manage.py drain_graph_outbox``: apply the queued graph changes now (cron / hook friendly)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from foundation.core.errors import OrchestratorError
from foundation.core.tools import ToolContext, call_tool


class Command(BaseCommand):
    help = "Apply the changes queued in graph_outbox to the Bolt graph mirror, in order."

    def handle(self, *args, **options) -> None:
        try:
            report = call_tool("drain_graph_outbox", {},
                               ToolContext("command", actor="manage.py"))
        except OrchestratorError as exc:
            raise CommandError(str(exc)) from exc
        if report["graph"] == "disabled":
            self.stdout.write(f"graph disabled (ENABLE_NEO4J=false): discarded "
                              f"{report['discarded']} queued changes")
            return
        if not report["success"]:
            self.stdout.write(f"drain failed after {report['applied']} changes, "
                              f"{report['pending']} still queued: {report['error']}")
            raise CommandError("graph server unreachable; the queue is kept", returncode=2)
        self.stdout.write(f"applied {report['applied']} queued changes")
