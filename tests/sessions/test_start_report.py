"""start_session's recovery report (recovery.start_report): one probe when nothing in the
project needs recovery, the full check_recovery as soon as one of its sources has
something. Each case compares the start's report with what check_recovery itself says."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from bench.roundtrips import PostgresTrace
from contexts.models import TaskContext
from contexts.services.bundle import context_bundle
from foundation.core.stamps import iso
from sessions.services import lifecycle, recovery
from tests.sessions.helpers import backdate, conforms


def without_stamp(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "timestamp"}


def started_report(tools, session_id: str, **arguments) -> dict:
    started = conforms("start_session", tools.ok("start_session",
                                                 {"sessionId": session_id, **arguments}))
    return started["recovery"]


def full_check(session_id: str) -> dict:
    """What check_recovery says for the project the session started in."""
    project_id = recovery.ActiveSession.objects.get(session_id=session_id).project_id
    return recovery.check_recovery(project_ids=[project_id], exclude_session=session_id)


@pytest.mark.django_db
def test_nothing_to_recover_reports_recent_completions_as_the_full_check(tools, settings):
    settings.RECENT_COMPLETION_WINDOW = 24
    tools.ok("create_task", {"taskId": "build", "name": "Build", "status": "in_progress"})
    for task_id in ("shipped", "also-shipped", "long-ago"):
        tools.ok("create_task", {"taskId": task_id, "name": task_id, "status": "completed"})
    with transaction.atomic(), connection.cursor() as cursor:
        # Past the trigger that stamps updated_at: completed 30 hours ago.
        cursor.execute("SET LOCAL session_replication_role = replica")
        TaskContext.objects.filter(task_id="long-ago").update(
            updated_at=timezone.now() - timedelta(hours=30))
    tools.ok("start_session", {"sessionId": "live", "taskId": "build"})

    report = started_report(tools, "newcomer")
    assert report["needsRecovery"] is False
    assert report["summary"] == "No sessions need recovery."
    assert [t["taskId"] for t in report["recentCompletions"]] == ["also-shipped", "shipped"]
    shipped = TaskContext.objects.get(task_id="shipped")
    assert report["recentCompletions"][1] == {
        "taskId": "shipped", "name": "shipped", "projectId": shipped.project_id,
        "completedAt": iso(shipped.updated_at)}
    assert without_stamp(report) == without_stamp(full_check("newcomer"))


@pytest.mark.django_db
def test_the_start_its_probe_and_its_bundle_are_one_round_trip(tools):
    """The session's insert, the recovery probe and the task's context bundle go to
    Postgres together (a pipeline of three prepared statements): a start on a task is two
    round trips, the task's project and that one. The heartbeat file it has just written
    is its own, so it is not read back. What it answers is what the separate reads say."""
    tools.ok("create_task", {"taskId": "shipped", "name": "Shipped", "status": "completed"})
    tools.ok("create_task", {"taskId": "build", "name": "Build", "status": "in_progress",
                             "keyFiles": ["src/build.py"],
                             "immediateContext": {"workingOn": "the parser"}})
    lifecycle.start_session(session_id="warm", task_id="build",
                            context_budget_tokens=2000)  # prepares the statements
    trace = PostgresTrace()
    with trace.capture():
        started = lifecycle.start_session(session_id="measured", task_id="build",
                                          context_budget_tokens=2000)
    assert trace.round_trips() == 2, trace.statements()
    assert started["recovery"]["needsRecovery"] is False
    assert [t["taskId"] for t in started["recovery"]["recentCompletions"]] == ["shipped"]
    assert without_stamp(started["recovery"]) == without_stamp(full_check("measured"))
    assert "the parser" in started["contextBundle"]["text"]
    assert started["contextBundle"] == context_bundle("build", 2000)
    # Without a budget no bundle is read: the insert and the probe.
    with trace.capture():
        assert "contextBundle" not in lifecycle.start_session(session_id="plain",
                                                              task_id="build")
    assert trace.round_trips() == 2, trace.statements()


@pytest.mark.django_db
def test_no_completions_is_an_empty_list(tools):
    report = started_report(tools, "alone")
    assert report["recentCompletions"] == [] and report["sessions"] == []
    assert without_stamp(report) == without_stamp(full_check("alone"))


@pytest.mark.django_db
def test_a_session_flagged_by_the_sweep_is_reported(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("start_session", {"sessionId": "gone", "taskId": "t1"})
    backdate("gone", 10)
    recovery.detect_crashed_sessions()  # beat's sweep, before this start
    report = started_report(tools, "next")
    assert [s["sessionId"] for s in report["sessions"]] == ["gone"]
    assert [t["taskId"] for t in report["orphanedTasks"]] == ["t1"]
    assert report["needsRecovery"] is True


@pytest.mark.django_db
def test_a_stale_live_session_is_flipped_and_reported(tools):
    tools.ok("start_session", {"sessionId": "silent"})
    backdate("silent", 10)
    report = started_report(tools, "next")
    assert [(s["sessionId"], s["recoveryType"]) for s in report["sessions"]] == \
        [("silent", "crash")]


@pytest.mark.django_db
def test_an_overdue_pause_is_reported(tools):
    tools.ok("start_session", {"sessionId": "waiting"})
    tools.ok("pause_session", {"sessionId": "waiting", "reason": "usage_limit",
                               "resetsAt": iso(timezone.now() - timedelta(minutes=6))})
    report = started_report(tools, "next")
    assert [(s["sessionId"], s["recoveryType"]) for s in report["sessions"]] == \
        [("waiting", "timeout")]


@pytest.mark.django_db
def test_orphaned_work_of_a_recovered_crash_is_reported(tools):
    """The crash was marked recovered (no longer flagged), and no live session took its
    task: is that task still orphaned? The probe must agree with the full check."""
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("start_session", {"sessionId": "gone", "taskId": "t1"})
    backdate("gone", 10)
    recovery.detect_crashed_sessions()
    with connection.cursor() as cursor:
        # Flagged no more, still crashed: the state a probe of the flag alone would miss.
        cursor.execute(f"UPDATE {recovery.sessions_table()} SET recovery_needed = FALSE "
                       "WHERE session_id = 'gone'")
    report = started_report(tools, "next")
    assert [t["taskId"] for t in report["orphanedTasks"]] == ["t1"]
    assert without_stamp(report) == without_stamp(full_check("next"))


@pytest.mark.django_db
def test_sessions_the_client_saw_die_are_reported(tools):
    tools.ok("start_session", {"sessionId": "killed"})
    report = started_report(tools, "next", crashedSessionIds=["killed"])
    assert [s["sessionId"] for s in report["sessions"]] == ["killed"]


@pytest.mark.django_db
def test_enable_auto_recovery_check_false_turns_the_start_check_off(tools, settings):
    """ENABLE_AUTO_RECOVERY_CHECK=false, read from the environment as the server reads it:
    a start neither reports nor sweeps (the stale session stays active, nothing listed);
    a crash the client saw itself (crashedSessionIds) is still recorded. Back on, the
    next start finds the stale one."""
    from foundation.config import load_settings
    from sessions.services.common import session_status

    loaded = load_settings({"ENABLE_AUTO_RECOVERY_CHECK": "false"})
    assert loaded.ENABLE_AUTO_RECOVERY_CHECK is False
    settings.ENABLE_AUTO_RECOVERY_CHECK = loaded.ENABLE_AUTO_RECOVERY_CHECK
    tools.ok("start_session", {"sessionId": "stale"})
    tools.ok("start_session", {"sessionId": "seen-dead"})
    backdate("stale", 600)

    started = conforms("start_session", tools.ok("start_session", {
        "sessionId": "quiet", "crashedSessionIds": ["seen-dead"]}))
    assert "recovery" not in started
    assert session_status("stale") == "active"  # no sweep on start
    assert session_status("seen-dead") == "crashed"  # the client's own report still counts

    settings.ENABLE_AUTO_RECOVERY_CHECK = load_settings({}).ENABLE_AUTO_RECOVERY_CHECK
    report = started_report(tools, "loud")
    assert report["needsRecovery"] is True
    assert {s["sessionId"] for s in report["sessions"]} == {"stale", "seen-dead"}
    assert session_status("stale") == "crashed"
