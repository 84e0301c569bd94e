"""Pause and resume (seed 004, issue 22 item 5): a paused session is never marked
crashed, takes heartbeats without resuming, resumes on activity or resume_session, logs
session_pause / session_resume with the seed's fields, and is listed by check_recovery
once its reset time + PAUSE_RESUME_GRACE_MINUTES has passed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from orchestrator.core.errors import OrchestratorError
from orchestrator.core.stamps import iso
from sessions.models import SessionDetail
from sessions.services import recovery
from tests.sessions.helpers import backdate, conforms, status_of


def system_events(tools, session_id: str) -> list[dict]:
    return [e["parts"] for e in tools.ok("get_recent_session_events",
                                         {"sessionId": session_id})["events"]
            if e["type"] == "system_event"]


@pytest.mark.django_db
def test_pause_and_resume_log_the_seeds_events(tools):
    tools.ok("create_task", {"taskId": "t-done", "name": "Done", "status": "completed"})
    tools.ok("start_session", {"sessionId": "s1"})
    resets = (timezone.now() + timedelta(hours=2)).replace(microsecond=0)
    paused = conforms("pause_session", tools.ok("pause_session", {
        "sessionId": "s1", "reason": "usage_limit", "resetsAt": iso(resets),
        "remainingPercent": 3}))
    assert (paused["paused"], paused["alreadyPaused"], paused["reason"]) == \
        (True, False, "usage_limit")
    assert paused["resumeAt"] == iso(resets + timedelta(minutes=5))
    again = tools.ok("pause_session", {"sessionId": "s1", "reason": "user_stop"})
    assert again["alreadyPaused"] is True and again["reason"] == "user_stop"
    assert status_of("s1") == ("active", False, None)  # the spec's status is kept

    resumed = conforms("resume_session", tools.ok("resume_session", {"sessionId": "s1"}))
    assert (resumed["wasPaused"], resumed["resumeCount"], resumed["reason"]) == \
        (True, 1, "user_stop")
    assert resumed["tasksToRevalidate"] == ["t-done"]
    idle = tools.ok("resume_session", {"sessionId": "s1"})
    assert (idle["wasPaused"], idle["resumeCount"]) == (False, 1)

    pause_event, resume_event = system_events(tools, "s1")
    assert pause_event == {"event": "session_pause", "reason": "usage_limit",
                           "remaining_percent": 3, "resets_at": iso(resets),
                           "auto_resume_at": iso(resets + timedelta(minutes=5))}
    assert {"event": "session_resume", "resume_count": 1, "reason": "user_stop",
            "tasks_to_revalidate": ["t-done"]}.items() <= resume_event.items()


@pytest.mark.django_db
def test_a_paused_session_is_never_marked_crashed(tools):
    tools.ok("start_session", {"sessionId": "waiting"})
    tools.ok("start_session", {"sessionId": "gone"})
    tools.ok("pause_session", {"sessionId": "waiting", "reason": "usage_limit"})
    backdate("waiting", 600)
    backdate("gone", 600)
    assert recovery.detect_crashed_sessions() == ["gone"]
    assert recovery.report_crashed(["waiting"]) == []  # its process exited meanwhile
    with pytest.raises(OrchestratorError) as refused:  # the console's action
        recovery.mark_crashed("waiting")
    assert refused.value.code == "E1602" and refused.value.details["paused"] is True
    assert status_of("waiting") == ("active", False, None)
    report = tools.ok("check_recovery", {})
    assert [s["sessionId"] for s in report["sessions"]] == ["gone"]
    # A watchdog's heartbeat is taken and leaves the pause alone.
    beat = conforms("heartbeat", tools.ok("heartbeat", {"sessionId": "waiting"}))
    assert beat["paused"] is True
    assert SessionDetail.objects.get(session_id="waiting").paused_at is not None


@pytest.mark.django_db
def test_activity_resumes_a_paused_session(tools):
    tools.ok("start_session", {"sessionId": "s1"})
    tools.ok("pause_session", {"sessionId": "s1", "reason": "usage_limit"})
    late = tools.ok("record_activity", {"sessionId": "s1", "heartbeat": False,
                                        "toolUses": []})
    assert late["success"] and SessionDetail.objects.get(session_id="s1").paused_at
    tools.ok("record_activity", {"sessionId": "s1", "toolUses": [
        {"tool": "Bash", "success": True, "timestamp": "2030-01-01T00:00:00Z"}]})
    detail = SessionDetail.objects.get(session_id="s1")
    assert (detail.paused_at, detail.resume_count) == (None, 1)
    assert system_events(tools, "s1")[-1]["trigger"] == "activity"
    assert tools.ok("heartbeat", {"sessionId": "s1"})["paused"] is False


@pytest.mark.django_db
def test_a_pause_past_its_reset_is_listed_with_a_resume_prompt(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("start_session", {"sessionId": "overdue", "taskId": "t1", "projectDir": "/p"})
    tools.ok("start_session", {"sessionId": "early", "projectDir": "/p"})
    tools.ok("start_session", {"sessionId": "no-reset", "projectDir": "/p"})
    past = timezone.now() - timedelta(minutes=6)
    tools.ok("pause_session", {"sessionId": "overdue", "reason": "usage_limit",
                               "resetsAt": iso(past), "remainingPercent": 0})
    tools.ok("pause_session", {"sessionId": "early", "reason": "usage_limit",
                               "resetsAt": iso(timezone.now() - timedelta(minutes=4))})
    tools.ok("pause_session", {"sessionId": "no-reset", "reason": "user_stop"})
    report = conforms("check_recovery", tools.ok("check_recovery", {"projectDir": "/p"}))
    assert report["needsRecovery"] is True
    (entry,) = report["sessions"]
    assert (entry["sessionId"], entry["recoveryType"], entry["taskId"]) == \
        ("overdue", "timeout", "t1")
    assert entry["pause"]["reason"] == "usage_limit"
    assert entry["pause"]["resetsAt"] == iso(past)
    assert "## Session Paused - Usage limit" in entry["resumePrompt"]
    assert "`resume_session`" in entry["resumePrompt"]
    assert "## Recovery Required" in entry["resumePrompt"]
    assert "overdue (paused)" in report["summary"]
    tools.ok("resume_session", {"sessionId": "overdue"})
    assert tools.ok("check_recovery", {"projectDir": "/p"})["sessions"] == []


@pytest.mark.django_db
def test_pause_refusals(tools):
    assert tools.call("pause_session", {"sessionId": "ghost",
                                        "reason": "user_stop"}).error_code == "E1600"
    tools.ok("start_session", {"sessionId": "over"})
    tools.ok("end_session", {"sessionId": "over"})
    assert tools.call("pause_session", {"sessionId": "over",
                                        "reason": "user_stop"}).error_code == "E1602"
    assert tools.call("resume_session", {"sessionId": "over"}).error_code == "E1602"
    tools.ok("start_session", {"sessionId": "dead"})
    backdate("dead", 600)
    recovery.detect_crashed_sessions()
    assert tools.call("pause_session", {"sessionId": "dead",
                                        "reason": "system_error"}).error_code == "E1603"
    tools.ok("start_session", {"sessionId": "s1"})
    for bad in ({"reason": "lunch"}, {"reason": "usage_limit", "resetsAt": "soon"},
                {"reason": "usage_limit", "remainingPercent": 120}):
        assert tools.call("pause_session", {"sessionId": "s1", **bad}).error_code == "E1612"


@pytest.mark.django_db
def test_a_pause_abandoned_long_after_its_reset_is_closed_out(tools):
    tools.ok("start_session", {"sessionId": "waits"})
    tools.ok("start_session", {"sessionId": "forgotten"})
    tools.ok("pause_session", {"sessionId": "waits", "reason": "usage_limit",
                               "resetsAt": iso(timezone.now() + timedelta(days=3))})
    tools.ok("pause_session", {"sessionId": "forgotten", "reason": "user_stop"})
    with connection.cursor() as cursor:
        cursor.execute("UPDATE mcp_contexts.active_sessions SET last_heartbeat = now() - "
                       "interval '2 days'")
    assert recovery.clean_stale_sessions() == ["forgotten"]
    assert status_of("forgotten") == ("ended", True, "timeout")
    assert SessionDetail.objects.get(session_id="forgotten").paused_at is None
    assert status_of("waits") == ("active", False, None)
