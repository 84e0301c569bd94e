"""`manage.py prune [--dry-run]`: apply the retention policy (orchestrator/ops/retention.py)."""

from django.core.management.base import BaseCommand, CommandError

from foundation.core.errors import OrchestratorError
from foundation.core.tools import ToolContext, call_tool
from orchestrator.ops.retention import PruneReport
from orchestrator.ops.tasks import retention_task


class Command(BaseCommand):
    help = ("Delete context versions, checkpoints and session events the RETENTION_* settings "
            "no longer keep, in batches; --dry-run only prints what would go.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="Print what would be deleted and delete nothing")

    def handle(self, *args, dry_run: bool, **options):
        if dry_run:
            try:
                result = call_tool("prune", {"dryRun": True},
                                   ToolContext("command", actor="manage.py"))
            except OrchestratorError as exc:
                result = exc.to_dict()
        else:
            # The beat job, run from here: the run is recorded for the console.
            result = retention_task(transport="command")
        if result.get("success") is False:
            raise CommandError(f"{result['error']['code']}: {result['error']['message']}")
        for line in PruneReport.from_answer(result).lines():
            self.stdout.write(line)
