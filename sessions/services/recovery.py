"""Crash and compaction recovery: sessions that died or lost their context, their resume
prompts, and the work they left orphaned.

A session needing recovery carries ``context_snapshot``: the task row as the database
had it at that moment (``to_jsonb``, taken from the task's current version row), its last
tool uses,
conversation summary and unsaved changes. Every state change is one conditional UPDATE,
so concurrent sweeps, workers and admins flip a session exactly once.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError, session_not_found
from foundation.core.models import Project
from foundation.core.prepared import Statement
from foundation.core.stamps import iso, now_iso
from foundation.core.tools.input_checks import EARLIEST_INSTANT
from sessions import signals
from sessions.models import ActiveSession, SessionDetail, SessionEvent
from sessions.services import history, markers, pause
from sessions.services.common import (
    DETAIL_TABLE,
    EVENTS_TABLE,
    HISTORY_TABLE,
    LIVE_STATUSES,
    announce_end,
    announce_ends,
    logger,
    refuse_for_status,
    session_status,
    sessions_table,
    tasks_table,
)
from sessions.services.pause import PAUSED_SQL
from sessions.services.prompts import RecoveryState, resume_prompt, task_from_row
from sessions.services.work import (
    ORPHANED_WORK_PROBE,
    OrphanedWork,
    forget_sessions,
    one_per_task,
    orphaned_work,
)

HISTORY_LIMIT = 10
CRASH_LOG_LINES = 50
# The system event a client appends when its agent's process died (orchestrator_hook).
CRASH_REPORT = "crash_report"
# Calls a client makes to keep the session itself (the hooks' own): not what the agent
# was doing, so not in a resume prompt's tool usage.
SESSION_BOOKKEEPING = frozenset({
    "start_session", "heartbeat", "record_activity", "append_session_event", "end_session",
    "report_compaction", "check_recovery", "get_context_bundle", "update_session_scratchpad",
    "complete_compaction", "pause_session", "resume_session",
    # the check before each edit: the edit itself is in the history
    "claim_files", "release_files"})
NOTHING_TO_RECOVER = "No sessions need recovery."
_STAMP = "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'"


def log_capped(one: str, many: str, recovery_type: str,
               sessions: list[dict[str, Any]]) -> None:
    """One WARN line per session ("Session crashed"), but a mass end (a host died, a long
    outage) must not flood the log: past CRASH_LOG_LINES, one line with the count."""
    for extra in sessions[:CRASH_LOG_LINES]:
        logger.warning(one, extra={**extra, "recoveryType": recovery_type})
    if len(sessions) > CRASH_LOG_LINES:
        logger.warning(many, extra={"count": len(sessions),
                                    "notListed": len(sessions) - CRASH_LOG_LINES,
                                    "recoveryType": recovery_type})


def snapshot_sql(recovery_type_param: str = "%s") -> str:
    """SQL for the new context_snapshot of session row ``s``, taken inside the UPDATE."""
    return (
        "COALESCE(s.context_snapshot, '{}'::jsonb) || jsonb_build_object("
        f"'recoveryType', {recovery_type_param}::text, "
        f"'capturedAt', to_char(now() AT TIME ZONE 'UTC', {_STAMP}), "
        # The task's content at this version is already stored, as jsonb, in its
        # immutable version row: copying that is ~30 % cheaper than converting the row
        # again, which matters when a mass crash snapshots thousands of sessions. The
        # row itself is the fallback should the version row ever be missing.
        "'task', COALESCE("
        f"(SELECT v.snapshot FROM {tasks_table()} t JOIN {qualified('context_versions')} v "
        "ON v.task_id = t.task_id AND v.version = t.version WHERE t.task_id = s.task_id), "
        f"(SELECT to_jsonb(t) FROM {tasks_table()} t WHERE t.task_id = s.task_id)), "
        "'toolHistory', COALESCE((SELECT jsonb_agg(jsonb_build_object("
        f"'timestamp', to_char(h.timestamp AT TIME ZONE 'UTC', {_STAMP}), "
        "'tool', h.tool, 'success', h.success) ORDER BY h.id DESC) FROM "
        f"(SELECT id, timestamp, tool, success FROM {HISTORY_TABLE} "
        f"WHERE session_id = s.session_id ORDER BY id DESC LIMIT {HISTORY_LIMIT}) h), "
        "'[]'::jsonb), "
        "'conversationSummary', s.conversation_summary, "
        "'unsavedChanges', COALESCE(s.unsaved_changes, '[]'::jsonb))")


def _flip_to_crashed(where: str, params: list[Any]) -> list[tuple]:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {sessions_table()} s SET status = 'crashed', recovery_needed = TRUE, "
            f"recovery_type = 'crash', context_snapshot = {snapshot_sql()} "
            f"WHERE s.status IN ('active', 'compacted') AND {where} "
            # A paused session expects no heartbeats and is never marked crashed.
            f"AND NOT {PAUSED_SQL} "
            # The heartbeat comes back as text: parsing 10,000 timestamps (for 50 log
            # lines) cost a mass-crash sweep ~25 ms.
            f"RETURNING s.session_id, to_char(s.last_heartbeat AT TIME ZONE 'UTC', {_STAMP}), "
            "s.project_id",
            ["crash", *params])
        rows = cursor.fetchall()
        log_capped("Session crashed", "Sessions crashed", "crash",
                   [{"sessionId": session_id, "projectId": project_id,
                     "lastHeartbeat": last_heartbeat}
                    for session_id, last_heartbeat, project_id in rows])
        announce_ends([r[0] for r in rows], "crashed")
    return rows


def detect_crashed_sessions(project_ids: list[str] | None = None) -> list[str]:
    """Flip live sessions whose heartbeat is older than CRASH_THRESHOLD_MINUTES (of
    ``project_ids``; None: of every project, as the beat job sweeps)."""
    seconds = settings.CRASH_THRESHOLD_MINUTES * 60
    where, params = "s.last_heartbeat < now() - make_interval(secs => %s)", [seconds]
    if project_ids is not None:
        where, params = where + " AND s.project_id = ANY(%s)", [seconds, list(project_ids)]
    rows = _flip_to_crashed(where, params)
    return [r[0] for r in rows]


def report_crashed(session_ids: list[str]) -> list[str]:
    """Sessions a client saw die (their agent process is gone, no SessionEnd came): flip
    them to crashed now rather than CRASH_THRESHOLD_MINUTES later. Only live sessions
    change; ended or already crashed ones are left as they are."""
    if not session_ids:
        return []
    return [r[0] for r in _flip_to_crashed("s.session_id = ANY(%s)", [list(session_ids)])]


def mark_crashed(session_id: str) -> None:
    """Admin action: declare a live session crashed now, whatever its heartbeat says (a
    paused one is refused: resume it first)."""
    if not _flip_to_crashed("s.session_id = %s", [session_id]):
        status = session_status(session_id)
        if status in LIVE_STATUSES and pause.pause_state(session_id) is not None:
            raise OrchestratorError(
                "E1602", f"Session {session_id!r} is paused; a paused session is never "
                "marked crashed (resume_session first)",
                {"sessionId": session_id, "status": status, "paused": True})
        raise refuse_for_status(session_id, status, action="marking it crashed")


def clean_stale_sessions() -> list[str]:
    """Close out abandoned sessions; never delete anything.

    A live session (active or compacted) silent for longer than STALE_SESSION_HOURS (a
    paused one: that long after its resetsAt, if later) is ended with recovery type
    ``timeout``. It keeps (or gets) its recovery flag and a fresh recovery snapshot: the
    crash sweep would have flagged it long before had it run (beat down, the server off
    for a day), so nobody has taken its work over yet and check_recovery must still
    offer its resume prompt until someone marks it recovered. Its event log, tool
    history, handoffs and work records stay: only retention removes history, by its own
    settings (RETENTION_EVENT_DAYS).
    """
    seconds = settings.STALE_SESSION_HOURS * 3600
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {sessions_table()} s SET status = 'ended', ended_at = now(), "
            "recovery_needed = TRUE, recovery_type = 'timeout', "
            f"context_snapshot = {snapshot_sql()} "
            "WHERE s.status IN ('active', 'compacted') "
            "AND GREATEST(COALESCE(s.last_heartbeat, s.started_at), "
            f"(SELECT d.pause_resets_at FROM {DETAIL_TABLE} d "
            "WHERE d.session_id = s.session_id AND d.paused_at IS NOT NULL)) "
            "< now() - make_interval(secs => %s) "
            "RETURNING s.session_id, s.project_id",
            ["timeout", seconds])
        rows = cursor.fetchall()
        closed = [r[0] for r in rows]
        if closed:
            # A pause ends with its session (the row lock order: session, then detail,
            # as nothing else takes them in the other order for a closed session).
            cursor.execute(f"UPDATE {DETAIL_TABLE} SET paused_at = NULL WHERE session_id = "
                           "ANY(%s) AND paused_at IS NOT NULL", [closed])
            announce_ends(closed, "ended")
    for session_id, project_id in rows:
        markers.mark_gone(session_id, project_id, "ended")
    log_capped("Session abandoned", "Sessions abandoned", "timeout",
               [{"sessionId": session_id, "projectId": project_id}
                for session_id, project_id in rows])
    return closed


def remove_sessions(session_ids: list[str]) -> list[str]:
    """Delete sessions with everything recorded about them (event log, tool history,
    detail and work records): for retention once their history has expired, never for
    the stale sweep. The event log's immutability guard lets this one transaction prune
    (orchestrator.allow_version_pruning). Returns the sessions deleted."""
    if not session_ids:
        return []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {sessions_table()} WHERE session_id = ANY(%s) "
                       "RETURNING session_id", [list(session_ids)])
        removed = [r[0] for r in cursor.fetchall()]
        touched: set[str] = set()
        if removed:
            cursor.execute("SELECT set_config('orchestrator.allow_version_pruning', 'on', true)")
            for table in (EVENTS_TABLE, HISTORY_TABLE, DETAIL_TABLE):
                cursor.execute(f"DELETE FROM {table} WHERE session_id = ANY(%s)", [removed])
            touched = forget_sessions(removed)
    if removed:
        logger.info("sessions removed", extra={"count": len(removed)})
        signals.sessions_removed.send(sender=ActiveSession, session_ids=removed,
                                      task_ids=sorted(touched))
    return removed


def mark_recovered(session_id: str, project_ids: list[str] | None = None) -> str:
    """Clear the recovery flag; a compacted (still running) session goes back to active.
    A session known only from a project's heartbeat file is looked for in the files of
    ``project_ids`` (None: every project's)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {sessions_table()} SET recovery_needed = FALSE, status = CASE "
            "WHEN status = 'compacted' THEN 'active' ELSE 'recovered' END "
            "WHERE session_id = %s AND recovery_needed RETURNING status", [session_id])
        row = cursor.fetchone()
    if row is not None:
        if row[0] == "recovered":
            announce_end(session_id, "recovered")
        logger.info("session recovered", extra={"sessionId": session_id, "status": row[0]})
        return row[0]
    status = session_status(session_id)
    if status is None:
        if _mark_file_session_recovered(session_id, project_ids):
            return "recovered"
        raise session_not_found(session_id, code="E1631")
    raise OrchestratorError("E1632", f"Session {session_id!r} needs no recovery ({status})",
                            {"sessionId": session_id, "status": status})


