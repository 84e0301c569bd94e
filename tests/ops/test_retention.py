"""Retention (spec 7.4, seed 003): what prune deletes, what it always keeps, the guarded
delete path, batches, the dry run and the command.

Transactional tests: the rules compare created_at with now(), which inside one test
transaction would never move.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from conflicts.models import ContextConflict
from contexts.models import Checkpoint, ContextVersion
from foundation.core.db import qualified
from orchestrator.ops import retention
from sessions.models import SessionEvent

pytestmark = pytest.mark.django_db(transaction=True)


def policy(**overrides) -> retention.RetentionPolicy:
    values = {"keep_versions": 3, "keep_days": 0, "checkpoints_per_task": 100,
              "prune_labelled_checkpoints": False, "event_days": 0, "batch_size": 2}
    return retention.RetentionPolicy(**{**values, **overrides})


def task_with_versions(tools, task_id: str, count: int) -> None:
    tools.ok("create_task", {"taskId": task_id, "name": task_id})
    for iteration in range(1, count):
        tools.ok("save_context_snapshot", {"taskId": task_id,
                                           "updates": {"iteration": iteration}})


def versions_of(task_id: str) -> list[int]:
    return sorted(ContextVersion.objects.filter(task_id=task_id)
                  .values_list("version", flat=True))


def test_keeps_the_newest_versions_in_batches_and_reports_first_in_a_dry_run(tools):
    task_with_versions(tools, "rt-a", 10)
    dry = retention.prune(policy(), dry_run=True)
    assert dry.versions_by_task == {"rt-a": 7}
    assert versions_of("rt-a") == list(range(1, 11))
    done = retention.prune(policy())  # batch_size 2: four batches
    assert done.versions_by_task == {"rt-a": 7}
    assert versions_of("rt-a") == [8, 9, 10]
    assert retention.prune(policy()).versions_by_task == {}


def test_keeps_versions_younger_than_the_age_limit(tools):
    task_with_versions(tools, "rt-young", 6)
    assert retention.prune(policy(keep_days=1)).versions_by_task == {}
    assert versions_of("rt-young") == list(range(1, 7))


def test_never_deletes_a_version_a_checkpoint_needs(tools):
    task_with_versions(tools, "rt-cp", 2)
    checkpoint = tools.ok("create_checkpoint", {"label": "at v2", "taskId": "rt-cp"})
    for iteration in range(10, 14):
        tools.ok("save_context_snapshot", {"taskId": "rt-cp", "updates": {"iteration": iteration}})
    retention.prune(policy(keep_versions=2))
    assert versions_of("rt-cp") == [2, 5, 6]
    restored = tools.ok("rollback_to", {"taskId": "rt-cp", "target": {
        "type": "checkpoint", "checkpointId": checkpoint["checkpointId"]}})
    assert restored["restoredState"]["iteration"] == 1


def test_an_open_conflict_keeps_its_tasks_history(tools):
    task_with_versions(tools, "rt-x", 6)
    tools.ok("report_conflict", {"taskAId": "rt-x", "description": "disagree",
                                 "severity": "high"})
    assert retention.prune(policy()).versions_by_task == {}
    ContextConflict.objects.filter(task_a_id="rt-x").update(resolution_status="resolved")
    assert retention.prune(policy()).versions_by_task == {"rt-x": 3}


def test_checkpoint_quota_takes_automatic_ones_first(tools):
    tools.ok("create_task", {"taskId": "rt-q", "name": "quota"})
    made = []
    for number, kind in enumerate(["manual", "auto", "milestone", "auto", "manual", "auto"]):
        made.append(tools.ok("create_checkpoint", {"label": f"cp {number}", "taskId": "rt-q",
                                                   "checkpointType": kind})["checkpointId"])
    report = retention.prune(policy(checkpoints_per_task=2), dry_run=True)
    assert report.checkpoints == [made[1], made[3], made[5]]
    assert Checkpoint.objects.filter(task_id="rt-q").count() == 6
    retention.prune(policy(checkpoints_per_task=2))
    assert set(Checkpoint.objects.filter(task_id="rt-q").values_list("checkpoint_id",
                                                                     flat=True)) == \
        {made[0], made[2], made[4]}
    retention.prune(policy(checkpoints_per_task=2, prune_labelled_checkpoints=True))
    assert set(Checkpoint.objects.filter(task_id="rt-q").values_list("checkpoint_id",
                                                                     flat=True)) == \
        {made[2], made[4]}


def test_events_of_ended_sessions_go_running_ones_stay(tools):
    ended = tools.ok("start_session", {})["sessionId"]
    running = tools.ok("start_session", {})["sessionId"]
    for session in (ended, running):
        for text in ("one", "two", "three"):
            tools.ok("append_session_event", {"sessionId": session, "type": "user_message",
                                              "role": "user", "content": text})
    tools.ok("end_session", {"sessionId": ended})
    assert retention.prune(policy(event_days=1)).events_by_session == {}
    assert retention.prune(policy()).events_by_session == {ended: 3}
    assert not SessionEvent.objects.filter(session_id=ended).exists()
    assert SessionEvent.objects.filter(session_id=running).count() == 3


def test_the_guard_still_refuses_deletes_outside_a_prune(tools):
    task_with_versions(tools, "rt-guard", 5)
    retention.prune(policy())
    with pytest.raises(DatabaseError, match="immutable"), transaction.atomic(), \
            connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {qualified('context_versions')} WHERE task_id = 'rt-guard'")
    assert versions_of("rt-guard") == [3, 4, 5]


def test_prune_command_dry_run_prints_and_deletes_nothing(tools, settings):
    settings.RETENTION_KEEP_VERSIONS = 2
    settings.RETENTION_KEEP_DAYS = 0
    task_with_versions(tools, "rt-cmd", 5)
    out = io.StringIO()
    call_command("prune", "--dry-run", stdout=out)
    assert "would delete 3 context versions of 1 tasks" in out.getvalue()
    assert "rt-cmd: 3" in out.getvalue()
    assert versions_of("rt-cmd") == [1, 2, 3, 4, 5]
    call_command("prune", stdout=(out := io.StringIO()))
    assert "deleted 3 context versions" in out.getvalue()
    assert versions_of("rt-cmd") == [4, 5]


def test_owners_of_removed_sessions_are_forgotten(tools):
    from foundation.core.models import SessionOwner

    kept = tools.ok("start_session", {})["sessionId"]
    removed = tools.ok("start_session", {})["sessionId"]
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {qualified('active_sessions')} WHERE session_id = %s",
                       [removed])
    assert retention.prune(policy(), dry_run=True).session_owners == 0
    assert retention.prune(policy()).session_owners == 1
    assert list(SessionOwner.objects.values_list("session_id", flat=True)) == [kept]


def test_spent_claims_and_old_notices_go(tools, make_task):
    """Claims that warn no one (session over, released, lapsed long ago) and notices long
    delivered go; a live session's claims and its pending notices stay."""
    from claims.models import FileClaim
    from sessions.models import SessionNotice
    from sessions.services.notices import add_notices

    make_task("t1")
    make_task("t2")
    for session, task in (("live", "t1"), ("over", "t2")):
        tools.ok("start_session", {"sessionId": session, "taskId": task})
    tools.ok("claim_files", {"sessionId": "live", "paths": ["kept.py", "released.py",
                                                            "lapsed.py"]})
    tools.ok("claim_files", {"sessionId": "over", "paths": ["other.py"]})
    tools.ok("release_files", {"sessionId": "live", "paths": ["released.py"]})
    tools.ok("end_session", {"sessionId": "over"})
    add_notices([("live", "story-portal-app", "claim_overlap", "old, delivered"),
                 ("live", "story-portal-app", "claim_overlap", "pending")])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE file_claims SET expires_at = now() - interval '1 day' "
                       "WHERE path = 'lapsed.py'")
        cursor.execute(f"UPDATE {SessionNotice._meta.db_table} SET created_at = now() - "
                       "interval '40 days', delivered_at = CASE WHEN text = 'pending' THEN "
                       "NULL ELSE now() END")
    report = retention.prune(policy())
    assert (report.claims, report.notices) == (3, 1)
    assert list(FileClaim.objects.values_list("path", flat=True)) == ["kept.py"]
    assert list(SessionNotice.objects.values_list("text", flat=True)) == ["pending"]


