"""Run the crash sweep once (for cron or hooks without Celery)."""

from django.core.management.base import BaseCommand, CommandError

from sessions.tasks import detect_crashed_sessions_task


class Command(BaseCommand):
    help = "Mark live sessions whose heartbeat is older than CRASH_THRESHOLD_MINUTES as crashed."

    def handle(self, *args, **options) -> None:
        # The beat job, run from here: the run is recorded for the console.
        result = detect_crashed_sessions_task(transport="command")
        if not result["success"]:
            raise CommandError(f"{result['error']['code']}: {result['error']['message']}")
        for session_id in result["crashed"]:
            self.stdout.write(session_id)
        self.stdout.write(f"{len(result['crashed'])} session(s) marked crashed")
