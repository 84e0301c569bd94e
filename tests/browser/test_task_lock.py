"""Issue 23, item 5 in a real browser: a locked task says so on its page and on the rollback
confirmation, and the operator releases the lock and rolls back in one click."""

from __future__ import annotations

import pytest

from contexts.models import TaskContext
from locks import services as locks

pytestmark = pytest.mark.slow


def test_release_the_lock_and_roll_back(console, tools):
    tools.ok("create_task", {"taskId": "locked", "name": "Task locked", "currentPhase": "design"})
    tools.ok("save_context_snapshot", {"taskId": "locked", "changeSummary": "oops",
                                       "updates": {"currentPhase": "deleted everything"}})
    tools.ok("start_session", {"sessionId": "sess-holder", "taskId": "locked",
                               "agentId": "opus"})
    tools.ok("acquire_task_lock", {"taskId": "locked", "sessionId": "sess-holder",
                                   "ttlSeconds": 900})
    task = TaskContext.objects.get(task_id="locked")
    page = console.open(f"/admin/contexts/taskcontext/{task.pk}/change/")
    holder = console.text("#task-lock-holder")
    assert "Locked" in holder and "sess-holder" in holder and "agent opus" in holder
    assert "expires" in holder
    console.screenshot("task-locked")

    page.click("#version-history tr:has-text('v1') a:text('roll back to this version')")
    page.wait_for_selector("#rollback-changes")
    assert "sess-holder" in console.text("#task-lock-holder")
    console.screenshot("rollback-locked")
    page.click("#release-and-roll-back")
    page.wait_for_selector("text=Rolled back to version 1")
    assert "Released the lock of session sess-holder" in page.content()
    assert page.locator("#task-lock").count() == 0
    task.refresh_from_db()
    assert (task.current_phase, task.version) == ("design", 3)
    assert locks.current_lock("locked") is None
