"""Automatic tool history (mirrored to ``.tool-history.json``, and the ``toolHistory`` of
resume prompts).

An after-call hook of the tool registry records every call that names a ``sessionId``,
over REST or MCP, with one INSERT; the caller does nothing. Heartbeats are not recorded:
they are liveness signals already kept in ``last_heartbeat``, and recording them would
push the agent's real work out of the "last 5 tool uses" of a resume prompt.
Calls naming a session that does not exist are not recorded either (no junk rows for
typos); the INSERT checks that in the same statement.

Cost matters: this runs on every tool call of every agent. The INSERT commits
asynchronously (a history row lost in a database crash costs nothing that matters, and
not waiting for the WAL flush halves the call's latency), and the mirror file is
rewritten off the request path by a ``CoalescingWriter`` (at most every
INDEX_FILE_DELAY_MS), not by every call.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import connection, transaction

from foundation.backends import files
from foundation.backends.coalesce import CoalescingWriters
from foundation.core import prepared
from foundation.core.db import ASYNC_COMMIT, SYNC_COMMIT
from foundation.core.stamps import iso
from foundation.core.tools.registry import Tool, ToolContext
from foundation.observability import metrics
from sessions.services.common import HISTORY_TABLE, fetch_dicts, sessions_table

logger = logging.getLogger("orchestrator.sessions")

# record_activity is a heartbeat carrying the hook's own rows, get_context_bundle is the
# hook reloading context after a compaction, and claim_files is the check before an edit
# (the edit itself arrives in the next flush, as its own row): none is the agent's work,
# and as rows they would push that work out of a resume prompt's last tool uses. The
# claim check is also a third of all calls from a team's agents: an INSERT each was a
# third of its cost.
NOT_RECORDED = frozenset({"heartbeat", "record_activity", "get_context_bundle",
                          "claim_files"})
MIRROR_SIZE = 50
HISTORY_FILE = ".tool-history.json"


def record_tool_call(tool: Tool, arguments: dict[str, Any], outcome: dict[str, Any],
                     context: ToolContext, duration: float) -> None:
    """Registry hook: never raises (the registry also guards), never fails the call."""
    session_id = arguments.get("sessionId")
    if not isinstance(session_id, str) or not session_id or tool.name in NOT_RECORDED:
        return
    success = not (isinstance(outcome, dict) and outcome.get("success") is False)
    error = outcome.get("error") if isinstance(outcome, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    # The session's project comes back too: its mirror file is the one to rewrite.
    statement = (
        f"WITH session AS (SELECT project_id FROM {sessions_table()} WHERE session_id = %s), "
        f"inserted AS (INSERT INTO {HISTORY_TABLE} "
        "(session_id, tool, success, error_code, transport, duration_ms, timestamp, "
        "project_id) "
        "SELECT %s::text, %s::text, %s::boolean, %s::text, %s::text, %s::float8, now(), "
        "project_id FROM session, {commit} RETURNING 1) "
        "SELECT project_id FROM session WHERE EXISTS (SELECT 1 FROM inserted)")
    params = [session_id, session_id, tool.name, success, code, context.transport,
              round(duration * 1000, 3)]
    try:
        if connection.in_atomic_block:
            # Inside a caller's transaction: a savepoint, so that a failed INSERT cannot
            # poison it, and no asynchronous commit, which would weaken the caller's.
            with transaction.atomic():
                row = prepared.fetch_one(statement.format(commit=f"{SYNC_COMMIT} AS commit_mode"),
                                         params)
        else:
            # Its own one-statement transaction, committed without waiting for the WAL
            # flush; one round trip. Prepared (both forms): planning it cost more than
            # running it.
            row = prepared.fetch_one(statement.format(commit=f"{ASYNC_COMMIT} AS commit_mode"),
                                     params)
    except Exception as exc:  # history is best effort; the tool's answer stands
        logger.warning("tool history not recorded: %s", exc, extra={"sessionId": session_id})
        return
    if row is not None:
        project_id = row["project_id"]
        transaction.on_commit(lambda: mirror_writers.request(project_id))


def recent_history(session_id: str, limit: int, *,
                   exclude: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The session's last ``limit`` tool uses, newest first, in the spec's shape."""
    rows = fetch_dicts(
        f"SELECT timestamp, tool, success, summary FROM {HISTORY_TABLE} WHERE session_id = %s "
        "AND NOT (tool = ANY(%s)) ORDER BY id DESC LIMIT %s",
        [session_id, list(exclude), limit])
    return [{"timestamp": iso(r["timestamp"]), "tool": r["tool"], "success": r["success"],
             **({"summary": r["summary"]} if r["summary"] else {})} for r in rows]


# The mirror's whole text, built by Postgres from the project's last rows: the file is
# written as it comes back, without a row, a datetime or a dict made of it in Python (the
# mirror writer was a twentieth of a web worker's CPU under agent load, most of it that).
# Timestamps as the API writes them (foundation.core.stamps.iso): ISO 8601 in UTC with a
# Z, microseconds only when there are any.
_MIRROR_SQL = f"""
SELECT json_build_object('version', 1, 'entries', coalesce(json_agg(json_build_object(
         'sessionId', session_id,
         'timestamp', replace(to_char(timestamp AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), '.000000Z', 'Z'),
         'tool', tool, 'success', success) ORDER BY id), '[]'))::text AS mirror
FROM (SELECT id, session_id, timestamp, tool, success FROM {HISTORY_TABLE}
      WHERE project_id = %s ORDER BY id DESC LIMIT %s) AS last_calls
"""


def write_mirror(project_id: str) -> bool:
    """Mirror the project's last MIRROR_SIZE calls (all its sessions) to its RECOVERY_DIR
    atomically."""
    try:
        row = prepared.fetch_one(_MIRROR_SQL, [project_id, MIRROR_SIZE])
        assert row is not None  # an aggregate without GROUP BY: always one row
        files.write_text_atomic(files.recovery_dir(project_id) / HISTORY_FILE, row["mirror"])
        return True
    except Exception as exc:
        metrics.backend_failures_total.labels("file", "tool_history").inc()
        logger.warning("tool history mirror not written: %s", exc)
        return False


mirror_writers = CoalescingWriters("tool-history", write_mirror, "HISTORY_MIRROR_DELAY_MS")


def history_from_file(project_id: str, session_id: str, limit: int) -> list[dict[str, Any]]:
    """Tool history of a session known only from the project's recovery files."""
    data = files.read_json(files.recovery_dir(project_id) / HISTORY_FILE) or {}
    entries = [e for e in data.get("entries", []) if isinstance(e, dict)
               and e.get("sessionId") == session_id]
    return [{k: e.get(k) for k in ("timestamp", "tool", "success")}
            for e in reversed(entries)][:limit]
