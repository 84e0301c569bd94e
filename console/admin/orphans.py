"""Orphaned work on the task list (seed 004): a column and a filter.

Kept apart from console/admin/tasks.py so the task page stays about rollbacks.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from sessions.services.work import orphaned_work


def orphaned_task_ids(project_ids: list[str] | None = None) -> set[str]:
    """Unfinished tasks a crashed session worked on and no live session works on, of
    ``project_ids`` (None: of every project)."""
    return {row[0] for row in orphaned_work(project_ids=project_ids)}


class OrphanedFilter(admin.SimpleListFilter):
    title = "orphaned work"
    parameter_name = "orphaned"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Orphaned (only crashed sessions)"), ("no", "Not orphaned")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(task_id__in=orphaned_task_ids())
        if self.value() == "no":
            return queryset.exclude(task_id__in=orphaned_task_ids())
        return queryset
