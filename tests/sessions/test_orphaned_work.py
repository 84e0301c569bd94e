"""The one query of orphaned work (sessions.services.work; the definition is in
docs/user-guide/agent-calls.md): one row per crashed session and task, one per task for the pages that list tasks,
newest crash first; check_recovery's orphanedTasks are exactly those rows."""

from __future__ import annotations

import pytest
from django.conf import settings

from contexts.models import TaskContext
from sessions.services import recovery
from sessions.services.work import orphaned_task_ids, orphaned_tasks, orphaned_work
from tests.sessions.helpers import backdate

STATUSES = [("twice", "in_progress"), ("once", "blocked"), ("finished", "completed"),
            ("shelved", "archived")]


@pytest.mark.django_db
def test_one_row_per_task_naming_the_latest_crash(tools):
    for task_id, status in STATUSES:
        tools.ok("create_task", {"taskId": task_id, "name": task_id.title(), "status": status})
    for session_id, task_id, minutes in [("old", "twice", 30), ("new", "twice", 20),
                                         ("one", "once", 10), ("fin", "finished", 10),
                                         ("shelf", "shelved", 10)]:
        tools.ok("start_session", {"sessionId": session_id, "taskId": task_id})
        backdate(session_id, minutes)
    recovery.detect_crashed_sessions()
    for task_id, status in STATUSES:  # as created (starting a session may move a task on)
        TaskContext.objects.filter(task_id=task_id).update(status=status)

    work = orphaned_work()
    assert [(o.task_id, o.session_id) for o in work] == [
        ("once", "one"), ("twice", "new"), ("twice", "old")]
    assert all(o.project_id == settings.MCP_PROJECT_ID and o.task_pk is not None for o in work)
    rows = orphaned_tasks()
    assert [(o.task_id, o.name, o.session_id) for o in rows] == [
        ("once", "Once", "one"), ("twice", "Twice", "new")]
    assert orphaned_task_ids() == {"once", "twice"}
    assert orphaned_task_ids({"twice", "finished"}) == {"twice"}
    assert orphaned_tasks(project_ids=["elsewhere"]) == []

    report = tools.ok("check_recovery", {})
    assert [(t["taskId"], t["crashedSessionId"]) for t in report["orphanedTasks"]] == [
        (o.task_id, o.session_id) for o in rows]
