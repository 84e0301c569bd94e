"""Read-only queries other apps show (the task page's conflict history)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from conflicts.models import ContextConflict


def conflicts_for_task(task_id: str) -> QuerySet[ContextConflict]:
    return ContextConflict.objects.filter(
        Q(task_a_id=task_id) | Q(task_b_id=task_id)).order_by("-detected_at")

