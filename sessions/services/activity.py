"""record_activity: a batch of agent hook events (the Claude Code client's) in one call.

A hook client flushes what happened since its last call: the tool uses (tool history,
transport "hook"), the files the edits touched and the conversation summary,
and it counts as a heartbeat. This runs every few seconds per agent, so it is built to
cost few round trips:

1. one statement: the heartbeat (the conditional UPDATE ``heartbeat`` runs) and, only
   when it touched the session, every tool-use row inserted and the edited paths the
   session's task does not list in ``keyFiles`` yet (paths under the session's
   projectDir are stored relative to it, so parallel worktrees of one repository match);
2. the heartbeat's Redis key;
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
from foundation.core import prepared
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

# The rows of one batch, given ``source`` (the session's project_id, its projectDir
# without a trailing slash as ``root``, and its ``task``): the tool-use rows inserted,
# and the edited paths the task does not list yet, in their first order.
_RECORD_CTES = """
uses AS (SELECT * FROM unnest(%(tools)s::text[], %(successes)s::boolean[],
                              %(stamps)s::timestamptz[], %(summaries)s::text[])
         WITH ORDINALITY AS u(tool, success, stamp, summary, n)),
inserted AS (
  INSERT INTO {history} (session_id, tool, success, transport, duration_ms, timestamp, summary,
                         project_id)
  SELECT %(session)s, tool, success, 'hook', 0, stamp, summary, source.project_id
  FROM uses, source ORDER BY n
  RETURNING 1),
edited AS (
  SELECT CASE WHEN s.root <> '' AND starts_with(f.path, s.root || '/')
              THEN substr(f.path, length(s.root) + 2) ELSE f.path END AS path, f.n
  FROM unnest(%(paths)s::text[]) WITH ORDINALITY AS f(path, n), source s),
listed AS (
  SELECT k.path FROM {tasks} t JOIN source ON t.task_id = source.task
  CROSS JOIN LATERAL jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(t.key_files) = 'array' THEN t.key_files ELSE '[]'::jsonb END
  ) AS k(path))"""
_RECORDED = """(SELECT count(*) FROM inserted) AS recorded,
       ARRAY(SELECT path FROM (SELECT path, min(n) AS first FROM edited
                               WHERE path NOT IN (SELECT path FROM listed) GROUP BY path) p
             ORDER BY first) AS added"""

# Without a heartbeat (a late batch): the session row as it is, the task given.
_RECORD_SQL = """
WITH commit_mode AS {commit},
source AS (SELECT project_id, rtrim(project_dir, '/') AS root, %(task)s::text AS task
           FROM {sessions} WHERE session_id = %(session)s),
{records}
SELECT {recorded}
FROM source, commit_mode
"""
# With a heartbeat: the heartbeat's UPDATE first, and the rows only when it touched the
# session (live, the task of its project), with the task it left: one round trip a flush.
_BEAT_AND_RECORD_SQL = """
WITH beat AS ({beat}),
source AS (SELECT project_id, rtrim(project_dir, '/') AS root, current_task AS task FROM beat),
{records}
SELECT beat.*, {recorded}
FROM beat
"""


def _records() -> str:
    return _RECORD_CTES.format(history=HISTORY_TABLE, tasks=tasks_table())


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


def _batch_params(tool_uses: list[dict[str, Any]], paths: list[str]) -> dict[str, Any]:
    return {"tools": [u["tool"] for u in tool_uses],
            "successes": [u["success"] for u in tool_uses],
            "stamps": [u["timestamp"] for u in tool_uses],
            "summaries": [u.get("summary") or None for u in tool_uses],
            "paths": paths}


def _beat_and_record(session_id: str, task_id: str | None, conversation_summary: str | None,
                     tool_uses: list[dict[str, Any]], paths: list[str]
                     ) -> tuple[dict[str, Any], bool, int, list[str]]:
    """The heartbeat and the batch's rows in one statement: (the heartbeat's answer,
    notices waiting, the rows recorded, the edited paths the task does not list yet).
    Refused as the heartbeat is (nothing recorded) when it touched nothing."""
    sql = _BEAT_AND_RECORD_SQL.format(beat=lifecycle.beat_sql(), records=_records(),
                                      recorded=_RECORDED)
    row = prepared.fetch_one(sql, {
        **lifecycle.beat_params(session_id, task_id, conversation_summary, None),
        **_batch_params(tool_uses, paths)})
    beat, notices_waiting = lifecycle.beaten(session_id, task_id, row)
    added = list(row["added"]) if beat["taskId"] else []
    return beat, notices_waiting, row["recorded"], added


def _record(session_id: str, task_id: str | None, tool_uses: list[dict[str, Any]],
            paths: list[str]) -> tuple[int, list[str]]:
    """Insert the tool-use rows; the edited paths the task does not list yet."""
    # Inside a caller's transaction its commit is never weakened (async_commit_sql).
    sql = _RECORD_SQL.format(commit=async_commit_sql(), sessions=sessions_table(),
                             records=_records(), recorded=_RECORDED)
    # Prepared (foundation.core.prepared): a flush every few seconds per agent,
    # and Postgres planned this statement each time it was sent.
    row = prepared.fetch_one(sql, {"session": session_id, "task": task_id,
                                   **_batch_params(tool_uses, paths)})
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
    paths = _edited_paths(tool_uses)
    notices_waiting = True
    recorded, new_paths, added = 0, [], []
    if heartbeat:
        if tool_uses:
            beat, notices_waiting, recorded, new_paths = _beat_and_record(
                session_id, task_id, conversation_summary, tool_uses, paths)
        else:
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
