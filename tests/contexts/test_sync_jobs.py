"""The sync management command and the Celery beat entry."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from contexts.models import TaskContext
from foundation.backends import redis_store

pytestmark = pytest.mark.django_db


def test_command_prints_progress_per_hundred(settings):
    TaskContext.objects.bulk_create(
        [TaskContext(task_id=f"bulk-{i:03d}", name=f"Bulk {i}") for i in range(250)])
    out = StringIO()
    call_command("sync_hot_context", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["synced 100/250 tasks", "synced 200/250 tasks",
                         "synced 250/250 tasks"]
    assert lines[-1].startswith("done: redis 250 tasks")
    assert redis_store.get_json("context:task:bulk-249")["name"] == "Bulk 249"
    assert (settings.CONTEXT_DIR / "task-agents" / "bulk-000.json").exists()


def test_command_fails_when_redis_fails(settings):
    from tests.conftest import free_port

    TaskContext.objects.create(task_id="cmd-1", name="x")
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(CommandError, match="E1650"):
        call_command("sync_hot_context", "cmd-1", stdout=StringIO(), stderr=StringIO())


def test_the_beat_task_syncs(settings):
    from contexts.tasks import sync_hot_context_task

    TaskContext.objects.create(task_id="beat-1", name="x")
    assert sync_hot_context_task()["success"] is True
