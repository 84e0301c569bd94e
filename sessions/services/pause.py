"""Pause and resume (seed 004 "Session Pause Procedure", "After Session Pause").

A session is paused when its agent cannot work for a while: a usage limit (the Claude
Code client says so from StopFailure), a user stop or a system error. The pause lives on
the session's detail row (``paused_at``, reason, remaining share, ``resets_at``); the
spec's status column keeps its value (active or compacted), so programs reading
``active_sessions`` the spec's way see nothing they do not know. While paused:

- the crash sweep, a client's report of a dead process and the console's "mark crashed"
  leave the session alone: a paused session expects no heartbeats and is never marked
  crashed;
- heartbeats are still taken (a watchdog keeps beating while Claude Code waits at the
  limit) and leave the pause as it is;
- ``record_activity`` with a heartbeat (a hook reporting real work: a prompt, a tool
  use, a finished turn) resumes it, as ``resume_session`` does;
- once ``resets_at`` + PAUSE_RESUME_GRACE_MINUTES has passed, ``check_recovery`` lists
  it with a resume prompt.

Each pause and resume appends a ``system_event`` to the session's event log:
``session_pause`` (reason, remaining_percent, resets_at, auto_resume_at) and
``session_resume`` (resume_count, paused_seconds, reason, tasks_to_revalidate).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from orchestrator.core.errors import OrchestratorError
from orchestrator.core.stamps import iso
from sessions.services import events
from sessions.services.common import (
    DETAIL_TABLE,
    LIVE_STATUSES,
    logger,
    refuse_for_status,
    session_status,
    sessions_table,
    tasks_table,
)

PAUSE_REASONS = ("usage_limit", "user_stop", "system_error")
# SQL: true when session row ``s`` is paused (used by the crash sweep's UPDATE).
PAUSED_SQL = (f"EXISTS (SELECT 1 FROM {DETAIL_TABLE} pd WHERE pd.session_id = s.session_id "
              "AND pd.paused_at IS NOT NULL)")


def grace() -> timedelta:
    return timedelta(minutes=settings.PAUSE_RESUME_GRACE_MINUTES)


def _locked_live(session_id: str, action: str) -> None:
    """Lock the detail row (the event log's lock) and refuse a session that is not live."""
    events.lock_open_session(session_id, action=action)
    status = session_status(session_id)
    if status not in LIVE_STATUSES:
        raise refuse_for_status(session_id, status, action=action)


def pause_state(session_id: str) -> dict[str, Any] | None:
    """The session's pause ({reason, pausedAt, resetsAt, remainingPercent, resumeAt}), or
    None when it is not paused."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT paused_at, pause_reason, pause_resets_at, "
                       f"pause_remaining_percent FROM {DETAIL_TABLE} WHERE session_id = %s",
                       [session_id])
        row = cursor.fetchone()
    if row is None or row[0] is None:
        return None
    return pause_data(*row)


def pause_data(paused_at: datetime, reason: str | None, resets_at: datetime | None,
               remaining: float | None) -> dict[str, Any]:
    return {"reason": reason, "pausedAt": iso(paused_at), "resetsAt": iso(resets_at),
            "remainingPercent": remaining,
            "resumeAt": iso(resets_at + grace()) if resets_at else None}


def pause_session(session_id: str, *, reason: str, resets_at: datetime | None = None,
                  remaining_percent: float | None = None) -> dict[str, Any]:
    """Pause a live session (E1600 unknown, E1602 over, E1603 crashed). Pausing a paused
    session updates its reason, reset time and remaining share (a later report knows
    more) and logs nothing new."""
    if reason not in PAUSE_REASONS:
        raise OrchestratorError("E1612", f"reason must be one of {', '.join(PAUSE_REASONS)}",
                                {"field": "reason", "value": str(reason)[:100]})
    with transaction.atomic():
        _locked_live(session_id, "pausing it")
        with connection.cursor() as cursor:
            # The row is locked (lock_open_session): read, then write.
            cursor.execute(f"SELECT paused_at FROM {DETAIL_TABLE} WHERE session_id = %s",
                           [session_id])
            already = cursor.fetchone()[0] is not None
            cursor.execute(
                f"UPDATE {DETAIL_TABLE} SET paused_at = COALESCE(paused_at, now()), "
                "pause_reason = %s, pause_resets_at = %s, pause_remaining_percent = %s "
                "WHERE session_id = %s RETURNING paused_at, resume_count",
                [reason, resets_at, remaining_percent, session_id])
            paused_at, resume_count = cursor.fetchone()
        pause = pause_data(paused_at, reason, resets_at, remaining_percent)
        if not already:
            events.append_event(session_id, "system_event", "system", "session_pause", {
                "event": "session_pause", "reason": reason,
                "remaining_percent": remaining_percent, "resets_at": iso(resets_at),
                "auto_resume_at": pause["resumeAt"]})
    if not already:
        logger.info("session paused", extra={"sessionId": session_id, "reason": reason,
                                              "resetsAt": iso(resets_at),
                                              "remainingPercent": remaining_percent})
    return {"success": True, "sessionId": session_id, "paused": True,
            "alreadyPaused": already, "resumeCount": resume_count, **pause}


def resume_session(session_id: str, *, trigger: str = "resume_session") -> dict[str, Any]:
    """End the pause of a live session (E1600 unknown, E1602 over, E1603 crashed); a
    session that is not paused answers ``wasPaused: false`` and changes nothing."""
    with transaction.atomic():
        _locked_live(session_id, "resuming it")
        resumed = _clear_pause(session_id)
        if resumed is None:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT resume_count FROM {DETAIL_TABLE} WHERE session_id = %s",
                               [session_id])
                count = cursor.fetchone()[0]
            return {"success": True, "sessionId": session_id, "paused": False,
                    "wasPaused": False, "resumeCount": count}
        answer = _log_resume(session_id, resumed, trigger)
    _log_line(session_id, answer, trigger)
    return answer


def resume_if_paused(session_id: str) -> bool:
    """A live session showed activity: end its pause if it has one. One conditional
    UPDATE (matching nothing, almost always) outside any transaction of its own: this
    runs with every hook flush."""
    resumed = _clear_pause(session_id)
    if resumed is None:
        return False
    answer = _log_resume(session_id, resumed, "activity")
    _log_line(session_id, answer, "activity")
    return True


def _clear_pause(session_id: str) -> tuple | None:
    """Clear the pause; what it was (paused_at, reason, resets_at), the new resume count
    and now(); None when the session was not paused. The CTE's row lock re-reads a row a
    concurrent resume changed, so two resumes count one."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH old AS (SELECT session_id, paused_at, pause_reason, pause_resets_at "
            f"FROM {DETAIL_TABLE} WHERE session_id = %s AND paused_at IS NOT NULL "
            f"FOR UPDATE) UPDATE {DETAIL_TABLE} d SET paused_at = NULL, pause_reason = NULL, "
            "pause_resets_at = NULL, pause_remaining_percent = NULL, "
            "resume_count = d.resume_count + 1 FROM old WHERE d.session_id = old.session_id "
            "RETURNING old.paused_at, old.pause_reason, old.pause_resets_at, "
            "d.resume_count, now()",
            [session_id])
        return cursor.fetchone()


