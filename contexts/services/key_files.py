"""Appending edited files to a task's keyFiles: what detect_conflicts compares."""

from __future__ import annotations

import logging
from typing import Any

from contexts.models import TaskContext
from contexts.services.validation import LIST_LIMITS
from contexts.services.write import write_task
from orchestrator.core.errors import OrchestratorError

logger = logging.getLogger("orchestrator.contexts")
MAX_KEY_FILES = LIST_LIMITS["keyFiles"][0]


def append_key_files(task_id: str, paths: list[str], *, session_id: str | None,
                     summary: str = "keyFiles from edits") -> list[str]:
    """Append the paths the task does not list yet (one version; none when all are
    listed); returns those added. [] when another session's lock forbids the write: the
    lock holder decides what the task lists."""
    added: list[str] = []

    def appended(task: TaskContext) -> dict[str, Any] | None:
        current = list(task.key_files or [])
        added[:] = [p for p in dict.fromkeys(paths)
                    if p not in current][:max(0, MAX_KEY_FILES - len(current))]
        return {"keyFiles": current + added} if added else None

    try:
        write_task(task_id, appended, change_type="auto_save",
                   summary=f"{summary}: " + ", ".join(paths)[:500],
                   session_id=session_id, actor=session_id or "system")
    except OrchestratorError as exc:
        if exc.code != "E1613":
            raise
        logger.info("keyFiles not merged: task locked", extra={"taskId": task_id,
                                                                "sessionId": session_id})
        return []
    return added
