"""`manage.py check_checkpoints`: verify every checkpoint against its hash and mark the
corrupt ones (the beat job "checkpoint check", run from a cron or by hand)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from contexts.tasks import check_checkpoints_task, summarize_check


class Command(BaseCommand):
    help = ("Read every checkpoint back against its hash: mark the ones that no longer "
            "match corrupt (rollback_to refuses them), and list them.")

    def handle(self, *args, **options) -> None:
        result = check_checkpoints_task(transport="command")  # a recorded run of the job
        if result.get("success") is False:
            raise CommandError(f"{result['error']['code']}: {result['error']['message']}")
        for checkpoint_id in result["corrupt"]:
            self.stdout.write(f"corrupt: {checkpoint_id}")
        self.stdout.write(summarize_check(result))
