"""save_context_snapshot: apply updates to a task through ``write_task``.

The write itself (validation, lock rule, the one-statement fast path, versioning, the
graph outbox, Redis and files) is ``contexts.services.write``; this is the tool's answer.
"""

from __future__ import annotations

from typing import Any

from contexts.services.write import write_task
from foundation.core.stamps import now_iso


def save_task_changes(task_id: str, changes: dict[str, Any] | None, *,
                      change_type: str = "manual", change_summary: str | None = None,
                      session_id: str | None = None, actor: str | None = None,
                      sync_to_file: bool = True) -> dict[str, Any]:
    """Apply camelCase ``changes`` to a task; the save_context_snapshot answer.

    E1612 for an unsafe id or invalid changes (nothing written), E1610 for an unknown
    task, E1613 when the lock rule refuses the change. ``graph`` in the answer says what
    the change means for the graph mirror: "queued" (the outbox row committed with the
    save; the mirror applies it off the request path), "unchanged" (nothing it shows
    changed) or "disabled".
    """
    done = write_task(task_id, changes or {}, change_type=change_type, summary=change_summary,
                      session_id=session_id, actor=actor, sync_to_file=sync_to_file)
    return {
        "success": True,
        "taskId": task_id,
        "version": done.version,
        "savedTo": done.saved_to,
        "graph": done.graph,
        "timestamp": now_iso(),
    }
