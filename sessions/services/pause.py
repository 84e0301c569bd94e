"""Pause and resume: a session that cannot work for a while is not a crashed one.

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
- it takes no new work, so nothing is assigned to an agent that cannot do it:
  ``switch_task`` and
  ``acquire_task_lock`` naming it, and ``claim_files`` for it, are refused with E1633
  and the pause's reason; saving its own work (save_context_snapshot, events, the
  scratchpad, checkpoints) is allowed, so nothing it did is lost;
- the pause is written to the project's state file (``.session-state.json``);
- once ``resets_at`` + PAUSE_RESUME_GRACE_MINUTES has passed, the periodic job
  ``resume_paused_sessions`` (beat, ``manage.py resume_paused_sessions``) resumes it,
  logs it (``session_resume`` with trigger ``auto_resume``, a log line) and leaves a
  notice ("SESSION RESUMED - Reset complete") for its next hook answer; until that job
  has run, ``check_recovery`` lists it with a resume prompt.

Each pause and resume appends a ``system_event`` to the session's event log:
``session_pause`` (reason, remaining_percent, resets_at, auto_resume_at) and
``session_resume`` (resume_count, paused_seconds, reason, tasks_to_revalidate).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from foundation.core.errors import OrchestratorError
from foundation.core.stamps import iso
from sessions.services import events, markers
from sessions.services.common import (
    DETAIL_TABLE,
    LIVE_STATUSES,
    fetch_dicts,
    logger,
    refuse_for_status,
    session_status,
    sessions_table,
    tasks_table,
)
from sessions.services.notices import add_notices

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


def paused_refusal(session_id: str, reason: str | None, resets_at: datetime | None,
                   *, action: str) -> OrchestratorError:
    """E1633 for a paused session asking for new work (``action``: "switching tasks")."""
    resume_at = iso(resets_at + grace()) if resets_at else None
    when = (f"; it resumes by itself at {resume_at}" if resume_at
            else "; resume_session (or the agent's next activity) ends the pause")
    return OrchestratorError(
        "E1633", f"Session {session_id!r} is paused ({reason or 'no reason given'}): it "
        f"takes no new work while paused, so {action} is refused. Saving its own work "
        f"still works{when}.",
        {"sessionId": session_id, "reason": reason, "resetsAt": iso(resets_at),
         "resumeAt": resume_at})


def refuse_if_paused(session_id: str, *, action: str) -> None:
    """Raise E1633 when the session is paused (one primary-key read of its detail row).
    For the calls that are not hook calls (switch_task, acquire_task_lock); claim_files
    reads the pause with the session row it already reads."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pause_reason, pause_resets_at FROM {DETAIL_TABLE} "
                       "WHERE session_id = %s AND paused_at IS NOT NULL", [session_id])
        row = cursor.fetchone()
    if row is not None:
        raise paused_refusal(session_id, row[0], row[1], action=action)