def _projects(project_ids: list[str] | None) -> list[str]:
    return list(project_ids) if project_ids is not None else \
        list(Project.objects.values_list("id", flat=True))


def _mark_file_session_recovered(session_id: str, project_ids: list[str] | None) -> bool:
    for project_id in _projects(project_ids):
        marker = markers.read_heartbeat_file(project_id)
        if not marker or marker.get("sessionId") != session_id:
            continue
        if marker.get("status") == "recovered":
            raise OrchestratorError("E1632", f"Session {session_id!r} already recovered",
                                    {"sessionId": session_id})
        return markers.write_heartbeat_file(project_id, {**marker, "status": "recovered",
                                                         "updatedAt": now_iso()})
    return False


def crash_reports(session_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each session's latest crash_report event (what the client saw when the agent's
    process died), in one query."""
    if not session_ids:
        return {}
    rows = (SessionEvent.objects.filter(session_id__in=session_ids, event_type="system_event",
                                        content=CRASH_REPORT)
            .order_by("session_id", "-sequence").distinct("session_id")
            .values_list("session_id", "parts"))
    return {session_id: parts for session_id, parts in rows if isinstance(parts, dict)}


def _state_from_row(session: ActiveSession, compactions: int,
                    crash_report: dict[str, Any] | None = None) -> RecoveryState:
    snapshot = session.context_snapshot if isinstance(session.context_snapshot, dict) else {}
    tool_history = history.recent_history(session.session_id, HISTORY_LIMIT,
                                          exclude=SESSION_BOOKKEEPING)
    if not tool_history:
        tool_history = list(snapshot.get("toolHistory") or [])
    return RecoveryState(
        session_id=session.session_id,
        recovery_type=session.recovery_type or "manual",
        last_activity=iso(session.last_heartbeat),
        task=task_from_row(snapshot.get("task")) or _current_task(session.task_id),
        tool_history=tool_history,
        unsaved_changes=list(session.unsaved_changes or snapshot.get("unsavedChanges") or []),
        conversation_summary=session.conversation_summary
        or snapshot.get("conversationSummary"),
        compaction_count=compactions,
        git_branch=session.git_branch,
        crash_report=crash_report or {},
    )


def _current_task(task_id: str | None) -> dict[str, Any] | None:
    from contexts.models import TaskContext
    from contexts.services.representation import task_part

    task = TaskContext.objects.filter(task_id=task_id).first() if task_id else None
    return task_part(task) if task else None


def _stale_file_state(project_id: str, known: set[str]) -> RecoveryState | None:
    """The second source of recovery: a project's stale heartbeat file whose session the database
    cannot vouch for."""
    marker = markers.read_heartbeat_file(project_id)
    if not marker or marker.get("status", "active") != "active":
        return None
    session_id = marker.get("sessionId")
    stamp = parse_datetime(str(marker.get("timestamp") or ""))
    threshold = timedelta(minutes=settings.CRASH_THRESHOLD_MINUTES)
    if not isinstance(session_id, str) or session_id in known or stamp is None \
            or timezone.now() - stamp < threshold:
        return None
    if session_status(session_id) is not None:
        # The database knows it: the sweep just judged it (crashed rows are listed already).
        return None
    return RecoveryState(
        session_id=session_id, recovery_type="crash", last_activity=iso(stamp),
        task=_current_task(marker.get("taskId")),
        tool_history=history.history_from_file(project_id, session_id, HISTORY_LIMIT))


def check_recovery(*, mark_recovered_id: str | None = None, include_history: bool = False,
                   project_ids: list[str] | None = None, project_dir: str | None = None,
                   exclude_session: str | None = None,
                   crashed_session_ids: list[str] | None = None) -> dict[str, Any]:
    """Sessions of ``project_ids`` (None: every project) needing recovery, with resume
    prompts; ``project_dir`` narrows them to one directory. Optionally marks one
    recovered first."""
    marked_row, orphans_before = None, []
    if mark_recovered_id:
        # What the recovery takes over, as it was before the mark (for the orphan_agent_detected
        # and coordinator_recovered events).
        marked_row = ActiveSession.objects.filter(session_id=mark_recovered_id).first()
        orphans_before = orphaned_work(project_ids=project_ids, project_dir=project_dir)
    marked = mark_recovered(mark_recovered_id, project_ids) if mark_recovered_id else None
    report_crashed(crashed_session_ids or [])
    # The projects asked about only: every start_session comes through here, and a sweep
    # of the whole server per start cost ~10 ms at 500 agents (beat sweeps the rest).
    detect_crashed_sessions(project_ids)
    rows = _scoped(ActiveSession.objects.filter(recovery_needed=True), project_ids,
                   project_dir, exclude_session)
    rows = list(rows.order_by("-last_heartbeat")[:100])
    paused = _overdue_pauses(project_ids, project_dir, exclude_session)
    listed = {r.session_id for r in rows}
    paused = [(row, info) for row, info in paused if row.session_id not in listed]
    rows += [row for row, _ in paused]
    pauses = {row.session_id: pause_info for row, pause_info in paused}
    counts = dict(SessionDetail.objects.filter(session_id__in=[r.session_id for r in rows])
                  .values_list("session_id", "compaction_count"))
    reports = crash_reports([r.session_id for r in rows])
    states = [_state_from_row(r, counts.get(r.session_id, 0), reports.get(r.session_id))
              for r in rows]
    for state in states:
        if state.session_id in pauses:
            state.recovery_type = "timeout"  # the pause outlived its reset time
    reconciled = events_since_saved_state([r.session_id for r in rows])
    orphans = orphaned_work(project_ids=project_ids, project_dir=project_dir)
    for state in states:
        state.orphaned_tasks = [{"taskId": o.task_id, "name": o.name}
                                for o in orphans if o.session_id == state.session_id]
    if project_dir is None:
        known = {s.session_id for s in states} | {exclude_session or ""}
        for project_id in _projects(project_ids):
            from_file = _stale_file_state(project_id, known)
            if from_file:
                states.append(from_file)
    sessions = [_session_entry(state, include_history, pauses.get(state.session_id),
                               reconciled.get(state.session_id)) for state in states]
    summary = (f"{len(sessions)} session(s) need recovery: " + ", ".join(
        f"{s['sessionId']} ({'paused' if 'pause' in s else s['recoveryType']})"
        for s in sessions)
        if sessions else NOTHING_TO_RECOVER)
    orphaned_tasks = _orphaned_tasks(orphans)
    result: dict[str, Any] = {"needsRecovery": bool(sessions), "sessions": sessions,
                              "orphanedTasks": orphaned_tasks,
                              "recentCompletions": recent_completions(project_ids),
                              "recentCompletionWindowHours":
                                  settings.RECENT_COMPLETION_WINDOW,
                              "summary": summary, "timestamp": now_iso()}
    if marked:
        result["markedRecovered"] = {"sessionId": mark_recovered_id, "status": marked}
        _log_coordinator_recovered(mark_recovered_id, marked_row, orphans_before, result)
    return result


# Whether anything in one project needs check_recovery's full work, and its recent
# completions (which every report carries), in one statement. Each EXISTS is one of the
# full check's sources: a live session past the crash threshold (the sweep would flip
# it), a session flagged for recovery, a pause overdue, orphaned work.
_START_PROBE = f"""
WITH flags AS (SELECT
  EXISTS (SELECT 1 FROM {sessions_table()} s WHERE s.project_id = %(project)s
          AND s.status IN ('active', 'compacted')
          AND s.last_heartbeat < now() - make_interval(secs => %(crash)s)
          AND NOT {PAUSED_SQL})
  OR EXISTS (SELECT 1 FROM {sessions_table()} s WHERE s.project_id = %(project)s
             AND s.recovery_needed AND s.session_id <> %(me)s)
  OR EXISTS (SELECT 1 FROM {DETAIL_TABLE} d JOIN {sessions_table()} s
             ON s.session_id = d.session_id
             WHERE d.paused_at IS NOT NULL
               AND d.pause_resets_at < now() - make_interval(secs => %(grace)s)
               AND s.project_id = %(project)s AND s.status IN ('active', 'compacted')
               AND s.session_id <> %(me)s)
  OR EXISTS ({ORPHANED_WORK_PROBE}) AS something),
