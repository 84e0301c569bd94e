"""Run the stale-session cleanup once (for cron or hooks without Celery)."""

from django.core.management.base import BaseCommand, CommandError

from sessions.tasks import clean_stale_sessions_task


class Command(BaseCommand):
    help = ("Delete ended or recovered sessions older than STALE_SESSION_HOURS with their "
            "events and tool history; sessions needing recovery are kept.")

    def handle(self, *args, **options) -> None:
        # The beat job, run from here: the run is recorded for the console.
        result = clean_stale_sessions_task(transport="command")
        if not result["success"]:
            raise CommandError(f"{result['error']['code']}: {result['error']['message']}")
        for session_id in result["removed"]:
            self.stdout.write(session_id)
        self.stdout.write(f"{len(result['removed'])} stale session(s) removed")
