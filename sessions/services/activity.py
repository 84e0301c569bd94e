"""record_activity: a batch of agent hook events (the Claude Code client's) in one call.

A hook client flushes what happened since its last call: the tool uses (tool history,
transport "hook"), the files the edits touched and the conversation summary,
and it counts as a heartbeat. This runs every few seconds per agent, so it is built to
cost few round trips:

1. the heartbeat (one conditional UPDATE, as ``heartbeat`` does it, plus Redis);
2. one statement inserting every tool-use row and returning which edited paths the
   session's task does not list in ``keyFiles`` yet (paths under the session's
   projectDir are stored relative to it, so parallel worktrees of one repository match);
3. only when a path is new: the task locked, the paths appended (one new context
   version) and published, so detect_conflicts sees two agents editing one file;
4. with edited paths, ``signals.files_edited`` (the claims app renews the session's live
   claims on them, and records a file conflict at once when another task's session
   holds one), and when asked, the session's pending notices (``notices``), taken.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from contexts.services.key_files import append_key_files
from contexts.services.tasks import require_task
from foundation.backends import prepared
from foundation.core.db import async_commit_sql
from foundation.core.errors import OrchestratorError
from foundation.core.stamps import iso
from sessions import signals
from sessions.models import ActiveSession
from sessions.services import lifecycle, pause
from sessions.services.common import (
    HISTORY_TABLE,
    LIVE_STATUSES,
    refuse_for_status,
    session_status,
    sessions_table,
    tasks_table,
)
from sessions.services.notices import take_notices

# Tools whose file paths are edits (Read, Grep and Bash touch nothing named): Claude Code's,
# Codex CLI's apply_patch and Gemini CLI's replace / write_file (the client's agent adapters
# name the files in filePaths the same way for all of them).
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "replace",
                      "write_file"})

_RECORD_SQL = """
WITH commit_mode AS {commit},
session AS (SELECT session_id, project_id, rtrim(project_dir, '/') AS root FROM {sessions}
            WHERE session_id = %(session)s),
uses AS (SELECT * FROM unnest(%(tools)s::text[], %(successes)s::boolean[],
                              %(stamps)s::timestamptz[], %(summaries)s::text[])
         WITH ORDINALITY AS u(tool, success, stamp, summary, n)),
inserted AS (
  INSERT INTO {history} (session_id, tool, success, transport, duration_ms, timestamp, summary,
                         project_id)
  SELECT %(session)s, tool, success, 'hook', 0, stamp, summary, session.project_id
  FROM uses, session ORDER BY n
  RETURNING 1),
edited AS (
  SELECT CASE WHEN s.root <> '' AND starts_with(f.path, s.root || '/')
              THEN substr(f.path, length(s.root) + 2) ELSE f.path END AS path, f.n
  FROM unnest(%(paths)s::text[]) WITH ORDINALITY AS f(path, n), session s),
listed AS (
  SELECT k.path FROM {tasks} t CROSS JOIN LATERAL jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(t.key_files) = 'array' THEN t.key_files ELSE '[]'::jsonb END
  ) AS k(path) WHERE t.task_id = %(task)s)
SELECT (SELECT count(*) FROM inserted) AS recorded,
       ARRAY(SELECT path FROM (SELECT path, min(n) AS first FROM edited
                               WHERE path NOT IN (SELECT path FROM listed) GROUP BY path) p
             ORDER BY first) AS added
FROM session, commit_mode
"""


def _edited_paths(tool_uses: list[dict[str, Any]]) -> list[str]:
    return [path for use in tool_uses if use["tool"] in EDIT_TOOLS
            for path in use.get("filePaths") or [] if path.strip()]


# Without a heartbeat, a crashed session still takes tool uses: those a killed agent's
# hooks had not sent yet arrive from the next session's first hook, and they are the
# "Recent Tool Usage" of the crashed session's resume prompt. The status stays crashed.
LATE_HISTORY_STATUSES = (*LIVE_STATUSES, "crashed")


def _recordable_session(session_id: str, task_id: str | None) -> tuple[str | None, str]:
    """Without a heartbeat: the session must be live or crashed; (its task, its heartbeat)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT status, task_id, last_heartbeat FROM {sessions_table()} "
                       "WHERE session_id = %s", [session_id])
        row = cursor.fetchone()
    status = None if row is None else (row[0] or "active")
    if status not in LATE_HISTORY_STATUSES:
        raise refuse_for_status(session_id, status, action="recording activity")
    if task_id is not None:
        require_task(task_id)
    return task_id or row[1], iso(row[2])


