"""Automatic tool history (spec 6.4.1 ``.tool-history.json``, 4.1.8 toolHistory).

An after-call hook of the tool registry records every call that names a ``sessionId``,
over REST or MCP, with one INSERT; the caller does nothing. Heartbeats are not recorded:
they are liveness signals already kept in ``last_heartbeat``, and recording them would
push the agent's real work out of the "last 5 tool uses" of a resume prompt.
Calls naming a session that does not exist are not recorded either (no junk rows for
typos); the INSERT checks that in the same statement.

Cost matters: this runs on every tool call of every agent. The INSERT commits
asynchronously (a history row lost in a database crash costs nothing that matters, and
not waiting for the WAL flush halves the call's latency), and the mirror file is
rewritten by one background thread per process at most every
TOOL_HISTORY_MIRROR_DELAY_MS (default 250 ms), not by every call: rewriting it with an
fsync per call cost ~1.2 ms each and serialised concurrent agents on the disk.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction

from orchestrator import metrics
from orchestrator.backends import files
from orchestrator.tools.registry import Tool, ToolContext
from sessions.services.common import HISTORY_TABLE, fetch_dicts, iso, sessions_table

logger = logging.getLogger("orchestrator.sessions")

NOT_RECORDED = frozenset({"heartbeat"})
MIRROR_SIZE = 50
HISTORY_FILE = ".tool-history.json"
IDLE_CLOSE_SECONDS = 1.0


def record_tool_call(tool: Tool, arguments: dict[str, Any], outcome: dict[str, Any],
                     context: ToolContext, duration: float) -> None:
    """Registry hook: never raises (the registry also guards), never fails the call."""
    session_id = arguments.get("sessionId")
    if not isinstance(session_id, str) or not session_id or tool.name in NOT_RECORDED:
        return
    success = not (isinstance(outcome, dict) and outcome.get("success") is False)
    error = outcome.get("error") if isinstance(outcome, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    statement = (
        f"INSERT INTO {HISTORY_TABLE} "
        "(session_id, tool, success, error_code, transport, duration_ms, timestamp) "
        "SELECT %s, %s, %s, %s, %s, %s, now() FROM {commit} WHERE EXISTS "
        f"(SELECT 1 FROM {sessions_table()} WHERE session_id = %s)")
    params = [session_id, tool.name, success, code, context.transport,
              round(duration * 1000, 3), session_id]
    try:
        if connection.in_atomic_block:
            # Inside a caller's transaction: a savepoint, so that a failed INSERT cannot
            # poison it, and no asynchronous commit, which would weaken the caller's.
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(statement.format(commit="(SELECT 1) AS sync_commit"), params)
                recorded = cursor.rowcount == 1
        else:
            # Its own one-statement transaction, committed without waiting for the WAL
            # flush; one round trip.
            with connection.cursor() as cursor:
                cursor.execute(statement.format(commit=(
                    "(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit")),
                    params)
                recorded = cursor.rowcount == 1
    except Exception as exc:  # history is best effort; the tool's answer stands
        logger.warning("tool history not recorded: %s", exc, extra={"sessionId": session_id})
        return
    if recorded:
        transaction.on_commit(mirror_writer.request)


def recent_history(session_id: str, limit: int, *,
                   exclude: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The session's last ``limit`` tool uses, newest first, in the spec's shape."""
    rows = fetch_dicts(
        f"SELECT timestamp, tool, success FROM {HISTORY_TABLE} WHERE session_id = %s "
        "AND NOT (tool = ANY(%s)) ORDER BY id DESC LIMIT %s",
        [session_id, list(exclude), limit])
    return [{"timestamp": iso(r["timestamp"]), "tool": r["tool"], "success": r["success"]}
            for r in rows]


def write_mirror() -> bool:
    """Mirror the last MIRROR_SIZE calls (all sessions) to RECOVERY_DIR atomically."""
    try:
        rows = fetch_dicts(
            f"SELECT session_id, timestamp, tool, success FROM {HISTORY_TABLE} "
            "ORDER BY id DESC LIMIT %s", [MIRROR_SIZE])
        entries = [{"sessionId": r["session_id"], "timestamp": iso(r["timestamp"]),
                    "tool": r["tool"], "success": r["success"]} for r in reversed(rows)]
        files.write_json_atomic(files.recovery_dir() / HISTORY_FILE,
                                {"version": 1, "entries": entries})
        return True
    except Exception as exc:
        metrics.backend_failures_total.labels("file", "tool_history").inc()
        logger.warning("tool history mirror not written: %s", exc)
        return False


class MirrorWriter:
    """Coalesces mirror rewrites: a request marks the mirror stale, and one daemon thread
    per process rewrites it after TOOL_HISTORY_MIRROR_DELAY_MS, covering every call of
    that burst. With a delay of 0 the caller rewrites it at once (tests use this).
    Pending work is flushed at interpreter exit.
    """

    def __init__(self) -> None:
        self._stale = threading.Event()
        self._lock = threading.Lock()
        self._owner_pid: int | None = None  # a forked child must start its own thread

    def request(self) -> None:
        delay = settings.TOOL_HISTORY_MIRROR_DELAY_MS / 1000
        if delay <= 0:
            write_mirror()
            return
        self._stale.set()
        if self._owner_pid != os.getpid():
            with self._lock:
                if self._owner_pid != os.getpid():
                    threading.Thread(target=self._run, args=(delay,), daemon=True,
                                     name="tool-history-mirror").start()
                    self._owner_pid = os.getpid()

    def flush(self) -> bool:
        """Rewrite now if a rewrite is pending; True when one was written."""
        if not self._stale.is_set():
            return False
        self._stale.clear()
        return write_mirror()

    def _run(self, delay: float) -> None:
        while True:
            if not self._stale.wait(timeout=IDLE_CLOSE_SECONDS):
                connection.close()  # idle: hold no database connection for nothing
                continue
            time.sleep(delay)  # let the burst finish: one rewrite covers all of it
            close_old_connections()
            self.flush()


mirror_writer = MirrorWriter()
atexit.register(mirror_writer.flush)


def history_from_file(session_id: str, limit: int) -> list[dict[str, Any]]:
    """Tool history of a session known only from the recovery files."""
    data = files.read_json(files.recovery_dir() / HISTORY_FILE) or {}
    entries = [e for e in data.get("entries", []) if isinstance(e, dict)
               and e.get("sessionId") == session_id]
    return [{k: e.get(k) for k in ("timestamp", "tool", "success")}
            for e in reversed(entries)][:limit]
