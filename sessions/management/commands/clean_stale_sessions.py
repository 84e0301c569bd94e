"""Run the stale-session cleanup once (for cron or hooks without Celery)."""

from django.core.management.base import BaseCommand

from sessions.tasks import clean_stale_sessions_task


class Command(BaseCommand):
    help = ("Delete ended or recovered sessions older than STALE_SESSION_HOURS with their "
            "events and tool history; sessions needing recovery are kept.")

    def handle(self, *args, **options) -> None:
        # The beat task's body, called in this process: the run is recorded for the console.
        removed = clean_stale_sessions_task()
        for session_id in removed:
            self.stdout.write(session_id)
        self.stdout.write(f"{len(removed)} stale session(s) removed")
