"""The rollback console: tasks, their versions and diffs, checkpoints, rollback actions.

Nothing here writes a task directly. Rollbacks go through the rollback_to tool (the same
service REST and MCP use) after a confirmation page; versions and checkpoints are
read-only, and tasks are shown, not edited, so every change stays versioned and cached.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    Func,
    IntegerField,
    OuterRef,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden, HttpResponseRedirect
from django.template import TemplateDoesNotExist
from django.template.loader import get_template
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode

from conflicts import selectors
from console.admin.base import (
    ProjectFilter,
    ProjectScopedAdmin,
    ReadOnlyAdmin,
    field_column,
    is_list_view,
    object_or_404,
    run_tool,
    session_agents,
    session_cell,
    task_cell,
    task_names,
)
from console.admin.orphans import OrphanedFilter, orphaned_task_ids
from console.admin.task_locks import can_release, task_lock
from console.projects import selected_project_ids
from console.services.states import LIVE_STATUSES
from console.services.work_now import last_session_at, task_live_panel
from console.templatetags.console_format import pretty_json, short_id, when
from contexts.models import (
    Checkpoint,
    CheckpointDetails,
    ContextVersion,
    GlobalContext,
    TaskContext,
)
from contexts.services import rollback
from contexts.services.checkpoints import snapshot_for_display
from foundation.core.errors import OrchestratorError
from sessions.models import ActiveSession

CONFLICT_HISTORY_TEMPLATE = "conflicts/_task_history.html"


def _active_task_id(project_id: str) -> str | None:
    """The active task of ``project_id`` (each project's global context names its own)."""
    return (GlobalContext.objects.filter(project_id=project_id)
            .values_list("active_task_id", flat=True).first())


def _conflict_history_template() -> str | None:
    """The conflicts app's partial for the task page, if that app provides it.

    Django's include has no "ignore missing", and the page must not break without it.
    """
    try:
        get_template(CONFLICT_HISTORY_TEMPLATE)
    except TemplateDoesNotExist:
        return None
    return CONFLICT_HISTORY_TEMPLATE


def _rollback_target(request: HttpRequest) -> dict[str, Any]:
    """The target of a rollback from the query string or form: E1612 if incomplete."""
    data = request.POST if request.method == "POST" else request.GET
    if data.get("type") == "version":
        try:
            return {"type": "version", "version": int(data.get("version", ""))}
        except ValueError:
            raise OrchestratorError("E1612", "version must be a number") from None
    if data.get("type") == "checkpoint" and data.get("checkpoint"):
        return {"type": "checkpoint", "checkpointId": data["checkpoint"]}
    raise OrchestratorError("E1612", "Choose a version or a checkpoint to roll back to")


def _confirmation_url(task: TaskContext, target: dict[str, Any]) -> str:
    """The rollback confirmation page of ``target`` (to show it again)."""
    query = ({"type": "version", "version": target["version"]} if target["type"] == "version"
             else {"type": "checkpoint", "checkpoint": target["checkpointId"]})
    return f"{reverse('admin:contexts_taskcontext_rollback', args=[task.pk])}?{urlencode(query)}"


@admin.register(TaskContext)
class TaskContextAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    # Names before ids; "on it now" is who works on the task (live, late and paused
    # sessions), where "active" only said whether the project's global context named it.
    list_display = ("task_label", "project", "status", "current_phase", "version",
                    "updated", "active", "orphaned")
    list_display_links = ("task_label",)
    # The page's fields in the model's order; JSON ones indented (``pretty_json``) instead
    # of Django's one-line dump, and "last session at" from live heartbeats too.
    fields = ("task_id", "project_id", "name", "description", "agent_type", "status",
              "priority", "current_phase", "iteration", "score", "locked_elements_shown",
              "immediate_context_shown", "key_files_shown", "technical_decisions_shown",
              "resume_prompt", "keywords_shown", "token_estimate", "created_at",
              "updated_at", "last_session", "version")
    readonly_fields = fields
    list_filter = (ProjectFilter, "status", "agent_type", OrphanedFilter)
    search_fields = ("task_id", "name")
    ordering = ("-updated_at",)
    change_form_template = "admin/contexts/taskcontext/change_form.html"

    def get_queryset(self, request: HttpRequest):
        # The markers come with the rows, computed for this request: the admin instance is
        # shared by every thread of the server, so it must keep no per-request state.
        # A task is active when its own project's global context names it.
        active = GlobalContext.objects.filter(project_id=OuterRef("project_id"),
                                              active_task_id=OuterRef("task_id"))
        # By keyword: the first positional parameter is task ids, and a project's id given
        # there matched no task, so with one project chosen no task was ever orphaned here
        # while the overview listed some (issue 38, item 5).
        orphaned = orphaned_task_ids(project_ids=selected_project_ids(request)
                                     if is_list_view(request) else None)
        live = ActiveSession.objects.filter(task_id=OuterRef("task_id"),
                                            status__in=LIVE_STATUSES)
        return super().get_queryset(request).annotate(
            is_active=Exists(active),
            live_sessions=Subquery(live.order_by().values("task_id").annotate(
                n=Count("pk")).values("n")[:1], output_field=IntegerField()),
            is_orphaned=Case(When(task_id__in=orphaned, then=Value(True)),
                             default=Value(False), output_field=BooleanField()))

    @admin.display(description="orphaned")
    def orphaned(self, obj: TaskContext) -> str:
        return format_html('<strong style="color:#ba2121">{}</strong>',
                           "⚠ orphaned") if obj.is_orphaned else ""

    @admin.display(description="on it now", ordering="live_sessions")
    def active(self, obj: TaskContext) -> str:
        live = getattr(obj, "live_sessions", None) or 0
        parts = []
        if live:
            parts.append(format_html('<span class="mark mark-live">{} session{}</span>', live,
                                     "" if live == 1 else "s"))
        if obj.is_active:
            parts.append(format_html('<span class="help" title="{}">project\'s active task'
                                     '</span>', "its project's global context names it"))
        return format_html_join(" ", "{}", ((p,) for p in parts)) if parts else "—"

    @admin.display(description="task", ordering="name")
    def task_label(self, obj: TaskContext) -> str:
        return format_html('<span class="name-then-id"><span class="label">{}</span>{}</span>',
                           obj.name, short_id(obj.task_id))

    updated = field_column("updated_at", when, "updated", ordering="updated_at")

    @admin.display(description="last session at")
    def last_session(self, obj: TaskContext) -> str:
        return when(last_session_at(obj))

    @admin.display(description="locked elements")
    def locked_elements_shown(self, obj: TaskContext) -> str:
        return pretty_json(obj.locked_elements) if obj.locked_elements else "—"

    immediate_context_shown = field_column("immediate_context", pretty_json,
                                           "immediate context")

    key_files_shown = field_column("key_files", pretty_json, "key files")

    technical_decisions_shown = field_column("technical_decisions", pretty_json,
                                             "technical decisions")

    keywords_shown = field_column("keywords", pretty_json, "keywords")

    def get_urls(self):
        return [path("<path:object_id>/rollback/",
                     self.admin_site.admin_view(self.rollback_view),
                     name="contexts_taskcontext_rollback"), *super().get_urls()]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict | None = None) -> HttpResponse:
        task = object_or_404(TaskContext, object_id)
        diff_version = request.GET.get("diff")
        diff, diff_error = None, None
        if diff_version:
            try:
                diff = rollback.preview(task, "version", version=int(diff_version))
            except (ValueError, OrchestratorError) as exc:
                diff_error = str(exc)
        context = {
            **(extra_context or {}),
            "task": task,
            "is_active": _active_task_id(task.project_id) == task.task_id,
            "versions": ContextVersion.objects.filter(task_id=task.task_id)
                                              .order_by("-version")[:100],
            "task_checkpoints": Checkpoint.objects.filter(
                included_tasks__contains=[task.task_id]).annotate(
                console_status=Coalesce(Subquery(CheckpointDetails.objects.filter(
                    checkpoint_id=OuterRef("checkpoint_id")).values("status")[:1]),
                    Value(CheckpointDetails.ACTIVE))).order_by("-created_at")[:50],
            "task_conflicts": selectors.conflicts_for_task(task.task_id),
            "task_lock": task_lock(task),
            "live": task_live_panel(task),
            "claims_url": f"{reverse('console_claims')}?{urlencode({'task': task.task_id})}",
            "conflict_history_template": _conflict_history_template(),
            "diff_version": diff_version,
            "diff": diff,
            "diff_error": diff_error,
        }
        return super().change_view(request, object_id, form_url, context)

    def rollback_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not self.has_view_permission(request):
            return HttpResponse(status=403)
        task = object_or_404(TaskContext, object_id)
        page = reverse("admin:contexts_taskcontext_change", args=[task.pk])
        try:
            target = _rollback_target(request)
            if request.method == "POST" and request.POST.get("release_lock"):
                if not can_release(request):
                    return HttpResponseForbidden("Releasing a task lock needs the permission "
                                                 "to change tasks")
                if not self._release_lock(request, task, request.POST["release_lock"]):
                    return HttpResponseRedirect(_confirmation_url(task, target))
            if request.method == "POST":
                result = run_tool(request, "rollback_to", {
                    "taskId": task.task_id, "target": target,
                    "createBackup": request.POST.get("create_backup") == "on",
                })
                backup = result.get("backupCheckpointId")
                self.message_user(request, f"Rolled back to {target['type']} "
                                  f"{result['rolledBackTo']['identifier']}; now version "
                                  f"{result['version']}" + (f"; backup {backup}" if backup
                                                            else ""), messages.SUCCESS)
                return HttpResponseRedirect(page)
            changes = rollback.preview(task, target["type"], version=target.get("version"),
                                       checkpoint_id=target.get("checkpointId"))
        except OrchestratorError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
            return HttpResponseRedirect(page)
        return TemplateResponse(request, "admin/contexts/taskcontext/rollback_confirm.html", {
            **self.admin_site.each_context(request),
            "opts": self.model._meta, "title": f"Roll back {task.task_id}?",
            "task": task, "target": target, "changes": changes, "change_url": page,
            "task_lock": task_lock(task), "can_release": can_release(request),
            "live": task_live_panel(task)})

    def _release_lock(self, request: HttpRequest, task: TaskContext, holder: str) -> bool:
        """Release the lock ``holder`` holds on ``task`` (release_task_lock as that session,
        audited as this person): False, with a message, when another session holds it now."""
        try:
            result = run_tool(request, "release_task_lock",
                              {"taskId": task.task_id, "sessionId": holder})
        except OrchestratorError as exc:
            self.message_user(request, f"Lock not released: {exc.code}: {exc.message}",
                              messages.ERROR)
            return False
        self.message_user(request, f"Released the lock of session {holder} on {task.task_id}"
                          if result["released"] else
                          f"The lock of session {holder} was already gone", messages.INFO)
        return True