done AS (SELECT task_id, name, project_id, updated_at FROM {tasks_table()}
         WHERE project_id = %(project)s AND status = 'completed'
           AND updated_at >= now() - make_interval(secs => %(window)s)
         ORDER BY updated_at DESC, task_id LIMIT 100)
SELECT flags.something,
       (SELECT array_agg(task_id ORDER BY updated_at DESC, task_id) FROM done) AS task_ids,
       (SELECT array_agg(name ORDER BY updated_at DESC, task_id) FROM done) AS names,
       (SELECT array_agg(updated_at ORDER BY updated_at DESC, task_id) FROM done) AS completed
FROM flags
"""


def start_probe(project_id: str, exclude_session: str) -> Statement:
    """The probe ``start_report`` reads (statement, parameters), which start_session
    sends prepared beside the session's insert (planning it cost more than running it)."""
    return _START_PROBE, {
        "project": project_id, "me": exclude_session,
        "crash": settings.CRASH_THRESHOLD_MINUTES * 60,
        "grace": pause.grace().total_seconds(),
        "window": settings.RECENT_COMPLETION_WINDOW * 3600}


def start_report(project_id: str, exclude_session: str,
                 crashed_session_ids: list[str] | None, *,
                 probed: dict[str, Any] | None, marker_is_mine: bool) -> dict[str, Any]:
    """``check_recovery``'s report for a session starting in ``project_id``. Every
    session start asks, and almost always nothing there needs recovery: one probe says
    so (and reads the recent completions), the full check runs only when it finds
    something, a client reports crashed sessions, or the heartbeat file is stale.
    ``probed``: the row of ``start_probe``, which the caller sends beside its own
    statement (None only with ``crashed_session_ids``, whose full check needs none);
    ``marker_is_mine``: the caller has just written the project's heartbeat file for
    this session, so it names no other session to look at."""
    if crashed_session_ids or (
            not marker_is_mine and _stale_file_state(project_id, {exclude_session})):
        return check_recovery(project_ids=[project_id], exclude_session=exclude_session,
                              crashed_session_ids=crashed_session_ids)
    if probed is None or probed["something"]:
        return check_recovery(project_ids=[project_id], exclude_session=exclude_session)
    completions = zip(probed["task_ids"] or (), probed["names"] or (),
                      probed["completed"] or (), strict=True)
    return {"needsRecovery": False, "sessions": [], "orphanedTasks": [],
            "recentCompletions": [{"taskId": task_id, "name": name, "projectId": project_id,
                                   "completedAt": iso(completed)}
                                  for task_id, name, completed in completions],
            "recentCompletionWindowHours": settings.RECENT_COMPLETION_WINDOW,
            "summary": NOTHING_TO_RECOVER, "timestamp": now_iso()}