def _log_resume(session_id: str, resumed: tuple, trigger: str) -> dict[str, Any]:
    paused_at, reason, resets_at, resume_count, now = resumed
    revalidate = _tasks_to_revalidate(session_id, paused_at)
    paused_seconds = max(0.0, (now - paused_at).total_seconds())
    events.append_event(session_id, "system_event", "system", "session_resume", {
        "event": "session_resume", "resume_count": resume_count, "reason": reason,
        "paused_seconds": round(paused_seconds, 3), "resets_at": iso(resets_at),
        "tasks_to_revalidate": revalidate, "trigger": trigger})
    return {"success": True, "sessionId": session_id, "paused": False, "wasPaused": True,
            "resumeCount": resume_count, "reason": reason, "pausedAt": iso(paused_at),
            "pausedSeconds": round(paused_seconds, 3), "tasksToRevalidate": revalidate}


def _log_line(session_id: str, answer: dict[str, Any], trigger: str) -> None:
    logger.info("session resumed", extra={"sessionId": session_id,
                                          "resumeCount": answer["resumeCount"],
                                          "pausedSeconds": answer["pausedSeconds"],
                                          "trigger": trigger})


def _tasks_to_revalidate(session_id: str, since: datetime) -> list[str]:
    """Seed 004: tasks of the session's project completed within RECENT_COMPLETION_WINDOW
    hours before the pause (or since), to check before new work."""
    window = timedelta(hours=settings.RECENT_COMPLETION_WINDOW)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.task_id FROM {tasks_table()} t JOIN {sessions_table()} s "
            "ON s.project_id = t.project_id WHERE s.session_id = %s "
            "AND t.status = 'completed' AND t.updated_at >= %s "
            "ORDER BY t.updated_at DESC LIMIT 100", [session_id, since - window])
        return [r[0] for r in cursor.fetchall()]
