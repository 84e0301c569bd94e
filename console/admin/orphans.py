"""Orphaned work on the task list: a column and a filter.

Kept apart from console/admin/tasks.py so the task page stays about rollbacks.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

# The one definition and query of orphaned work, shared with the overview, check_recovery
# and get_task_graph (the task list's column reads it through this module).
from sessions.services.work import orphaned_task_ids

__all__ = ["OrphanedFilter", "orphaned_task_ids"]


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