def _scoped(rows: Any, project_ids: list[str] | None, project_dir: str | None,
            exclude_session: str | None) -> Any:
    if project_ids is not None:
        rows = rows.filter(project_id__in=project_ids)
    if project_dir is not None:
        rows = rows.filter(project_dir=project_dir)
    if exclude_session:
        rows = rows.exclude(session_id=exclude_session)
    return rows


def _overdue_pauses(project_ids: list[str] | None, project_dir: str | None,
                    exclude_session: str | None) -> list[tuple[ActiveSession, dict[str, Any]]]:
    """Live sessions still paused PAUSE_RESUME_GRACE_MINUTES after their resetsAt (seed
    004: the wait is over and nothing resumed them), newest reset first."""
    # Only the caller's sessions are read (a row of another project, whatever it holds,
    # can never fail this call), and only resets in the range input is held to: a row
    # stored before that check cannot be read into Python (before year 1).
    live = _scoped(ActiveSession.objects.filter(status__in=LIVE_STATUSES),
                   project_ids, project_dir, exclude_session)
    details = {d.session_id: d for d in SessionDetail.objects.filter(
        session_id__in=live.values("session_id"), paused_at__isnull=False,
        pause_resets_at__gte=EARLIEST_INSTANT,
        pause_resets_at__lt=timezone.now() - pause.grace())
        .order_by("-pause_resets_at")[:100]}
    if not details:
        return []
    rows = live.filter(session_id__in=list(details))
    found = []
    for row in rows:
        d = details[row.session_id]
        found.append((row, pause.pause_data(d.paused_at, d.pause_reason, d.pause_resets_at,
                                            d.pause_remaining_percent)))
    found.sort(key=lambda item: item[1]["resetsAt"] or "", reverse=True)
    return found


