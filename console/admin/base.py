"""What every admin page shares: unknown or malformed ids are a 404, never a 500, and
actions go through the tool registry (``run_tool``).

Django's admin answers a missing object on its change, delete and history pages with a
redirect to the index and a message (or a 403 when the page is not allowed at all), and a
custom view calling ``get_object_or_404`` with a malformed UUID raises ValidationError (a
500). The console answers all of them with the admin's own 404 page
(``console.views.not_found``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import ValidationError
from django.db import models
from django.http import Http404, HttpRequest, HttpResponse

from orchestrator.core.tools import ToolContext, call_tool

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


def run_tool(request: HttpRequest, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A console action: ``tool`` through the registry, as the signed-in person, so it is
    validated, traced, metered and audited as from any other door."""
    return call_tool(tool, arguments,
                     ToolContext("admin", actor=f"admin:{request.user.get_username()}"))
