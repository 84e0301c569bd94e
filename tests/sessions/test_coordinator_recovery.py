"""What a recovering coordinator gets from check_recovery (seed 004 "Coordinator
Recovery", issue 22 item 7): the events written after the last saved state
(state_reconciled), orphaned work, the tasks completed within RECENT_COMPLETION_WINDOW,
and the coordinator_recovered / orphan_agent_detected log lines."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from contexts.models import TaskContext
from sessions.services import recovery
from tests.sessions.helpers import backdate, conforms


def event(tools, session_id: str, content: str) -> None:
    tools.ok("append_session_event", {"sessionId": session_id, "type": "tool_call",
                                      "role": "assistant", "content": content})


@pytest.mark.django_db(transaction=True)
def test_a_recovering_coordinator_gets_what_seed_004_lists(tools, caplog, settings):
    settings.RECENT_COMPLETION_WINDOW = 24
    tools.ok("create_task", {"taskId": "build", "name": "Build", "status": "in_progress"})
    tools.ok("create_task", {"taskId": "shipped", "name": "Shipped", "status": "completed"})
    tools.ok("create_task", {"taskId": "long-ago", "name": "Long ago", "status": "completed"})
    with transaction.atomic(), connection.cursor() as cursor:
        # Past the trigger that stamps updated_at: completed 30 hours ago.
        cursor.execute("SET LOCAL session_replication_role = replica")
        TaskContext.objects.filter(task_id="long-ago").update(
            updated_at=timezone.now() - timedelta(hours=30))
    tools.ok("start_session", {"sessionId": "worker", "taskId": "build",
                               "agentId": "dev-1", "projectDir": "/repo"})
    event(tools, "worker", "Edit before the save")
    tools.ok("save_context_snapshot", {"taskId": "build", "sessionId": "worker",
                                       "updates": {"currentPhase": "tests"}})
    event(tools, "worker", "Edit src/a.py")
    event(tools, "worker", "Bash pytest")
    backdate("worker", 600)
    recovery.detect_crashed_sessions()

    report = conforms("check_recovery", tools.ok("check_recovery", {"projectDir": "/repo"}))
    (entry,) = report["sessions"]
    assert entry["savedStateAt"] is not None
    assert entry["eventsSinceSavedState"] == 2
    assert [(e["content"], e["taskId"]) for e in entry["stateReconciled"]] == [
        ("Edit src/a.py", "build"), ("Bash pytest", "build")]
    assert [t["taskId"] for t in report["orphanedTasks"]] == ["build"]
    assert [t["taskId"] for t in report["recentCompletions"]] == ["shipped"]
    assert report["recentCompletionWindowHours"] == 24

    tools.ok("start_session", {"sessionId": "coordinator", "projectDir": "/repo"})
    with caplog.at_level(logging.INFO, logger="orchestrator.sessions"):
        marked = tools.ok("check_recovery", {"markRecovered": "worker",
                                             "projectDir": "/repo"})
    assert marked["markedRecovered"]["status"] == "recovered"
    lines = {r.getMessage(): r for r in caplog.records if r.name == "orchestrator.sessions"}
    orphan = lines["orphan_agent_detected"]
    assert (orphan.agent_id, orphan.task_id, orphan.type) == ("dev-1", "build", "session")
    reconciled = [r for r in caplog.records if r.getMessage() == "state_reconciled"]
    assert [(r.sessionId, r.event_type, r.task_id, r.sequence) for r in reconciled] == [
        ("worker", e["type"], "build", e["sequence"]) for e in entry["stateReconciled"]]
    done = lines["coordinator_recovered"]
    assert (done.sessionId, done.orphaned_agents, done.events_reconciled,
            done.recent_completions) == ("worker", 1, 2, 1)


@pytest.mark.django_db
def test_a_session_without_a_task_reconciles_all_its_events(tools):
    tools.ok("start_session", {"sessionId": "loose"})
    event(tools, "loose", "Read README.md")
    backdate("loose", 600)
    recovery.detect_crashed_sessions()
    (entry,) = tools.ok("check_recovery", {})["sessions"]
    assert (entry["savedStateAt"], entry["eventsSinceSavedState"]) == (None, 1)
    assert entry["stateReconciled"][0]["content"] == "Read README.md"
