"""``manage.py detect_conflicts [--task ID ...] [--type TYPE ...] [--json] [--fail-on-high]``:
one detection run without Celery (cron, hooks). With --fail-on-high the exit status is 1
while critical or high conflicts are open, so a hook can stop on them."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from conflicts.tasks import detect_conflicts_task
from foundation.core.errors import OrchestratorError
from foundation.core.tools import ToolContext, call_tool
from foundation.core.tools.schema import CONFLICT_TYPES


class Command(BaseCommand):
    help = "Detect conflicts between task contexts and store the new ones."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--task", action="append", dest="tasks", metavar="TASK_ID",
                            help="Restrict to this task (repeatable); default all active")
        parser.add_argument("--type", action="append", dest="types", metavar="TYPE",
                            help=f"Conflict type (repeatable): {', '.join(CONFLICT_TYPES)}")
        parser.add_argument("--json", action="store_true", help="Print the full answer as JSON")
        parser.add_argument("--fail-on-high", action="store_true",
                            help="Exit 1 if critical or high conflicts are open")

    def handle(self, *args, **options) -> None:
        # A run over everything is a run of the periodic job (cron instead of beat): record it.
        if not (options["tasks"] or options["types"]):
            result = detect_conflicts_task(transport="command")
        else:
            arguments = {k: v for k, v in (("taskIds", options["tasks"]),
                                           ("conflictTypes", options["types"])) if v}
            try:
                result = call_tool("detect_conflicts", arguments,
                                   ToolContext("command", actor="manage.py"))
            except OrchestratorError as exc:
                result = exc.to_dict()
        if result.get("success") is False:
            raise CommandError(f"{result['error']['code']}: {result['error']['message']}")
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2, default=str))
        else:
            summary = result["summary"]
            self.stdout.write(
                f"new {summary['newConflicts']}, existing {summary['existingConflicts']}, "
                f"critical {summary['criticalCount']}, high {summary['highCount']}")
            for conflict in result["detected"]:
                tasks = " / ".join(t for t in (conflict["taskAId"], conflict.get("taskBId")) if t)
                self.stdout.write(f"  {conflict['severity']:8} {conflict['conflictType']:20} "
                                  f"{tasks}: {conflict['description']}")
            for skipped in result.get("skipped", []):
                self.stderr.write(f"skipped {skipped['conflictType']}: {skipped['reason']}")
        summary = result["summary"]
        if options["fail_on_high"] and summary["criticalCount"] + summary["highCount"]:
            raise SystemExit(1)