def _record(session_id: str, task_id: str | None, tool_uses: list[dict[str, Any]],
            paths: list[str]) -> tuple[int, list[str]]:
    """Insert the tool-use rows; the edited paths the task does not list yet."""
    # Inside a caller's transaction its commit is never weakened (async_commit_sql).
    sql = _RECORD_SQL.format(commit=async_commit_sql(), sessions=sessions_table(),
                             history=HISTORY_TABLE, tasks=tasks_table())
    # Prepared (foundation.backends.prepared): a flush every few seconds per agent,
    # and Postgres planned this statement each time it was sent.
    row = prepared.fetch_one(sql, {
        "session": session_id, "task": task_id,
        "tools": [u["tool"] for u in tool_uses],
        "successes": [u["success"] for u in tool_uses],
        "stamps": [u["timestamp"] for u in tool_uses],
        "summaries": [u.get("summary") or None for u in tool_uses],
        "paths": paths})
    if row is None:  # the session vanished since the heartbeat (cleaned up meanwhile)
        raise refuse_for_status(session_id, session_status(session_id),
                                action="recording activity")
    return row["recorded"], list(row["added"]) if task_id else []


def record_activity(session_id: str, *, task_id: str | None = None,
                    tool_uses: list[dict[str, Any]] | None = None,
                    conversation_summary: str | None = None,
                    heartbeat: bool = True, notices: bool = False) -> dict[str, Any]:
    """Heartbeat + tool history + keyFiles for one batch of hook events; with ``notices``,
    the session's pending notices too (a hook that can show them to the model asks)."""
    # Each timestamp is a date-time Postgres stores, checked with the input
    # (foundation.core.tools.input_checks.check_date_time).
    tool_uses = tool_uses or []
    notices_waiting = True
    if heartbeat:
        beat, notices_waiting = lifecycle.beat(session_id, task_id=task_id,
                                               conversation_summary=conversation_summary)
        task_id, last_heartbeat = beat["taskId"], beat["lastHeartbeat"]
        if beat["paused"]:
            # A hook reporting work (a prompt, a tool use, a finished turn): the agent
            # is working again, so its pause is over (pause.py).
            pause.resume_if_paused(session_id)
    else:
        if conversation_summary is not None:
            raise OrchestratorError("E1612", "conversationSummary is stored with the "
                                    "heartbeat; it needs heartbeat true",
                                    {"field": "conversationSummary"})
        task_id, last_heartbeat = _recordable_session(session_id, task_id)
    recorded, added = 0, []
    paths = _edited_paths(tool_uses)
    if tool_uses:
        recorded, new_paths = _record(session_id, task_id, tool_uses, paths)
        if new_paths:
            added = append_key_files(task_id, new_paths, session_id=session_id)
    answer = {"success": True, "sessionId": session_id, "taskId": task_id,
              "recorded": recorded, "keyFilesAdded": added, "lastHeartbeat": last_heartbeat}
    if heartbeat:  # a live session: a late batch of a dead one claims nothing
        if paths:
            # A receiver answers True when it may have left this session a notice (a
            # claim made now, for an edit the check before it did not claim).
            replies = signals.files_edited.send(sender=ActiveSession, session_id=session_id,
                                                task_id=task_id,
                                                paths=list(dict.fromkeys(paths)))
            notices_waiting = notices_waiting or any(reply for _, reply in replies)
        if notices:
            # Read by the heartbeat's own statement: most flushes have none to take.
            answer["notices"] = take_notices(session_id) if notices_waiting else []
    return answer