STATE_RECONCILED_SHOWN = 20


def events_since_saved_state(session_ids: list[str]) -> dict[str, dict[str, Any]]:
    """``state_reconciled``: per session, the events it wrote after its last
    saved state, the newest version of its task (what a recovering agent reads back), or
    all of them when it has no task or the task no version: {savedStateAt, count,
    events (the newest STATE_RECONCILED_SHOWN, oldest first)}. Two queries for all."""
    if not session_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.session_id, s.task_id, (SELECT max(v.created_at) FROM "
            f"{qualified('context_versions')} v WHERE v.task_id = s.task_id) "
            f"FROM {sessions_table()} s WHERE s.session_id = ANY(%s)", [list(session_ids)])
        saved = {sid: (task_id, at) for sid, task_id, at in cursor.fetchall()}
        cursor.execute(
            "SELECT session_id, sequence, event_type, content, parts, created_at, total "
            "FROM (SELECT e.session_id, e.sequence, e.event_type, e.content, e.parts, "
            "e.created_at, count(*) OVER w AS total, "
            "row_number() OVER (w ORDER BY e.sequence DESC) AS n "
            f"FROM {EVENTS_TABLE} e JOIN unnest(%s::text[], %s::timestamptz[]) "
            "AS k(session_id, saved_at) ON k.session_id = e.session_id "
            "WHERE k.saved_at IS NULL OR e.created_at > k.saved_at "
            "WINDOW w AS (PARTITION BY e.session_id)) x "
            "WHERE n <= %s ORDER BY session_id, sequence",
            [list(saved), [at for _, at in saved.values()], STATE_RECONCILED_SHOWN])
        found = cursor.fetchall()
    result = {sid: {"savedStateAt": iso(at), "count": 0, "events": []}
              for sid, (_, at) in saved.items()}
    for sid, sequence, event_type, content, parts, created_at, total in found:
        if isinstance(parts, str):
            parts = json.loads(parts)
        entry = result[sid]
        entry["count"] = total
        entry["events"].append({
            "sequence": sequence, "type": event_type,
            "event": (parts or {}).get("event") if isinstance(parts, dict) else None,
            "content": content[:500], "taskId": saved[sid][0], "createdAt": iso(created_at)})
    return result


