"""Apply the saves held in RECOVERY_DIR/.pending-saves.json while Postgres was down."""

from django.core.management.base import BaseCommand, CommandError

from contexts.tasks import replay_pending_saves_task


class Command(BaseCommand):
    help = ("Apply, in order and each once, the saves held in RECOVERY_DIR/.pending-saves.json "
            "while PostgreSQL was unreachable.")

    def handle(self, *args, **options) -> None:
        # The beat job, run from here: the run is recorded for the console.
        result = replay_pending_saves_task(transport="command")
        if not result["success"]:
            raise CommandError(f"{result['error']['code']}: {result['error']['message']}")
        self.stdout.write(f"{len(result['applied'])} held save(s) applied, "
                          f"{len(result['skipped'])} applied before, "
                          f"{len(result['rejected'])} refused, {result['remaining']} still held")
