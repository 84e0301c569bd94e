"""``manage.py detect_conflicts [--task ID ...] [--type TYPE ...] [--json] [--fail-on-high]``:
one detection run without Celery (cron, hooks). With --fail-on-high the exit status is 1
while critical or high conflicts are open, so a hook can stop on them."""

from __future__ import annotations

import json
from contextlib import nullcontext

from django.core.management.base import BaseCommand, CommandError

from conflicts.services.detection import detect_conflicts
from orchestrator.core.errors import OrchestratorError
from orchestrator.core.jobruns import RunOutcome, record_job_run
from orchestrator.core.tools.schema import CONFLICT_TYPES


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
        full = not (options["tasks"] or options["types"])
        try:
            with record_job_run("conflict detection") if full else nullcontext(
                    RunOutcome()) as run:
                result = detect_conflicts(options["tasks"], options["types"])
                run.ok(", ".join(f"{key} {value}" for key, value in result["summary"].items()))
        except OrchestratorError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from exc
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
