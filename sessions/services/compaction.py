"""Compaction reports: the session lives on, what it knew is reloaded.

When an agent's context window is compacted the session lives on, but what it knew is
gone. ``report_compaction`` counts the compaction, sets status ``compacted`` with a
recovery record (recovery_type 'compaction', snapshot of task, summary, unsaved changes
and tool history), logs a system event and answers with the resume prompt, which says
when a full plan reload is due (every second compaction: 2, 4, 6, ...).
``complete_compaction`` is the other half, for any agent: the context is reloaded
(a ``compaction_complete`` event with the number and ``full_reload``).
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from contexts.services.tasks import status_counts
from foundation.core.errors import OrchestratorError
from foundation.core.stamps import now_iso
from foundation.observability import metrics
from sessions.services import agent_context, events, markers, recovery
from sessions.services.common import (
    DETAIL_TABLE,
    LIVE_STATUSES,
    logger,
    refuse_for_status,
    session_status,
    sessions_table,
)
from sessions.services.prompts import resume_prompt


def progress(project_id: str) -> dict[str, int]:
    """The compaction summary counters of the session's project, one statement:
    {total (tasks not archived), completed, restoring (in progress), pendingAudit
    (completed within RECENT_COMPLETION_WINDOW hours: check_recovery's recentCompletions,
    to validate before new work)}."""
    counts = status_counts(project_id, settings.RECENT_COMPLETION_WINDOW * 3600)
    return {"total": counts["total"], "completed": counts["completed"],
            "restoring": counts["in_progress"], "pendingAudit": counts["recently_completed"]}


def resumed_text(number: int, full_reload: bool, counts: dict[str, int]) -> str:
    """What an agent says after reloading from a compaction, where the server knows the
    values (the plan file and its blocked graph are the agent's, not the server's)."""
    return (f"RESUMED - Compaction #{number} complete"
            + (" (full plan reload)" if full_reload else "") + "\n\n"
            f"Completed: {counts['completed']}/{counts['total']} tasks\n"
            f"Restoring: {counts['restoring']} in-progress tasks\n"
            f"Pending audit: {counts['pendingAudit']} tasks")


def report_compaction(session_id: str, *, trigger: str = "auto",
                      conversation_summary: str | None = None,
                      unsaved_changes: list[dict[str, Any]] | None = None,
                      context_remaining: float | None = None,
                      context_budget_tokens: int | None = None) -> dict[str, Any]:
    """Count and record a compaction; with a token budget, the bundle to re-inject: every
    tier that fits when a full reload is due (every second compaction), else HOT only."""
    with transaction.atomic():
        # Same lock order as appends and end_session: detail row, then the session row.
        events.lock_open_session(session_id, action="reporting a compaction")
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {DETAIL_TABLE} SET compaction_count = compaction_count + 1 "
                           "WHERE session_id = %s RETURNING compaction_count", [session_id])
            number = cursor.fetchone()[0]
            cursor.execute(
                f"UPDATE {sessions_table()} s SET status = 'compacted', recovery_needed = TRUE, "
                "recovery_type = 'compaction', last_heartbeat = now(), "
                "conversation_summary = COALESCE(%s, s.conversation_summary), "
                "unsaved_changes = COALESCE(%s::jsonb, s.unsaved_changes) "
                "WHERE s.session_id = %s AND s.status IN ('active', 'compacted') "
                "RETURNING s.project_id",
                [conversation_summary,
                 None if unsaved_changes is None else json.dumps(unsaved_changes), session_id])
            updated = cursor.fetchone()
            if updated is None:
                raise refuse_for_status(session_id, session_status(session_id),
                                        action="reporting a compaction")
            project_id = updated[0]
            # The snapshot reads the row just updated (summary and changes included).
            cursor.execute(
                f"UPDATE {sessions_table()} s SET context_snapshot = "
                f"{recovery.snapshot_sql()} || jsonb_build_object('compactionNumber', %s, "
                "'fullReload', %s, 'trigger', %s::text) WHERE s.session_id = %s",
                ["compaction", number, number % 2 == 0, trigger, session_id])
        full_reload = number % 2 == 0
        events.append_event(
            session_id, "system_event", "system",
            f"compaction #{number} ({trigger})" + (" - full plan reload due" if full_reload
                                                   else ""),
            {"event": "compaction_start", "compactionNumber": number, "fullReload": full_reload,
             "trigger": trigger, "contextRemaining": context_remaining})
    metrics.sessions_total.labels("compacted").inc()
    logger.info("session compacted", extra={"sessionId": session_id, "projectId": project_id,
                                            "compactionNumber": number,
                                            "fullReload": full_reload, "trigger": trigger})
    state = recovery.recovery_state(session_id)
    markers.write_state_file(project_id, session_id, "compaction",
                             task_id=(state.task or {}).get("taskId"),
                             compaction_count=number, full_reload_due=full_reload)
    counts = progress(project_id)
    result = {"success": True, "sessionId": session_id, "status": "compacted",
              "recoveryType": "compaction", "compactionNumber": number,
              "fullReloadDue": full_reload, "resumePrompt": resume_prompt(state),
              "progress": counts, "summary": resumed_text(number, full_reload, counts),
              "timestamp": now_iso()}
    bundle = agent_context.bundle_or_none((state.task or {}).get("taskId"),
                                          context_budget_tokens,
                                          None if full_reload else ["hot"])
    if bundle is not None:
        result["contextBundle"] = bundle
    return result


def complete_compaction(session_id: str, *, compaction_number: int | None = None,
                        full_reload: bool | None = None, summary: str | None = None,
                        trigger: str | None = None) -> dict[str, Any]:
    """The resume after a compaction is done: the agent has reloaded what it needs after a
    compaction. Logs ``compaction_complete`` (compaction_number, full_reload) and, when
    the session was left ``compacted`` by report_compaction, ends that recovery (status
    active again, as check_recovery markRecovered would).

    Which compaction: ``compaction_number``, else the one reported and not completed yet,
    else (an agent that never called report_compaction) a new one, counted here. A number
    already completed changes nothing (``alreadyCompleted``: a retried call is harmless);
    one past the next is E1612. ``full_reload`` defaults to the seed's rule (every
    second compaction)."""
    with transaction.atomic():
        events.lock_open_session(session_id, action="completing a compaction")
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT d.compaction_count, d.compactions_completed, s.status, s.project_id "
                f"FROM {DETAIL_TABLE} d JOIN {sessions_table()} s "
                "ON s.session_id = d.session_id WHERE d.session_id = %s", [session_id])
            count, completed, status, project_id = cursor.fetchone()
            if status not in LIVE_STATUSES:
                raise refuse_for_status(session_id, status, action="completing a compaction")
            number = compaction_number or (count if count > completed else count + 1)
            if number > count + 1:
                raise OrchestratorError(
                    "E1612", f"compactionNumber {number} was never reported: the session "
                    f"has had {count} compaction(s); the next is {count + 1}",
                    {"field": "compactionNumber", "compactionCount": count})
            full = bool(full_reload) if full_reload is not None else number % 2 == 0
            if number <= completed:
                counts = progress(project_id)
                return {"success": True, "sessionId": session_id, "status": status,
                        "compactionNumber": number, "compactionCount": count,
                        "fullReload": full, "alreadyCompleted": True, "progress": counts,
                        "summary": resumed_text(number, full, counts),
                        "timestamp": now_iso()}
            cursor.execute(
                f"UPDATE {DETAIL_TABLE} SET compaction_count = GREATEST(compaction_count, %s), "
                "compactions_completed = %s WHERE session_id = %s RETURNING compaction_count",
                [number, number, session_id])
            count = cursor.fetchone()[0]
            cursor.execute(
                f"UPDATE {sessions_table()} SET last_heartbeat = now(), "
                "conversation_summary = COALESCE(%s, conversation_summary), "
                "status = CASE WHEN status = 'compacted' AND recovery_type = 'compaction' "
                "THEN 'active' ELSE status END, "
                "recovery_needed = CASE WHEN status = 'compacted' AND recovery_type = "
                "'compaction' THEN FALSE ELSE recovery_needed END "
                "WHERE session_id = %s RETURNING status", [summary, session_id])
            status = cursor.fetchone()[0]
        parts: dict[str, Any] = {
            "event": "compaction_complete", "compaction_number": number, "full_reload": full,
            # The keys compaction_start and the console's timeline use.
            "compactionNumber": number, "fullReload": full}
        if trigger:
            parts["trigger"] = trigger
        if summary:
            parts["compactSummary"] = summary[:20000]
        event = events.append_event(
            session_id, "system_event", "system", "compaction_complete", parts)
    logger.info("compaction complete", extra={"sessionId": session_id, "projectId": project_id,
                                              "compactionNumber": number, "fullReload": full})
    markers.write_state_file(project_id, session_id, "compaction_complete",
                             task_id=_task_of(session_id), compaction_count=count,
                             full_reload_due=count % 2 == 0)
    counts = progress(project_id)
    return {"success": True, "sessionId": session_id, "status": status,
            "compactionNumber": number, "compactionCount": count, "fullReload": full,
            "alreadyCompleted": False, "sequence": event["sequence"], "progress": counts,
            "summary": resumed_text(number, full, counts), "timestamp": event["createdAt"]}


def _task_of(session_id: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT task_id FROM {sessions_table()} WHERE session_id = %s",
                       [session_id])
        row = cursor.fetchone()
    return row[0] if row else None
