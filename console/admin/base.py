"""What every admin page shares: unknown or malformed ids are a 404, never a 500, and
actions go through the tool registry (``run_tool``).

Django's admin answers a missing object on its change, delete and history pages with a
redirect to the index and a message (or a 403 when the page is not allowed at all), and a
custom view calling ``get_object_or_404`` with a malformed UUID raises ValidationError (a
500). The console answers all of them with the admin's own 404 page
(``console.views.not_found``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from console.projects import project_names, selected_project, selected_project_ids
from console.templatetags.console_format import NONE, short_id
from contexts.models import TaskContext
from foundation.core.models import Project
from foundation.core.tools import ToolContext, call_tool
from sessions.models import SessionDetail

M = TypeVar("M", bound=models.Model)


def object_or_404(model: type[M], object_id: Any) -> M:
    """The row with primary key ``object_id``; Http404 when absent or not a valid key."""
    try:
        found = model._default_manager.filter(pk=object_id).first()
    except (ValidationError, ValueError, TypeError):
        found = None
    if found is None:
        raise Http404(f"No {model._meta.verbose_name} with id {object_id!r}")
    return found


class MissingObjectIs404(admin.ModelAdmin):
    """Base of every ModelAdmin here: a missing object is a 404 page on its change, history
    and delete pages, checked before permissions (a read-only admin would otherwise answer
    403 on the delete page of a row that does not exist)."""

    def _require_object(self, request: HttpRequest, object_id: str) -> None:
        # get_object already maps a malformed id (ValidationError) to None.
        if self.get_object(request, unquote(object_id)) is None:
            raise Http404(f"No {self.opts.verbose_name} with id {object_id!r}")

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict | None = None) -> HttpResponse:
        self._require_object(request, object_id)
        return super().change_view(request, object_id, form_url, extra_context)

    def history_view(self, request: HttpRequest, object_id: str,
                     extra_context: dict | None = None) -> HttpResponse:
        self._require_object(request, object_id)
        return super().history_view(request, object_id, extra_context)

    def delete_view(self, request: HttpRequest, object_id: str,
                    extra_context: dict | None = None) -> HttpResponse:
        self._require_object(request, object_id)
        return super().delete_view(request, object_id, extra_context)


class ReadOnlyAdmin(MissingObjectIs404):
    """A page that shows rows and never changes them: they are written by the services
    (through the tools), so every change stays versioned, cached and audited."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def is_list_view(request: HttpRequest) -> bool:
    """A model's list page (its changelist, bulk actions included), not one object's page."""
    match = getattr(request, "resolver_match", None)
    return bool(match and match.url_name and match.url_name.endswith("_changelist"))


class ProjectFilter(admin.SimpleListFilter):
    """The sidebar's "by project", with the projects' names; offered only while the
    switcher shows all projects (a chosen project already narrows the list to itself)."""

    title = "project"
    # Django's own name for a filter on the field: addresses of the old field filter hold.
    parameter_name = "project_id__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        if selected_project(request) is not None:
            return []
        return list(project_names(request).items())

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(project_id=value) if value else queryset


class ProjectScopedAdmin(admin.ModelAdmin):
    """A model with a ``project_id``: its list page shows the switcher's project only (all
    of them for "All projects"); a single row's pages open whatever the switcher says.
    Rows carry their project's name (one subquery, no query per row) for the
    ``project`` column."""

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request).annotate(console_project_name=Subquery(
            Project.objects.filter(pk=OuterRef("project_id")).order_by().values("name")[:1]))
        project_ids = selected_project_ids(request) if is_list_view(request) else None
        return queryset if project_ids is None else queryset.filter(project_id__in=project_ids)

    @admin.display(description="project", ordering="project_id")
    def project(self, obj: Any) -> str:
        return getattr(obj, "console_project_name", None) or obj.project_id


def run_tool(request: HttpRequest, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A console action: ``tool`` through the registry, as the signed-in person, so it is
    validated, traced, metered and audited as from any other door."""
    return call_tool(tool, arguments,
                     ToolContext("admin", actor=f"admin:{request.user.get_username()}"))


# Names before ids (issue 38): a list names a task by its name and a session by its agent,
# with the id under it shortened (whole on hover, one click to copy). The names come with
# the list's own query (subqueries), never one query per row.

def task_names(field: str, prefix: str) -> dict[str, Subquery]:
    """Annotations ``<prefix>_name`` and ``<prefix>_pk`` of the task the column ``field``
    names (None when no task has that id)."""
    tasks = TaskContext.objects.filter(task_id=OuterRef(field)).order_by()
    return {f"{prefix}_name": Subquery(tasks.values("name")[:1]),
            f"{prefix}_pk": Subquery(tasks.values("pk")[:1])}


def session_agents(field: str, name: str) -> dict[str, Subquery]:
    """Annotation ``name``: the agent running the session the column ``field`` names."""
    return {name: Subquery(SessionDetail.objects.filter(session_id=OuterRef(field))
                           .order_by().values("agent_id")[:1])}


def name_then_id(label: Any, ident: Any) -> str:
    """A name on its line, the shortened, copyable id under it."""
    return format_html('<span class="name-then-id"><span class="label">{}</span>{}</span>',
                       label, short_id(ident))


def task_cell(task_id: str | None, name: str | None, pk: Any) -> str:
    """A task's name linking to its page, its id under it; "—" for no task."""
    if not task_id:
        return NONE
    label = format_html('<a href="{}">{}</a>', reverse("admin:contexts_taskcontext_change",
                                                       args=[pk]), name) if pk else (name or "")
    return name_then_id(label, task_id)


def session_cell(session_id: str | None, agent: str | None) -> str:
    """A session by its agent's name, its id under it; "—" for no session."""
    if not session_id:
        return NONE
    return name_then_id(agent or "unnamed agent", session_id)


def field_column(field: str, render: Callable[[Any], Any], description: str,
                 ordering: str | None = None) -> Callable[[Any, Any], Any]:
    """An admin column (for ``list_display`` or ``readonly_fields``): the object's ``field``
    as ``render`` shows it, under ``description``, sortable by ``ordering`` when given."""
    def column(admin_view: Any, obj: Any) -> Any:
        return render(getattr(obj, field))
    return admin.display(description=description, ordering=ordering)(column)
