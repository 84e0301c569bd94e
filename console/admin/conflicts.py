"""The conflict-resolution console: list with severity colours and filters, a conflict page
with the evidence side by side and one button per action, bulk ignore / escalate.

Every button calls the same services as the tools, with resolved_by = the admin user.
"""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join

from conflicts.models import ContextConflict
from conflicts.services import console, resolution
from conflicts.services.resolution import RESOLVABLE, STEPS
from console.admin.base import (
    MissingObjectIs404,
    ProjectFilter,
    ProjectScopedAdmin,
    field_column,
    object_or_404,
    run_tool,
    task_cell,
    task_names,
)
from console.projects import selected_project_ids
from console.templatetags.console_format import when
from contexts.models import TaskContext
from foundation.core.errors import OrchestratorError

SEVERITY_COLOURS = {"critical": "#ba2121", "high": "#e67e22", "medium": "#d4ac0d",
                    "low": "#5b80b2"}
ACTIONS = ("use_a", "use_b", "merge", "custom", "ignore")


class TaskFilter(admin.SimpleListFilter):
    """?task=<id> matches task A or B; the sidebar offers the tasks with most conflicts."""

    title = "task"
    parameter_name = "task"

    def lookups(self, request, model_admin):
        conflicts = ContextConflict.objects.all()
        project_ids = selected_project_ids(request)
        if project_ids is not None:
            conflicts = conflicts.filter(project_id__in=project_ids)
        top = [row["task_a_id"] for row in conflicts.values("task_a_id")
               .annotate(n=Count("pk")).order_by("-n", "task_a_id")[:20]]
        # Offered by name (the id when no task has that id any more).
        names = dict(TaskContext.objects.filter(task_id__in=top).values_list("task_id", "name"))
        return [(task_id, names.get(task_id) or task_id) for task_id in top]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        return queryset.filter(task_a_id=value) | queryset.filter(task_b_id=value)