@admin.register(ContextVersion)
class ContextVersionAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    # Names before ids: the task by name (linking to its page) and the session by its
    # agent, ids shortened and copyable under them; "v3" opens the version.
    list_display = ("task", "project", "version_label", "change_type", "change_summary",
                    "saved_by", "created")
    list_display_links = ("version_label",)
    list_filter = (ProjectFilter, "change_type")
    search_fields = ("task_id", "session_id")

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).annotate(
            **task_names("task_id", "console_task"),
            **session_agents("session_id", "console_agent"))

    @admin.display(description="task", ordering="task_id")
    def task(self, obj: ContextVersion) -> str:
        return task_cell(obj.task_id, getattr(obj, "console_task_name", None),
                         getattr(obj, "console_task_pk", None))

    @admin.display(description="version", ordering="version")
    def version_label(self, obj: ContextVersion) -> str:
        return f"v{obj.version}"

    @admin.display(description="saved by", ordering="session_id")
    def saved_by(self, obj: ContextVersion) -> str:
        if not obj.session_id:  # saved outside a session: whoever the trigger recorded
            return obj.created_by or "—"
        return session_cell(obj.session_id, getattr(obj, "console_agent", None)
                            or obj.created_by)

    created = field_column("created_at", when, "saved", ordering="created_at")