def recent_completions(project_ids: list[str] | None) -> list[dict[str, Any]]:
    """The tasks completed within RECENT_COMPLETION_WINDOW hours, newest first,
    for a recovering agent to validate before it assigns new work."""
    from contexts.models import TaskContext

    since = timezone.now() - timedelta(hours=settings.RECENT_COMPLETION_WINDOW)
    tasks = TaskContext.objects.filter(status="completed", updated_at__gte=since)
    if project_ids is not None:
        tasks = tasks.filter(project_id__in=project_ids)
    return [{"taskId": task_id, "name": name, "projectId": project_id,
             "completedAt": iso(updated_at)}
            for task_id, name, project_id, updated_at in tasks.order_by("-updated_at", "task_id")
            .values_list("task_id", "name", "project_id", "updated_at")[:100]]


def _log_coordinator_recovered(session_id: str, row: ActiveSession | None,
                               orphans: list[OrphanedWork], result: dict[str, Any]) -> None:
    """A recovery's events, as structured log lines: one orphan_agent_detected per
    orphaned task (the crashed session that left it), one state_reconciled per event
    applied to the saved state, then coordinator_recovered."""
    project_id = row.project_id if row else None
    agents = dict(SessionDetail.objects.filter(
        session_id__in={o.session_id for o in orphans}).values_list("session_id", "agent_id"))
    for task_id, crashed_id in [(o.task_id, o.session_id) for o in orphans[:CRASH_LOG_LINES]]:
        logger.warning("orphan_agent_detected", extra={
            "event": "orphan_agent_detected", "agent_id": agents.get(crashed_id) or crashed_id,
            "sessionId": crashed_id, "task_id": task_id, "type": "session"})
    reconciled = events_since_saved_state([session_id]).get(session_id) or {}
    # state_reconciled (event_type, task_id): one per event the recovery applies
    # to the saved state, the ones stateReconciled listed (the newest
    # STATE_RECONCILED_SHOWN; events_reconciled below counts them all).
    for applied in reconciled.get("events", []):
        logger.info("state_reconciled", extra={
            "event": "state_reconciled", "sessionId": session_id, "projectId": project_id,
            "event_type": applied["event"] or applied["type"], "task_id": applied["taskId"],
            "sequence": applied["sequence"]})
    logger.info("coordinator_recovered", extra={
        "event": "coordinator_recovered", "sessionId": session_id, "projectId": project_id,
        "orphaned_agents": len({o.session_id for o in orphans}),
        "orphaned_tasks": len({o.task_id for o in orphans}),
        "events_reconciled": reconciled.get("count", 0),
        "recent_completions": len(result["recentCompletions"])})


