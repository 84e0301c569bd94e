"""Resume the paused sessions whose reset time + grace has passed (for cron without Celery)."""

from django.core.management.base import BaseCommand, CommandError

from sessions.tasks import resume_paused_sessions_task


class Command(BaseCommand):
    help = ("Resume every paused session whose resetsAt + PAUSE_RESUME_GRACE_MINUTES has "
            "passed.")

    def handle(self, *args, **options) -> None:
        # The beat job, run from here: the run is recorded for the console.
        result = resume_paused_sessions_task(transport="command")
        if not result["success"]:
            raise CommandError(f"{result['error']['code']}: {result['error']['message']}")
        for session_id in result["resumed"]:
            self.stdout.write(session_id)
        self.stdout.write(f"{len(result['resumed'])} paused session(s) resumed")
