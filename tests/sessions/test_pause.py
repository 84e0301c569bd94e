"""Pause and resume (seed 004, issue 22 item 5): a paused session is never marked
crashed, takes heartbeats without resuming, resumes on activity or resume_session, logs
session_pause / session_resume with the seed's fields, and is listed by check_recovery
once its reset time + PAUSE_RESUME_GRACE_MINUTES has passed."""

from __future__ import annotations

import importlib
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.apps import apps as django_apps
from django.db import connection
from django.utils import timezone

from foundation.core.errors import OrchestratorError
from foundation.core.models import ApiToken, TokenScope
from foundation.core.stamps import iso
from sessions.models import SessionDetail, ToolInvocation
from sessions.services import recovery
from tests.conftest import ToolClient
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


# -- one token cannot break the others (issue 34) ---------------------------------------------
def _limited(project: str) -> ToolClient:
    _, raw = ApiToken.issue(f"{project}-{time.monotonic_ns()}", TokenScope.WRITE, [project])
    return ToolClient(raw)


def _two_projects(tools) -> tuple[ToolClient, ToolClient]:
    for key in ("pause-a", "pause-b"):
        tools.ok("create_project", {"projectId": key, "name": key})
    return _limited("pause-a"), _limited("pause-b")


def _still_served(client: ToolClient) -> None:
    """What every session start and recovery asks: answered for this token."""
    started = client.ok("start_session", {})["sessionId"]
    assert "sessions" in client.ok("check_recovery", {})
    assert "sessions" in client.ok("check_recovery", {"includeHistory": True})
    client.ok("pause_session", {"sessionId": started, "reason": "user_stop"})
    assert client.ok("resume_session", {"sessionId": started})["wasPaused"] is True


@pytest.mark.django_db
def test_a_pause_before_year_one_is_refused_and_breaks_nobody(tools):
    """The issue's probe: a project-limited token pausing with a reset before year 1."""
    one, other = _two_projects(tools)
    session = one.ok("start_session", {})["sessionId"]
    refused = one.call("pause_session", {"sessionId": session, "reason": "usage_limit",
                                         "resetsAt": "0001-01-01T00:00:00+01:00"})
    assert (refused.status, refused.error_code) == (400, "E1612"), refused.body
    _still_served(other)
    _still_served(one)
    one.ok("end_session", {"sessionId": session})
    _still_served(tools)


def _store_reset(session_id: str, resets_at: str) -> None:
    """A row as stored before input was bounded (written as the pause service would)."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {SessionDetail._meta.db_table} SET paused_at = now(), "
                       "pause_reason = 'usage_limit', pause_resets_at = %s::timestamptz "
                       "WHERE session_id = %s", [resets_at, session_id])


@pytest.mark.django_db
def test_a_reset_stored_before_year_one_does_not_break_check_recovery(tools):
    one, other = _two_projects(tools)
    session = one.ok("start_session", {})["sessionId"]
    _store_reset(session, "0001-01-01T00:00:00+01:00")
    _still_served(other)
    _still_served(tools)  # a token reaching every project reads past the row too
    assert "sessions" in one.ok("check_recovery", {})


@pytest.mark.django_db
def test_the_migration_mends_times_stored_out_of_range(tools):
    mend = importlib.import_module("sessions.migrations.0011_stored_times_in_range").mend
    early, late, fine = (tools.ok("start_session", {})["sessionId"] for _ in range(3))
    _store_reset(early, "0001-01-01T00:00:00+01:00")
    _store_reset(late, "10000-01-01T00:00:00Z")
    _store_reset(fine, "2026-11-27T10:00:00Z")
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ToolInvocation._meta.db_table} (session_id, tool, success, "
            "transport, duration_ms, timestamp) VALUES (%s, 'Edit', true, 'hook', 0, "
            "'0001-01-01T00:00:00+01:00'::timestamptz), (%s, 'Bash', true, 'hook', 0, "
            "'10000-01-01T00:00:00Z'::timestamptz)", [early, late])
    mend(django_apps, SimpleNamespace(connection=connection))
    resets = dict(SessionDetail.objects.filter(session_id__in=[early, late, fine])
                  .values_list("session_id", "pause_resets_at"))
    assert resets == {early: None, late: None,
                      fine: datetime(2026, 11, 27, 10, tzinfo=UTC)}
    assert SessionDetail.objects.get(session_id=early).paused_at is not None  # still paused
    stamps = sorted(ToolInvocation.objects.filter(session_id__in=[early, late], transport="hook")
                    .values_list("timestamp", flat=True))
    assert stamps == [datetime(1970, 1, 1, tzinfo=UTC),
                      datetime(9998, 12, 31, 23, 59, 59, tzinfo=UTC)]