def _orphaned_tasks(rows: list[OrphanedWork]) -> list[dict[str, Any]]:
    """One entry per orphaned task, naming the session that crashed on it last."""
    return [{"taskId": o.task_id, "name": o.name, "crashedSessionId": o.session_id,
             "lastActivity": iso(o.last_heartbeat)} for o in one_per_task(rows)]


def _session_entry(state: RecoveryState, include_history: bool,
                   pause_info: dict[str, Any] | None = None,
                   reconciled: dict[str, Any] | None = None) -> dict[str, Any]:
    prompt = resume_prompt(state)
    if pause_info:
        prompt = _pause_prompt(state.session_id, pause_info) + "\n" + prompt
    reconciled = reconciled or {"savedStateAt": None, "count": 0, "events": []}
    entry: dict[str, Any] = {
        "sessionId": state.session_id,
        "taskId": (state.task or {}).get("taskId"),
        "taskName": (state.task or {}).get("name"),
        "recoveryType": state.recovery_type,
        "lastActivity": state.last_activity,
        "resumePrompt": prompt,
        "unsavedChanges": state.unsaved_changes,
        "compactionCount": state.compaction_count,
        "fullReloadDue": state.full_reload_due,
        "savedStateAt": reconciled["savedStateAt"],
        "eventsSinceSavedState": reconciled["count"],
        "stateReconciled": reconciled["events"],
    }
    if pause_info:
        entry["pause"] = pause_info
    if include_history:
        entry["toolHistory"] = state.tool_history[:HISTORY_LIMIT]
    return entry


