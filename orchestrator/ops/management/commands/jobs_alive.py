"""Exit 0 when the stack's periodic jobs are being run: the compose beat's healthcheck.

Beat itself answers no request, so its health is read where its work lands: the job-runs
table (foundation.core.jobruns), which the worker writes for every job beat sends. The
crash sweep is sent every HEARTBEAT_INTERVAL_MS, so a stack whose beat (the leader, on
this stack or another sharing the servers) and worker are alive has a run younger than
three of those intervals; a standby beat is healthy while another one leads.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from foundation.core.models import JobRun


class Command(BaseCommand):
    help = "Exit 1 unless a periodic job started within --within seconds (beat's healthcheck)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--within", type=float, default=None,
                            help="seconds (default: three HEARTBEAT_INTERVAL_MS, at least 60)")

    def handle(self, *args, **options) -> None:
        within = options["within"] or max(60.0, 3 * settings.HEARTBEAT_INTERVAL_MS / 1000)
        since = timezone.now() - timedelta(seconds=within)
        latest = JobRun.objects.filter(started_at__gte=since).order_by("-id").first()
        if latest is None:
            raise CommandError(f"no periodic job started in the last {within:.0f}s "
                               "(is beat or the worker down?)")
        self.stdout.write(f"{latest.job_name} started at {latest.started_at.isoformat()}")
