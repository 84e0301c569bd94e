"""Run the stale-session cleanup once (for cron or hooks without Celery)."""

from django.core.management.base import BaseCommand, CommandError

from sessions.tasks import clean_stale_sessions_task


class Command(BaseCommand):
    help = ("Close out abandoned sessions: live but silent longer than STALE_SESSION_HOURS "
            "-> ended (recovery type timeout, still listed by check_recovery). Deletes "
            "nothing: history goes only by retention.")

    def handle(self, *args, **options) -> None:
        # The beat job, run from here: the run is recorded for the console.
        result = clean_stale_sessions_task(transport="command")
        if not result["success"]:
            raise CommandError(f"{result['error']['code']}: {result['error']['message']}")
        for session_id in result["closed"]:
            self.stdout.write(session_id)
        self.stdout.write(f"{len(result['closed'])} abandoned session(s) closed")
