"""Appending edited files to a task's keyFiles: what detect_conflicts compares."""

from __future__ import annotations

import logging

from contexts.services.write import ListAppend, write_task
from foundation.core.errors import OrchestratorError

logger = logging.getLogger("orchestrator.contexts")


def append_key_files(task_id: str, paths: list[str], *, session_id: str | None,
                     summary: str = "keyFiles from edits") -> list[str]:
    """Append the paths the task does not list yet (one version; none when all are
    listed; as many as keyFiles' limit leaves room for); returns those added. [] when
    another session's lock forbids the write: the lock holder decides what the task
    lists. Usually one statement (write_task's ListAppend)."""
    try:
        done = write_task(task_id, ListAppend.of("keyFiles", paths), change_type="auto_save",
                          summary=f"{summary}: " + ", ".join(paths)[:500],
                          session_id=session_id, actor=session_id or "system")
    except OrchestratorError as exc:
        if exc.code != "E1613":
            raise
        logger.info("keyFiles not merged: task locked", extra={"taskId": task_id,
                                                                "sessionId": session_id})
        return []
    return done.appended
