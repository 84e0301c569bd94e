"""A live session's markers outside Postgres: the Redis key
``context:heartbeat:{sessionId}`` and the file ``RECOVERY_DIR/.session-heartbeat.json``.

Failures are reported (savedTo, a metric), never raised: Postgres holds the truth.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings

from foundation.backends import files, redis_store
from foundation.core.stamps import iso, now_iso
from foundation.observability import metrics
from sessions.services.common import logger

HEARTBEAT_FILE = ".session-heartbeat.json"
# The file marker is read at a resolution of CRASH_THRESHOLD_MINUTES (minutes); a start
# and an end write it at once. Rewriting it on every heartbeat buys nothing, and with a
# repository per team of agents it was most of the file writes: at 1,500 agents (188
# repositories) once a second per project was ~190 temp files, renames and fsyncs a
# second, 7 % of the web workers' CPU. Every 15 s per process keeps it minutes fresh.
FILE_MARKER_MIN_INTERVAL = 15.0
# (RECOVERY_DIR, project) -> monotonic time of the last write. Keyed by what fixes the
# marker's path, not by the path: building it (pathlib) on every heartbeat to skip the
# write cost ~4 % of a heartbeat's web CPU.
_marker_written: dict[tuple[str, str], float] = {}
# The Redis marker lives REDIS_HEARTBEAT_TTL (2 minutes) and nothing reads its value more
# finely than that: it is refreshed at most every quarter of its TTL per session and
# process, and a start writes it at once. Written on every heartbeat it was one Redis
# round trip on two thirds of all hook calls (about 0.2 ms of a web worker's CPU each).
# A refresh skipped is reported as saved only while this process's last write of it
# succeeded on the same Redis client (REDIS_URL) and the circuit breaker is closed.
REDIS_MARKER_REFRESH_SHARE = 4
# session id -> (monotonic time of the last successful write, the Redis client used).
_redis_marked: dict[str, tuple[float, object]] = {}
_REDIS_MARKED_MAX = 50_000


def mark_alive(session_id: str, task_id: str | None, project_id: str,
               project_dir: str | None, at: Any, *, force_file: bool = False
               ) -> dict[str, bool]:
    """Redis key and file marker of a live session; failures are reported only.
    The file marker is the project's (its RECOVERY_DIR)."""
    file_ok = True
    now, marker = time.monotonic(), (str(settings.RECOVERY_DIR), project_id)
    redis_ok = _mark_alive_in_redis(session_id, now, force=force_file)
    if settings.ENABLE_FILE_SYNC and (
            force_file or now - _marker_written.get(marker, 0.0) >= FILE_MARKER_MIN_INTERVAL):
        _marker_written[marker] = now
        file_ok = write_heartbeat_file(project_id, {
            "sessionId": session_id, "timestamp": iso(at), "taskId": task_id,
            "projectId": project_id, "projectDir": project_dir, "status": "active"})
    return {"redis": redis_ok, "file": file_ok}


def _mark_alive_in_redis(session_id: str, now: float, *, force: bool) -> bool:
    """Write (or leave, when this process wrote it lately) ``context:heartbeat:{id}``:
    whether it is there."""
    client = redis_store.client()
    last = _redis_marked.get(session_id)
    if (not force and last is not None and last[1] is client
            and now - last[0] < settings.REDIS_HEARTBEAT_TTL / REDIS_MARKER_REFRESH_SHARE
            and not redis_store.breaker.is_open()):
        return True
    try:
        redis_store.set_json(redis_store.key("heartbeat", session_id), int(time.time() * 1000),
                             settings.REDIS_HEARTBEAT_TTL)
    except redis_store.RedisUnavailable:
        metrics.backend_failures_total.labels("redis", "heartbeat").inc()
        _redis_marked.pop(session_id, None)
        return False
    if len(_redis_marked) >= _REDIS_MARKED_MAX:  # sessions ended or gone elsewhere
        _redis_marked.clear()
    _redis_marked[session_id] = (now, client)
    return True


def forget_redis_markers() -> None:
    """Forget which Redis markers this process wrote (tests empty Redis between them)."""
    _redis_marked.clear()


def mark_gone(session_id: str, project_id: str, status: str) -> None:
    """Drop the Redis heartbeat and, if the project's file marker is this session's, close
    it."""
    _redis_marked.pop(session_id, None)
    try:
        redis_store.delete(redis_store.key("heartbeat", session_id))
    except redis_store.RedisUnavailable:
        metrics.backend_failures_total.labels("redis", "heartbeat").inc()
    marker = read_heartbeat_file(project_id)
    if marker and marker.get("sessionId") == session_id:
        write_heartbeat_file(project_id, {**marker, "status": status, "updatedAt": now_iso()})


def write_heartbeat_file(project_id: str, data: dict[str, Any]) -> bool:
    # Written as the saves write theirs: renamed into place now, fsynced by the background
    # writer (files.sync_writer) within INDEX_FILE_DELAY_MS. An fsync here sat on every
    # start_session and end_session and queued behind the other writes' fsyncs (500
    # agents: start_session p99 250 ms against a 25 ms p50); a kill -9 cannot lose the
    # renamed file, only a power loss the last fraction of a second of it.
    try:
        files.write_json_atomic(files.recovery_dir(project_id) / HEARTBEAT_FILE, data,
                                fsync_now=False)
        return True
    except OSError as exc:
        metrics.backend_failures_total.labels("file", "heartbeat").inc()
        logger.warning("heartbeat file not written: %s", exc)
        return False


def read_heartbeat_file(project_id: str) -> dict[str, Any] | None:
    data = files.read_json(files.recovery_dir(project_id) / HEARTBEAT_FILE)
    return data if isinstance(data, dict) else None


STATE_FILE = ".session-state.json"


def write_state_file(project_id: str, session_id: str, event: str, *,
                     task_id: str | None = None, compaction_count: int = 0,
                     full_reload_due: bool = False,
                     pause: dict[str, Any] | None = None) -> bool:
    """The state file, ``RECOVERY_DIR/.session-state.json`` of the project: what a resume
    without the server needs to know, rewritten whole on a session's start, pause, resume
    and compaction (``event``). The last session to do one of those owns it.
    Renamed into place at once and fsynced by the background writer, as the heartbeat
    file: start_session is a hook call. A failure is reported, never raised."""
    try:
        files.write_json_atomic(files.recovery_dir(project_id) / STATE_FILE, {
            "sessionId": session_id, "event": event, "taskId": task_id,
            "compactionCount": compaction_count, "fullReloadDue": full_reload_due,
            "paused": pause, "updatedAt": now_iso()}, fsync_now=False)
        return True
    except OSError as exc:
        metrics.backend_failures_total.labels("file", "session_state").inc()
        logger.warning("session state file not written: %s", exc)
        return False
