"""`manage.py prune [--dry-run]`: apply the retention policy (orchestrator/retention.py)."""

from django.core.management.base import BaseCommand

from orchestrator.ops import retention


class Command(BaseCommand):
    help = ("Delete context versions, checkpoints and session events the RETENTION_* settings "
            "no longer keep, in batches; --dry-run only prints what would go.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="Print what would be deleted and delete nothing")

    def handle(self, *args, dry_run: bool, **options):
        report = retention.prune(dry_run=dry_run)
        for line in report.lines():
            self.stdout.write(line)