class CheckpointStatusFilter(admin.SimpleListFilter):
    """By status: active, archived, corrupt (the checkpoint check's)."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(s, s) for s in CheckpointDetails.STATUSES]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        value = self.value()
        return queryset.filter(console_status=value) if value else queryset


@admin.register(Checkpoint)
class CheckpointAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    """Checkpoints with what an operator needs to trust one: status (a corrupt one stands
    out in red, with the reason on its page), size, hash, tags and agent. Status and
    details come from checkpoint_details in the list's own query (subqueries)."""

    # Fits 1280 px: scope and type share a column; the included tasks and the hash are on
    # the checkpoint's own page.
    list_display = ("checkpoint_id", "project", "label", "status_flag", "kind", "task_id",
                    "size", "tag_list", "agent", "created_at")
    list_filter = (ProjectFilter, CheckpointStatusFilter, "scope", "checkpoint_type")
    search_fields = ("checkpoint_id", "label", "task_id")
    fields = ("checkpoint_id", "project", "label", "status_flag", "status_detail",
              "description", "checkpoint_type", "scope", "task_id", "included", "tag_list",
              "agent", "created_by", "session_id", "created_at", "size", "full_hash",
              "snapshot_pretty")
    readonly_fields = fields
    actions = ("archive", "make_active")

    def _set_archived(self, request: HttpRequest, queryset: Any, archived: bool) -> None:
        ids = list(queryset.values_list("checkpoint_id", flat=True))
        try:
            result = run_tool(request, "archive_checkpoints",
                              {"checkpointIds": ids, "archived": archived})
        except OrchestratorError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
            return
        kept = [i for i, status in result["statuses"].items() if status == "corrupt"]
        self.message_user(request, f"{len(ids) - len(kept)} checkpoint(s) "
                          f"{'archived' if archived else 'active again'}"
                          + (f"; {len(kept)} corrupt one(s) stay corrupt" if kept else ""))

    @admin.action(description="Archive (set aside, still restorable)")
    def archive(self, request: HttpRequest, queryset: Any) -> None:
        self._set_archived(request, queryset, True)

    @admin.action(description="Make active again")
    def make_active(self, request: HttpRequest, queryset: Any) -> None:
        self._set_archived(request, queryset, False)

    def get_queryset(self, request: HttpRequest) -> Any:
        details = CheckpointDetails.objects.filter(checkpoint_id=OuterRef("checkpoint_id"))
        return super().get_queryset(request).annotate(
            console_status=Coalesce(Subquery(details.values("status")[:1]),
                                    Value(CheckpointDetails.ACTIVE)),
            console_reason=Subquery(details.values("status_reason")[:1]),
            console_checked_at=Subquery(details.values("checked_at")[:1]),
            console_tags=Subquery(details.values("tags")[:1]),
            console_agent=Subquery(details.values("agent_id")[:1]),
            console_size=Func(Cast("snapshot", TextField()), function="octet_length",
                              output_field=IntegerField()),
            console_hash=KeyTextTransform("checksum", "snapshot"))

    @admin.display(description="status", ordering="console_status")
    def status_flag(self, obj: Checkpoint) -> str:
        if obj.console_status == CheckpointDetails.CORRUPT:
            return format_html('<strong style="color:#ba2121" title="{}">corrupt</strong>',
                               obj.console_reason or "")
        return obj.console_status

    @admin.display(description="last check")
    def status_detail(self, obj: Checkpoint) -> str:
        if obj.console_checked_at is None:
            return "not checked yet"
        reason = f": {obj.console_reason}" if obj.console_reason else ""
        return format_html("{}{}", when(obj.console_checked_at), reason)

    @admin.display(description="size (bytes)", ordering="console_size")
    def size(self, obj: Checkpoint) -> int:
        return obj.console_size

    @admin.display(description="kind", ordering="scope")
    def kind(self, obj: Checkpoint) -> str:
        return f"{obj.scope} · {obj.checkpoint_type}"

    @admin.display(description="hash")
    def full_hash(self, obj: Checkpoint) -> str:
        return obj.console_hash or "—"

    @admin.display(description="tags")
    def tag_list(self, obj: Checkpoint) -> str:
        return ", ".join(obj.console_tags or []) or "—"

    @admin.display(description="agent")
    def agent(self, obj: Checkpoint) -> str:
        return obj.console_agent or "—"

    @admin.display(description="included tasks")
    def included(self, obj: Checkpoint) -> str:
        return ", ".join(obj.included_tasks or []) or "—"

    @admin.display(description="snapshot")
    def snapshot_pretty(self, obj: Checkpoint) -> str:
        return pretty_json(snapshot_for_display(obj))
