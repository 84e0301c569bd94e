"""Critical context keys (``mark_critical``): what a task's context
bundle keeps whole whatever the token budget.

A key names one part of what the bundle shows. The ones of ``MOVABLE`` sit in WARM or
COLD by default; marked critical they move to HOT, which is never dropped nor cut.
``ALWAYS_HOT`` are HOT anyway (the task's state, immediate context, blockers, locked
elements, unresolved conflicts, the project's hard rules): marking them is accepted and
changes nothing. Marks live in their own table (``CriticalKeys``), per task, unversioned.
"""

from __future__ import annotations

from django.db import transaction

from contexts.models import CriticalKeys
from contexts.services.tasks import project_of_task
from foundation.backends.files import check_safe_id
from foundation.core.errors import task_not_found
from foundation.core.stamps import now_iso

# Bundle order: the order critical lines appear in HOT.
MOVABLE = ("description", "notes", "keyFiles", "technicalDecisions", "relationships",
           "techStack", "keywords", "resumePrompt", "versionHistory", "keyPaths",
           "services")
ALWAYS_HOT = ("status", "workingOn", "lastAction", "nextStep", "blockers", "blockedBy",
              "lockedElements", "conflicts", "hardRules")
KEYS = MOVABLE + ALWAYS_HOT


def in_bundle_order(keys: list[str] | None) -> list[str]:
    """Stored critical keys (the unified read returns them), in bundle order."""
    marked = set(keys or ())
    return [k for k in KEYS if k in marked]


def mark_critical(task_id: str, keys: list[str], *, critical: bool = True,
                  actor: str | None = None) -> dict:
    """Mark ``keys`` of the task critical (``critical`` false: unmark them); the answer
    lists every key now marked. E1610 for an unknown task."""
    check_safe_id(task_id)
    project_id = project_of_task(task_id)
    if project_id is None:
        raise task_not_found(task_id)
    with transaction.atomic():
        row, _ = CriticalKeys.objects.select_for_update().get_or_create(
            task_id=task_id, defaults={"project_id": project_id, "keys": []})
        marked = set(row.keys or [])
        marked = marked | set(keys) if critical else marked - set(keys)
        row.keys = [k for k in KEYS if k in marked]
        row.project_id, row.updated_by = project_id, actor
        row.save()
    return {"success": True, "taskId": task_id, "criticalKeys": row.keys,
            "timestamp": now_iso()}
