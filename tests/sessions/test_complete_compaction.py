"""complete_compaction (seed 004 Resume Phase, issue 22 item 6): any client reports a
compaction finished; compaction_complete carries the number and full_reload."""

from __future__ import annotations

import pytest

from tests.sessions.helpers import conforms, status_of


def completions(tools, session_id: str) -> list[dict]:
    return [e["parts"] for e in tools.ok("get_recent_session_events",
                                         {"sessionId": session_id})["events"]
            if e["content"] == "compaction_complete"]


@pytest.mark.django_db
def test_completing_a_reported_compaction_ends_its_recovery(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1"})
    tools.ok("report_compaction", {"sessionId": "s1"})
    tools.ok("report_compaction", {"sessionId": "s1"})
    assert status_of("s1") == ("compacted", True, "compaction")
    done = conforms("complete_compaction", tools.ok("complete_compaction", {
        "sessionId": "s1", "summary": "kept the parser plan", "trigger": "auto"}))
    assert (done["compactionNumber"], done["fullReload"], done["alreadyCompleted"],
            done["status"]) == (2, True, False, "active")
    assert status_of("s1") == ("active", False, "compaction")
    assert tools.ok("check_recovery", {})["sessions"] == []
    (parts,) = completions(tools, "s1")
    assert {"event": "compaction_complete", "compaction_number": 2, "full_reload": True,
            "trigger": "auto", "compactSummary": "kept the parser plan"}.items() <= \
        parts.items()
    # A resent call (the hook's spool) changes nothing.
    again = tools.ok("complete_compaction", {"sessionId": "s1", "compactionNumber": 2})
    assert again["alreadyCompleted"] is True and len(completions(tools, "s1")) == 1


@pytest.mark.django_db
def test_a_client_without_report_compaction_counts_its_compactions(tools):
    tools.ok("start_session", {"sessionId": "plain"})
    first = tools.ok("complete_compaction", {"sessionId": "plain"})
    second = tools.ok("complete_compaction", {"sessionId": "plain", "fullReload": False})
    assert [(a["compactionNumber"], a["fullReload"]) for a in (first, second)] == \
        [(1, False), (2, False)]
    assert [p["full_reload"] for p in completions(tools, "plain")] == [False, False]
    assert tools.ok("report_compaction", {"sessionId": "plain"})["compactionNumber"] == 3
    assert tools.ok("complete_compaction", {"sessionId": "plain"})["compactionNumber"] == 3


@pytest.mark.django_db
def test_complete_compaction_refusals(tools):
    assert tools.call("complete_compaction", {"sessionId": "ghost"}).error_code == "E1600"
    tools.ok("start_session", {"sessionId": "s1"})
    assert tools.call("complete_compaction", {"sessionId": "s1",
                                              "compactionNumber": 5}).error_code == "E1612"
    tools.ok("end_session", {"sessionId": "s1"})
    assert tools.call("complete_compaction", {"sessionId": "s1"}).error_code == "E1602"


@pytest.mark.django_db
def test_compaction_answers_carry_seed_004s_summary_counters(tools, settings):
    """Completed N/total, Restoring (in progress), Pending audit (completed within
    RECENT_COMPLETION_WINDOW hours), counted over the session's project; archived tasks
    are not in the total."""
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone

    from contexts.models import TaskContext

    for task_id, status in (("p1", "in_progress"), ("p2", "in_progress"), ("p3", "completed"),
                            ("p4", "completed"), ("p5", "pending"), ("p6", "archived")):
        tools.ok("create_task", {"taskId": task_id, "name": task_id, "status": status})
    with connection.cursor() as cursor:
        # Past the trigger that stamps updated_at: completed before the window, then the
        # triggers back on for the rest of the test's transaction.
        cursor.execute("SET LOCAL session_replication_role = replica")
        TaskContext.objects.filter(task_id="p4").update(
            updated_at=timezone.now() - timedelta(hours=settings.RECENT_COMPLETION_WINDOW + 1))
        cursor.execute("SET LOCAL session_replication_role = origin")
    tools.ok("start_session", {"sessionId": "sc", "taskId": "p1"})
    reported = conforms("report_compaction", tools.ok("report_compaction", {"sessionId": "sc"}))
    counters = {"total": 5, "completed": 2, "restoring": 2, "pendingAudit": 1}
    assert reported["progress"] == counters
    assert reported["summary"] == ("RESUMED - Compaction #1 complete\n\n"
                                   "Completed: 2/5 tasks\nRestoring: 2 in-progress tasks\n"
                                   "Pending audit: 1 tasks")
    done = conforms("complete_compaction", tools.ok("complete_compaction", {"sessionId": "sc"}))
    assert done["progress"] == counters and done["summary"] == reported["summary"]
    tools.ok("report_compaction", {"sessionId": "sc"})
    tools.ok("save_context_snapshot", {"taskId": "p2", "updates": {"status": "completed"}})
    second = tools.ok("complete_compaction", {"sessionId": "sc"})
    assert second["summary"].startswith("RESUMED - Compaction #2 complete (full plan reload)")
    assert second["progress"] == {"total": 5, "completed": 3, "restoring": 1,
                                  "pendingAudit": 2}
