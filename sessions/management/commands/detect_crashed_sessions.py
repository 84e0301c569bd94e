"""Run the crash sweep once (for cron or hooks without Celery)."""

from django.core.management.base import BaseCommand

from sessions.tasks import detect_crashed_sessions_task


class Command(BaseCommand):
    help = "Mark live sessions whose heartbeat is older than CRASH_THRESHOLD_MINUTES as crashed."

    def handle(self, *args, **options) -> None:
        # The beat task's body, called in this process: the run is recorded for the console.
        crashed = detect_crashed_sessions_task()
        for session_id in crashed:
            self.stdout.write(session_id)
        self.stdout.write(f"{len(crashed)} session(s) marked crashed")