@admin.register(ContextConflict)
class ContextConflictAdmin(ProjectScopedAdmin, MissingObjectIs404):
    # Names before ids: the two tasks by name (linking to their pages), ids shortened and
    # copyable under them, in one column (two columns of ids left the list wider than
    # 1280 px); times in the console's one format.
    list_display = ("conflict_type", "project", "severity_badge", "resolution_status",
                    "tasks", "strength", "detected", "resolved_by")
    list_filter = (ProjectFilter, "conflict_type", "severity", "resolution_status", TaskFilter)
    search_fields = ("task_a_id", "task_b_id", "description")
    ordering = ("-detected_at",)
    actions = ("bulk_ignore", "bulk_escalate")
    list_per_page = 50

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).annotate(**task_names("task_a_id", "console_a"),
                                                      **task_names("task_b_id", "console_b"))

    @admin.display(description="tasks (A, B)", ordering="task_a_id")
    def tasks(self, obj: ContextConflict) -> str:
        cells = [format_html('<div class="conflict-task task-{}">{}</div>', side, task_cell(
            task_id, getattr(obj, f"console_{side}_name", None),
            getattr(obj, f"console_{side}_pk", None)))
            for side, task_id in (("a", obj.task_a_id), ("b", obj.task_b_id)) if task_id]
        return format_html_join("", "{}", ((cell,) for cell in cells))

    detected = field_column("detected_at", when, "detected", ordering="detected_at")

    @admin.display(description="severity", ordering="severity")
    def severity_badge(self, obj: ContextConflict) -> str:
        colour = SEVERITY_COLOURS.get(obj.severity, "#666")
        return format_html('<span style="color:#fff;background:{};padding:2px 8px;'
                           'border-radius:8px;font-weight:bold">{}</span>', colour, obj.severity)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Conflicts come from detection or report_conflict, never from a blank form.
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        # The table is the audit trail of resolutions.
        return False

    def _bulk(self, request: HttpRequest, queryset, status: str) -> None:
        """Ignore or escalate each selected conflict on its own."""
        done, refused = 0, 0
        for conflict_id in queryset.values_list("pk", flat=True):
            try:
                self._step(request, str(conflict_id), status, notes=None)
                done += 1
            except OrchestratorError:
                refused += 1
        self.message_user(request, f"{done} conflict(s) {status}.")
        if refused:
            self.message_user(request, f"{refused} skipped (already closed or already "
                              f"{status}).", messages.WARNING)

    @staticmethod
    def _step(request: HttpRequest, conflict_id: str, status: str,
              notes: str | None) -> dict:
        """Ignore (a resolution) or take a step (investigating, escalated)."""
        user = request.user.get_username()
        if status == "ignored":
            resolution_body = {"action": "ignore", **({"notes": notes} if notes else {})}
            return run_tool(request, "resolve_conflict", {
                "conflictId": conflict_id, "resolution": resolution_body, "resolvedBy": user})
        return run_tool(request, "update_conflict_status", {
            "conflictId": conflict_id, "status": status, "by": user,
            **({"notes": notes} if notes else {})})

    @admin.action(description="Ignore selected conflicts")
    def bulk_ignore(self, request: HttpRequest, queryset) -> None:
        self._bulk(request, queryset, "ignored")

    @admin.action(description="Escalate selected conflicts")
    def bulk_escalate(self, request: HttpRequest, queryset) -> None:
        self._bulk(request, queryset, "escalated")

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context=None):
        conflict = object_or_404(ContextConflict, _uuid_or_none(object_id))
        if request.method == "POST":
            self._apply(request, conflict)
            return HttpResponseRedirect(request.path)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"{conflict.conflict_type}: {conflict.task_a_id}"
                     f"{' / ' + conflict.task_b_id if conflict.task_b_id else ''}",
            "conflict": conflict,
            "sides": console.sides(conflict),
            "evidence": json.dumps(conflict.evidence, indent=2, default=str),
            "resolution_json": json.dumps(conflict.resolution, indent=2, default=str)
            if conflict.resolution else "",
            "open": conflict.resolution_status in RESOLVABLE,
            "actions": ACTIONS,
            "steps": [s for s, sources in STEPS.items()
                      if conflict.resolution_status in sources],
            "resolved_value": request.POST.get("resolved_value")
            or console.resolved_value_template(conflict),
            "colour": SEVERITY_COLOURS.get(conflict.severity, "#666"),
            # Names and pages of the two tasks; the claims page shows who holds the files.
            "tasks": [t for t in (TaskContext.objects.filter(task_id=task_id).only(
                "pk", "task_id", "name").first() for task_id in
                (conflict.task_a_id, conflict.task_b_id) if task_id) if t is not None],
        }
        return TemplateResponse(request, "conflicts/conflict_detail.html", context)

    def _apply(self, request: HttpRequest, conflict: ContextConflict) -> None:
        user = request.user.get_username()
        action, notes = request.POST.get("action", ""), request.POST.get("notes") or None
        try:
            if action in STEPS:
                self._step(request, str(conflict.pk), action, notes)
                self.message_user(request, f"Conflict is now {action}.")
                return
            body = {"action": action}
            if notes:
                body["notes"] = notes
            if action in ("merge", "custom"):
                try:
                    body["resolvedValue"] = json.loads(request.POST.get("resolved_value") or "")
                except ValueError as exc:
                    raise OrchestratorError("E1644", f"resolved value is not JSON: {exc}") \
                        from None
            result = run_tool(request, "resolve_conflict", {
                "conflictId": str(conflict.pk), "resolution": body, "resolvedBy": user})
            self.message_user(request, f"Conflict {result['newStatus']} ({action}): "
                              + ("; ".join(result["effects"]) or "no side effects"))
        except OrchestratorError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)


def _uuid_or_none(value: str):
    try:
        return resolution.parse_conflict_id(value)
    except OrchestratorError:
        return None