PAUSE_REASON_TEXT = {"usage_limit": "Usage limit", "user_stop": "User stop",
                     "system_error": "System error"}


def _pause_prompt(session_id: str, pause_info: dict[str, Any]) -> str:
    """The "SESSION PAUSED" notice for a pause whose reset time has passed."""
    reason = PAUSE_REASON_TEXT.get(str(pause_info.get("reason")), "paused")
    lines = [f"## Session Paused - {reason}", "",
             f"- **Paused at**: {pause_info.get('pausedAt')}",
             f"- **Session resets at**: {pause_info.get('resetsAt')}",
             f"- **Auto-resume was due at**: {pause_info.get('resumeAt')}"]
    if pause_info.get("remainingPercent") is not None:
        lines.append(f"- **Session remaining**: {pause_info['remainingPercent']}%")
    lines += ["", f"The reset time has passed: call `resume_session` with sessionId "
              f"`{session_id}` (or carry on working: the next activity resumes it), "
              "validate the tasks completed lately (recentCompletions), then continue "
              "from the state below."]
    return "\n".join(lines) + "\n"


def recovery_state(session_id: str) -> RecoveryState:
    """The state a resume prompt for this session would show (admin page)."""
    session = ActiveSession.objects.get(session_id=session_id)
    detail = SessionDetail.objects.filter(session_id=session_id).first()
    return _state_from_row(session, detail.compaction_count if detail else 0,
                           crash_reports([session_id]).get(session_id))



def latest_to_resume(report: dict[str, Any], *, task_id: str | None = None,
                     agent_id: str | None = None) -> dict[str, Any] | None:
    """The entry of ``report`` (``check_recovery``'s answer, newest heartbeat first) to
    resume from: the latest crashed, abandoned or paused session of ``task_id`` and/or run
    by ``agent_id``; None when there is none. A compaction is left out, as the session
    start's injection leaves it out: that session lives on and resumes itself."""
    entries = [entry for entry in report.get("sessions") or []
               if entry.get("recoveryType") != "compaction"
               and (task_id is None or entry.get("taskId") == task_id)]
    if agent_id is not None and entries:
        of_agent = set(SessionDetail.objects.filter(
            session_id__in=[entry["sessionId"] for entry in entries],
            agent_id=agent_id).values_list("session_id", flat=True))
        entries = [entry for entry in entries if entry["sessionId"] in of_agent]
    return entries[0] if entries else None