def test_sessions_long_over_go_with_their_history_and_replaced_notes(tools):
    """Only retention deletes history (the stale sweep closes sessions out): a session
    ended longer than RETENTION_EVENT_DAYS ago goes with its tool history; a recent one,
    one needing recovery and the project's active handoff note stay."""
    from sessions.models import ActiveSession, SessionHandoff, ToolInvocation

    for session in ("old", "recent", "crashed"):
        tools.ok("start_session", {"sessionId": session})
        tools.ok("record_activity", {"sessionId": session, "toolUses": [
            {"tool": "Bash", "success": True, "timestamp": "2026-11-25T08:00:00Z"}]})
    tools.ok("end_session", {"sessionId": "old", "summary": "old note"})
    tools.ok("end_session", {"sessionId": "recent", "summary": "newest note"})
    tools.ok("check_recovery", {"crashedSessionIds": ["crashed"]})
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {qualified('active_sessions')} SET ended_at = now() - "
                       "interval '40 days', last_heartbeat = now() - interval '40 days' "
                       "WHERE session_id IN ('old', 'crashed')")
        cursor.execute(f"UPDATE {SessionHandoff._meta.db_table} SET created_at = now() - "
                       "interval '40 days' WHERE from_session_id = 'old'")
    report = retention.prune(policy(event_days=30))
    assert (report.sessions, report.handoffs) == (1, 1)
    assert sorted(ActiveSession.objects.values_list("session_id", flat=True)) == [
        "crashed", "recent"]
    assert not ToolInvocation.objects.filter(session_id="old").exists()
    assert ToolInvocation.objects.filter(session_id="recent").exists()
    assert list(SessionHandoff.objects.values_list("summary", flat=True)) == ["newest note"]