def refuse_paused_lock(sender: Any, *, session_id: str, **kwargs: Any) -> None:
    """Receiver of locks' ``lock_requested``: a paused session takes no task lock (a lock
    is new work), E1633 before anything is written. Renewing or releasing a
    lock it holds stays allowed: that is finishing its own work."""
    refuse_if_paused(session_id, action="taking a task lock")


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
                f"UPDATE {DETAIL_TABLE} d SET paused_at = COALESCE(d.paused_at, now()), "
                "pause_reason = %s, pause_resets_at = %s, pause_remaining_percent = %s "
                f"FROM {sessions_table()} s WHERE d.session_id = %s "
                "AND s.session_id = d.session_id RETURNING d.paused_at, d.resume_count, "
                "d.compaction_count, s.project_id, s.task_id",
                [reason, resets_at, remaining_percent, session_id])
            paused_at, resume_count, compactions, project_id, task_id = cursor.fetchone()
        pause = pause_data(paused_at, reason, resets_at, remaining_percent)
        if not already:
            events.append_event(session_id, "system_event", "system", "session_pause", {
                "event": "session_pause", "reason": reason,
                "remaining_percent": remaining_percent, "resets_at": iso(resets_at),
                "auto_resume_at": pause["resumeAt"]})
    # The state written where a resume without the server finds it.
    markers.write_state_file(project_id, session_id, "pause", task_id=task_id,
                             compaction_count=compactions, full_reload_due=False,
                             pause=pause)
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
    """After a pause ended (committed): the log line, and the state file no longer
    saying paused (one read of the session, only when a pause ended)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT s.project_id, s.task_id, d.compaction_count "
                       f"FROM {sessions_table()} s JOIN {DETAIL_TABLE} d "
                       "ON d.session_id = s.session_id WHERE s.session_id = %s", [session_id])
        row = cursor.fetchone()
    if row is not None:
        markers.write_state_file(row[0], session_id, "resume", task_id=row[1],
                                 compaction_count=row[2])
    logger.info("session resumed", extra={"sessionId": session_id,
                                          "resumeCount": answer["resumeCount"],
                                          "pausedSeconds": answer["pausedSeconds"],
                                          "trigger": trigger})


def _tasks_to_revalidate(session_id: str, since: datetime) -> list[str]:
    """Tasks of the session's project completed within RECENT_COMPLETION_WINDOW
    hours before the pause (or since), to check before new work."""
    window = timedelta(hours=settings.RECENT_COMPLETION_WINDOW)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.task_id FROM {tasks_table()} t JOIN {sessions_table()} s "
            "ON s.project_id = t.project_id WHERE s.session_id = %s "
            "AND t.status = 'completed' AND t.updated_at >= %s "
            "ORDER BY t.updated_at DESC LIMIT 100", [session_id, since - window])
        return [r[0] for r in cursor.fetchall()]


RESUMED_NOTICE = "SESSION RESUMED - Reset complete"


def resume_paused_sessions() -> list[str]:
    """Resume a pause once its limit has reset (resets_at + the grace): end the pause of
    every live session whose ``resets_at`` + PAUSE_RESUME_GRACE_MINUTES has passed (a
    pause without a reset time waits for resume_session or activity). Each is resumed as
    resume_session does (event ``session_resume`` with trigger ``auto_resume``, a log
    line) and gets a notice its next hook answer carries to the model. The periodic job
    (beat, ``manage.py resume_paused_sessions``); one session per transaction, and the
    row lock of _clear_pause makes two overlapping runs resume each session once."""
    due = fetch_dicts(
        f"SELECT d.session_id, s.project_id FROM {DETAIL_TABLE} d "
        f"JOIN {sessions_table()} s ON s.session_id = d.session_id "
        "WHERE d.paused_at IS NOT NULL AND d.pause_resets_at IS NOT NULL "
        "AND d.pause_resets_at + make_interval(secs => %s) <= now() "
        "AND s.status IN ('active', 'compacted') ORDER BY d.pause_resets_at LIMIT 1000",
        [grace().total_seconds()])
    resumed = []
    for row in due:
        session_id = row["session_id"]
        with transaction.atomic():
            cleared = _clear_pause(session_id)
            if cleared is None:  # resumed meanwhile (activity, resume_session, another run)
                continue
            answer = _log_resume(session_id, cleared, "auto_resume")
            add_notices([(session_id, row["project_id"], "session_resumed",
                          _resumed_text(answer, cleared[2]))])
        _log_line(session_id, answer, "auto_resume")
        resumed.append(session_id)
    return resumed


def _resumed_text(answer: dict[str, Any], resets_at: datetime | None) -> str:
    lines = [f"{RESUMED_NOTICE} (paused for {answer['reason'] or 'no reason given'} since "
             f"{answer['pausedAt']}; the limit reset at {iso(resets_at)}). New work may be "
             "taken again."]
    if answer["tasksToRevalidate"]:
        lines.append("Tasks completed shortly before the pause, to validate before new "
                     "work: " + ", ".join(answer["tasksToRevalidate"][:20]))
    return "\n".join(lines)
